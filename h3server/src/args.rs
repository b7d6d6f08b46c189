//! Command line: every option documented with its default.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

const AFTER_HELP: &str = "\
Environment:
  SSLKEYLOGFILE  append TLS secrets to this file (NSS key log format)
  QLOGDIR        default for --qlog-dir

Matching: same scheme, host (port ignored, case-insensitive), method and path;
the longest common prefix of the full target wins (an identical target beats
an extension of it), ties go to the earliest exchange; no match: 404, a miss.

Exit status: 0 after SIGTERM/SIGINT (connections closed, summary written),
2 for bad input (recording, certificate, key; one line naming the file and
key), 1 for anything else (e.g. an address that cannot be bound).";

/// HTTP/3 replay server: serves one testbed recording from memory over QUIC.
///
/// Requests are matched to recorded exchanges by Mahimahi's rule (same
/// scheme, host, method and path; the longest common prefix of the full
/// target wins, ties go to the earliest exchange); no match is a 404,
/// counted as a miss.
#[derive(Parser, Debug, Clone)]
#[command(name = "h3server", version = crate::VERSION, about, long_about = None,
          after_help = AFTER_HELP)]
pub struct Args {
    /// Recording folder (manifest.json and bodies/), validated against
    /// schemas/recording.schema.json at start. Required.
    #[arg(long, value_name = "DIR")]
    pub recording: PathBuf,

    /// UDP address to serve on; repeat for every address. One socket per
    /// address, so replies leave from the address the client contacted
    /// (give concrete addresses, not 0.0.0.0). At least one is required.
    #[arg(long, value_name = "IP:PORT", required = true)]
    pub listen: Vec<SocketAddr>,

    /// Certificate chain (PEM), leaf first. Required.
    #[arg(long, value_name = "PEM")]
    pub cert: PathBuf,

    /// Private key of the leaf certificate (PEM). Required.
    #[arg(long, value_name = "PEM")]
    pub key: PathBuf,

    /// Congestion control. Defaults to cubic. `bbr` is quiche's BBRv1 (the
    /// generation of Linux's `bbr`), `bbr2` quiche's BBRv2 (gcongestion); both
    /// pace with quiche's pacer.
    #[arg(long, value_enum, default_value_t = Cc::Cubic)]
    pub cc: Cc,

    /// Initial congestion window in packets. Defaults to 10 (quiche's
    /// default).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub initial_cwnd_packets: u32,

    /// Pace outgoing packets in user space (a timer holds each datagram until
    /// its release time), or send them back to back. Defaults to on.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub pacing: OnOff,

    /// Maximum UDP payload size this server sends, in bytes. Defaults to 1350.
    #[arg(long, value_name = "BYTES", default_value_t = 1350,
          value_parser = clap::value_parser!(u16).range(1200..=65527))]
    pub max_udp_payload: u16,

    /// Generic segmentation offload: datagrams that leave together for the
    /// same destination go down in one sendmsg with UDP_SEGMENT. Defaults to
    /// off.
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub gso: OnOff,

    /// The max_ack_delay transport parameter this server sends, in ms: the
    /// longest it says it delays an acknowledgement, which the client adds to
    /// its probe timeout (RFC 9000: below 2^14; quiche acknowledges at its
    /// next send whatever it says). Defaults to 25 (RFC 9000's).
    #[arg(long, value_name = "MS", default_value_t = 25,
          value_parser = clap::value_parser!(u64).range(0..=16_383))]
    pub max_ack_delay_ms: u64,

    /// The ack_delay_exponent transport parameter this server sends: the
    /// scale of the ACK Delay field of its ACK frames (RFC 9000: at most 20).
    /// Defaults to 3 (RFC 9000's).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(0..=20))]
    pub ack_delay_exponent: u64,

    /// Announce on every response that the origin is served over HTTP/3
    /// here: `alt-svc: h3=":PORT"; ma=86400`, PORT being the port the request
    /// came in on (any alt-svc in the recording is dropped). A browser
    /// counts an origin with a known QUIC alternative service as one that
    /// handles request priorities, as it does an origin it reached over
    /// HTTP/2. Defaults to on.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub alt_svc: OnOff,

    /// Accept 0-RTT: a client resuming a session with a ticket of this
    /// server may send requests in its first flight, and they are answered
    /// before the handshake completes. Defaults to off.
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub early_data: OnOff,

    /// Write one qlog file per connection into this folder
    /// (<trace id>.sqlog). Defaults to $QLOGDIR when set, otherwise no qlog.
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    pub qlog_dir: Option<PathBuf>,

    /// Keep a JSON summary (requests, misses, bytes, connections) in this
    /// file, rewritten atomically after every completed request (at most
    /// every 50 ms) and at exit. Defaults to none.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Log filter for stderr, env_logger syntax (`info`, `debug`,
    /// `h3server=debug,quiche=info`, ...). Every line starts with the
    /// connection's trace id. Defaults to info.
    #[arg(long, value_name = "FILTER", default_value = "info")]
    pub log_level: String,

    /// TLS secrets are appended to $SSLKEYLOGFILE when it is set (NSS key
    /// log format), for Wireshark. Not an option: read from the environment.
    /// Defaults to none (no key log).
    #[arg(skip = std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from))]
    pub keylog_file: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    Cubic,
    Reno,
    /// BBRv1.
    Bbr,
    /// BBRv2 (quiche's gcongestion implementation).
    Bbr2,
}

