//! The QUIC configuration every connection is accepted with: TLS 1.3 over
//! rustls (ring), HTTP/3's ALPN, and the transport settings of h3server's
//! defaults (h3server/h3server/src/config.rs) where quinn lets them be set.
//!
//! Parity with h3server, and what differs:
//! - idle timeout 30 s; 128 bidirectional and 16 unidirectional streams the
//!   client may open; connection window 16 MiB, request-stream window 4 MiB
//!   (quinn has one stream window for both stream kinds; h3server gives
//!   unidirectional streams 1 MiB).
//! - max_ack_delay 25 ms and ack_delay_exponent 3: quinn's defaults, which
//!   quinn does not let be changed (h3server's defaults too).
//! - UDP payload fixed at --max-udp-payload: the initial and minimum MTU
//!   both set to it, path MTU discovery off.
//! - GSO off (`enable_segmentation_offload(false)`), as h3server's default.
//! - Pacing: quinn's own pacer, always on (h3server paces by default too,
//!   with its own pacer for CUBIC/Reno).
//! - Congestion control: quinn's Cubic, NewReno or BBR with an initial
//!   window of N x the payload.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{IdleTimeout, TransportConfig, VarInt};

use crate::args::Cc;
use h3replay::Fatal;

/// Idle timeout advertised to clients (h3server: IDLE_TIMEOUT_MS).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Concurrent request streams a client may open (h3server: MAX_STREAMS_BIDI).
pub const MAX_STREAMS_BIDI: u32 = 128;
/// Unidirectional streams a client may open (h3server: MAX_STREAMS_UNI).
pub const MAX_STREAMS_UNI: u32 = 16;
/// Connection-level flow-control window, bytes (h3server: MAX_DATA).
pub const MAX_DATA: u32 = 16 << 20;
/// Flow-control window of each stream, bytes (h3server:
/// MAX_STREAM_DATA_BIDI).
pub const MAX_STREAM_DATA: u32 = 4 << 20;

/// The transport settings of every connection.
pub fn transport(cc: Cc, initial_cwnd_packets: u32, payload: u16) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.max_idle_timeout(Some(
        IdleTimeout::try_from(IDLE_TIMEOUT).expect("30 s is a valid idle timeout"),
    ));
    t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS_BIDI));
    t.max_concurrent_uni_streams(VarInt::from_u32(MAX_STREAMS_UNI));
    t.receive_window(VarInt::from_u32(MAX_DATA));
    t.stream_receive_window(VarInt::from_u32(MAX_STREAM_DATA));
    // What may be buffered unacknowledged towards the client: as much as
    // the client's connection window lets h3server hand quiche.
    t.send_window(u64::from(MAX_DATA));
    t.initial_mtu(payload);
    t.min_mtu(payload);
    t.mtu_discovery_config(None);
    t.enable_segmentation_offload(false);
    let window = initial_window(initial_cwnd_packets, payload);
    match cc {
        Cc::Cubic => {
            let mut c = CubicConfig::default();
            c.initial_window(window);
            t.congestion_controller_factory(Arc::new(c));
        }
        Cc::Reno => {
            let mut c = NewRenoConfig::default();
            c.initial_window(window);
            t.congestion_controller_factory(Arc::new(c));
        }
        Cc::Bbr => {
            let mut c = BbrConfig::default();
            c.initial_window(window);
            t.congestion_controller_factory(Arc::new(c));
        }
    }
    t
}

/// The initial congestion window, bytes: N packets of the fixed payload.
pub fn initial_window(packets: u32, payload: u16) -> u64 {
    u64::from(packets) * u64::from(payload)
}

/// TLS 1.3 (rustls, ring) with the certificate chain and key, ALPN h3.
/// Fatal::Input naming the file when either cannot be used.
pub fn tls(cert: &Path, key: &Path) -> Result<QuicServerConfig, Fatal> {
    let bad_cert = |why: String| {
        Fatal::Input(format!(
            "{}: not a usable PEM certificate chain ({why})",
            cert.display()
        ))
    };
    let bad_key = |why: String| {
        Fatal::Input(format!(
            "{}: not a usable PEM private key ({why})",
            key.display()
        ))
    };
    let pem = std::fs::read(cert).map_err(|e| bad_cert(e.to_string()))?;
    let chain = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad_cert(e.to_string()))?;
    if chain.is_empty() {
        return Err(bad_cert("no CERTIFICATE block".into()));
    }
    let pem = std::fs::read(key).map_err(|e| bad_key(e.to_string()))?;
    let private = rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| bad_key(e.to_string()))?
        .ok_or_else(|| bad_key("no PRIVATE KEY block".into()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Fatal::Runtime(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| bad_key(format!("does not fit the certificate: {e}")))?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    QuicServerConfig::try_from(tls).map_err(|e| Fatal::Runtime(format!("TLS for QUIC: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_packets_times_payload() {
        assert_eq!(initial_window(10, 1350), 13_500);
        assert_eq!(initial_window(32, 1200), 38_400);
    }

    #[test]
    fn unusable_files_are_bad_input_naming_them() {
        let dir = std::env::temp_dir().join(format!("h3quinn-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, b"").unwrap();
        let missing = dir.join("missing.pem");
        let name = empty.display().to_string();
        match tls(&empty, &empty) {
            Err(Fatal::Input(m)) => {
                assert!(
                    m.starts_with(&name) && m.contains("certificate chain"),
                    "{m}"
                )
            }
            other => panic!("{:?}", other.err()),
        }
        match tls(&missing, &empty) {
            Err(Fatal::Input(m)) => assert!(m.starts_with(&missing.display().to_string()), "{m}"),
            other => panic!("{:?}", other.err()),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
