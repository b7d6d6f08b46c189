"""Reproducible web page-load experiments over TCP+TLS+HTTP/2 and QUIC/HTTP/3."""

__version__ = "0.1.0"