impl Cc {
    /// quiche's name of the algorithm this option selects (its string form,
    /// which names the generation), as the summary reports it.
    pub fn quiche_name(self) -> &'static str {
        match self {
            Cc::Cubic => "cubic",
            Cc::Reno => "reno",
            Cc::Bbr => "bbr",
            Cc::Bbr2 => "bbr2_gcongestion",
        }
    }

    pub fn algorithm(self) -> quiche::CongestionControlAlgorithm {
        match self {
            Cc::Cubic => quiche::CongestionControlAlgorithm::CUBIC,
            Cc::Reno => quiche::CongestionControlAlgorithm::Reno,
            Cc::Bbr => quiche::CongestionControlAlgorithm::BBR,
            Cc::Bbr2 => quiche::CongestionControlAlgorithm::Bbr2Gcongestion,
        }
    }

    /// BBR comes with quiche's pacer (`SendInfo::at`). CUBIC and Reno are paced
    /// by the server's own pacer (crate::pacer), quiche's left off for them.
    pub fn paced_by_quiche(self) -> bool {
        matches!(self, Cc::Bbr | Cc::Bbr2)
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
            "h3server",
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
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.cc, Cc::Cubic);
        assert_eq!(a.initial_cwnd_packets, 10);
        assert_eq!(a.pacing, OnOff::On);
        assert_eq!(a.max_udp_payload, 1350);
        assert_eq!(a.gso, OnOff::Off);
        assert_eq!(a.alt_svc, OnOff::On);
        assert_eq!((a.max_ack_delay_ms, a.ack_delay_exponent), (25, 3));
        assert_eq!(a.early_data, OnOff::Off);
        assert_eq!(a.log_level, "info");
        assert!(a.summary.is_none());
    }

    #[test]
    fn protocol_settings() {
        let a = parse(&[
            "--cc",
            "bbr2",
            "--initial-cwnd-packets",
            "32",
            "--pacing",
            "off",
            "--gso",
            "on",
            "--listen",
            "10.0.0.1:443",
            "--max-udp-payload",
            "1252",
            "--alt-svc",
            "off",
            "--max-ack-delay-ms",
            "5",
            "--ack-delay-exponent",
            "8",
        ])
        .unwrap();
        assert_eq!((a.max_ack_delay_ms, a.ack_delay_exponent), (5, 8));
        assert_eq!(a.cc, Cc::Bbr2);
        assert_eq!(a.initial_cwnd_packets, 32);
        assert!(!a.pacing.on());
        assert!(a.gso.on());
        assert_eq!(a.listen.len(), 2);
        assert_eq!(a.max_udp_payload, 1252);
        assert_eq!(a.alt_svc, OnOff::Off);
    }

    #[test]
    fn cc_names_are_quiches_and_bbr_is_v1() {
        use quiche::CongestionControlAlgorithm as A;
        use std::str::FromStr;
        let all = [Cc::Cubic, Cc::Reno, Cc::Bbr, Cc::Bbr2];
        for cc in all {
            // The summary's name is the one quiche parses to the algorithm selected.
            assert_eq!(
                A::from_str(cc.quiche_name()).unwrap(),
                cc.algorithm(),
                "{cc:?}"
            );
        }
        assert_eq!(parse(&["--cc", "bbr"]).unwrap().cc.algorithm(), A::BBR);
        assert_eq!(
            parse(&["--cc", "bbr2"]).unwrap().cc.algorithm(),
            A::Bbr2Gcongestion
        );
        assert_eq!(Cc::Bbr.quiche_name(), "bbr");
        assert_eq!(Cc::Bbr2.quiche_name(), "bbr2_gcongestion");
        assert_eq!(Cc::Cubic.quiche_name(), "cubic");
        assert!(Cc::Bbr.paced_by_quiche() && Cc::Bbr2.paced_by_quiche());
        assert!(!Cc::Cubic.paced_by_quiche() && !Cc::Reno.paced_by_quiche());
    }

    #[test]
    fn rejects_bad_values() {
        assert!(parse(&["--cc", "vegas"]).is_err());
        assert!(parse(&["--max-udp-payload", "100"]).is_err());
        assert!(parse(&["--initial-cwnd-packets", "0"]).is_err());
        assert!(parse(&["--max-ack-delay-ms", "16384"]).is_err());
        assert!(parse(&["--max-ack-delay-ms", "-1"]).is_err());
        assert!(parse(&["--ack-delay-exponent", "21"]).is_err());
        assert!(Args::try_parse_from(["h3server", "--recording", "r"]).is_err());
    }
}
