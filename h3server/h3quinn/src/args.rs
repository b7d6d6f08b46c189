//! Command line: h3server's options (h3server/src/args.rs), same spelling
//! and meaning, for those quinn can honour; every option documented with
//! its default.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

const AFTER_HELP: &str = "\
Environment:
  QLOGDIR        default for --qlog-dir

Matching: the same as h3server's (the shared library, matching.rs): same
scheme, host (port ignored, case-insensitive), method and path; the longest
common prefix of the full target wins, ties go to the earliest exchange; no
match: 404, a miss.

Exit status: 0 after SIGTERM/SIGINT (connections closed, summary written),
2 for bad input (recording, certificate, key; one line naming the file and
what was expected), 1 for anything else (e.g. an address that cannot be
bound).";

/// Second HTTP/3 replay server (quinn + h3): serves one testbed recording
/// from memory, as h3server does over quiche.
#[derive(Parser, Debug, Clone)]
#[command(name = "h3quinn", version = crate::VERSION, about, long_about = None,
          after_help = AFTER_HELP)]
pub struct Args {
    /// Recording folder (manifest.json and bodies/), validated against
    /// schemas/recording.schema.json at start. Required.
    #[arg(long, value_name = "DIR")]
    pub recording: PathBuf,

    /// UDP address to serve on; repeat for every address. One endpoint (and
    /// socket) per address, so replies leave from the address the client
    /// contacted. At least one is required.
    #[arg(long, value_name = "IP:PORT", required = true)]
    pub listen: Vec<SocketAddr>,

    /// Certificate chain (PEM), leaf first. Required.
    #[arg(long, value_name = "PEM")]
    pub cert: PathBuf,

    /// Private key of the leaf certificate (PEM: PKCS#8, SEC1 or PKCS#1).
    /// Required.
    #[arg(long, value_name = "PEM")]
    pub key: PathBuf,

    /// Congestion control: quinn's Cubic, NewReno or BBR (quinn's BBR is
    /// its own BBRv1-style controller). Defaults to cubic.
    #[arg(long, value_enum, default_value_t = Cc::Cubic)]
    pub cc: Cc,

    /// Initial congestion window in packets (window = N x --max-udp-payload).
    /// Defaults to 10.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub initial_cwnd_packets: u32,

    /// UDP payload size this server sends, in bytes, fixed for the
    /// connection's life (path MTU discovery off). Defaults to 1350.
    #[arg(long, value_name = "BYTES", default_value_t = 1350,
          value_parser = clap::value_parser!(u16).range(1200..=65527))]
    pub max_udp_payload: u16,

    /// Announce on every response that the origin is served over HTTP/3
    /// here: `alt-svc: h3=":PORT"; ma=86400`, PORT being the port the request
    /// came in on (any alt-svc in the recording is dropped). Defaults to on.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub alt_svc: OnOff,

    /// Write one qlog file per connection into this folder
    /// (<original destination connection ID>.sqlog, quinn-proto's qlog).
    /// Defaults to $QLOGDIR when set, otherwise no qlog.
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    pub qlog_dir: Option<PathBuf>,

    /// Keep a JSON summary (requests, misses, bytes, connections) in this
    /// file, h3server's format, rewritten atomically after a change (at most
    /// every 50 ms) and at exit. Defaults to none.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Log filter for stderr, env_logger syntax (`info`, `debug`,
    /// `h3quinn=debug,quinn=info`, ...). Defaults to info.
    #[arg(long, alias = "log", value_name = "FILTER", default_value = "info")]
    pub log_level: String,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    Cubic,
    Reno,
    Bbr,
}

impl Cc {
    /// The name the summary reports (h3server's names for the same families).
    pub fn name(self) -> &'static str {
        match self {
            Cc::Cubic => "cubic",
            Cc::Reno => "reno",
            Cc::Bbr => "bbr",
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn on(self) -> bool {
        self == OnOff::On
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let mut argv = vec![
            "h3quinn",
            "--recording",
            "r",
            "--listen",
            "127.0.0.1:4433",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
        ];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv)
    }

    #[test]
    fn defaults_are_h3servers() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.cc, Cc::Cubic);
        assert_eq!(a.initial_cwnd_packets, 10);
        assert_eq!(a.max_udp_payload, 1350);
        assert_eq!(a.alt_svc, OnOff::On);
        assert_eq!(a.log_level, "info");
        assert!(a.summary.is_none());
    }

    #[test]
    fn settings_and_log_alias() {
        let a = parse(&[
            "--cc",
            "bbr",
            "--initial-cwnd-packets",
            "32",
            "--listen",
            "10.0.0.1:443",
            "--max-udp-payload",
            "1252",
            "--alt-svc",
            "off",
            "--log",
            "debug",
            "--summary",
            "s.json",
        ])
        .unwrap();
        assert_eq!((a.cc, a.cc.name()), (Cc::Bbr, "bbr"));
        assert_eq!(a.initial_cwnd_packets, 32);
        assert_eq!(a.listen.len(), 2);
        assert_eq!(a.max_udp_payload, 1252);
        assert!(!a.alt_svc.on());
        assert_eq!(a.log_level, "debug");
        assert_eq!(parse(&["--log-level", "warn"]).unwrap().log_level, "warn");
        assert_eq!(Cc::Cubic.name(), "cubic");
        assert_eq!(Cc::Reno.name(), "reno");
    }

    #[test]
    fn rejects_bad_values_and_h3server_only_options() {
        assert!(parse(&["--cc", "bbr2"]).is_err());
        assert!(parse(&["--max-udp-payload", "100"]).is_err());
        assert!(parse(&["--initial-cwnd-packets", "0"]).is_err());
        for opt in [
            "--pacing",
            "--gso",
            "--early-data",
            "--max-ack-delay-ms",
            "--ack-delay-exponent",
        ] {
            let e = parse(&[opt, "on"]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{opt}");
        }
        assert!(Args::try_parse_from(["h3quinn", "--recording", "r"]).is_err());
    }
}
