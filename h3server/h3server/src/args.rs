//! Command line: the options both servers take (h3replay::cli::Common,
//! flattened) and quiche's own; every option documented with its default.

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::{Parser, ValueEnum};
pub use h3replay::cli::{Common, OnOff};

/// The end of --help.
static AFTER_HELP: LazyLock<String> = LazyLock::new(|| {
    h3replay::cli::after_help(
        "  SSLKEYLOGFILE  append TLS secrets to this file (NSS key log format)
  QLOGDIR        default for --qlog-dir

Log lines: `<trace id> <LEVEL> <message>`, the connection's trace id (the
qlog file's name) or `server` for lines about no connection.",
    )
});

/// HTTP/3 replay server: serves one testbed recording from memory over QUIC.
///
/// Requests are matched to recorded exchanges by Mahimahi's rule (same
/// scheme, host, method and path; the longest common prefix of the full
/// target wins, ties go to the earliest exchange); no match is a 404,
/// counted as a miss.
#[derive(Parser, Debug, Clone)]
#[command(name = "h3server", version = crate::VERSION, about, long_about = None,
          after_help = AFTER_HELP.as_str())]
pub struct Args {
    #[command(flatten)]
    pub common: Common,

    // quiche's own options, under "quiche options" in --help.
    /// Congestion control. Defaults to cubic. `bbr` is quiche's BBRv1 (the
    /// generation of Linux's `bbr`), `bbr2` quiche's BBRv2 (gcongestion); both
    /// pace with quiche's pacer.
    #[arg(long, help_heading = "quiche options", value_enum, default_value_t = Cc::Cubic)]
    pub cc: Cc,

    /// Pace outgoing packets in user space (a timer holds each datagram until
    /// its release time), or send them back to back. Defaults to on.
    #[arg(long, help_heading = "quiche options", value_enum, default_value_t = OnOff::On)]
    pub pacing: OnOff,

    /// Generic segmentation offload: datagrams that leave together for the
    /// same destination go down in one sendmsg with UDP_SEGMENT. Defaults to
    /// off.
    #[arg(long, help_heading = "quiche options", value_enum, default_value_t = OnOff::Off)]
    pub gso: OnOff,

    /// The max_ack_delay transport parameter this server sends, in ms: the
    /// longest it says it delays an acknowledgement, which the client adds to
    /// its probe timeout (RFC 9000: below 2^14; quiche acknowledges at its
    /// next send whatever it says). Defaults to 25 (RFC 9000's).
    #[arg(long, help_heading = "quiche options", value_name = "MS", default_value_t = 25,
          value_parser = clap::value_parser!(u64).range(0..=16_383))]
    pub max_ack_delay_ms: u64,

    /// The ack_delay_exponent transport parameter this server sends: the
    /// scale of the ACK Delay field of its ACK frames (RFC 9000: at most 20).
    /// Defaults to 3 (RFC 9000's).
    #[arg(long, help_heading = "quiche options", value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(0..=20))]
    pub ack_delay_exponent: u64,

    /// Accept 0-RTT: a client resuming a session with a ticket of this
    /// server may send requests in its first flight, and they are answered
    /// before the handshake completes. Defaults to off.
    #[arg(long, help_heading = "quiche options", value_enum, default_value_t = OnOff::Off)]
    pub early_data: OnOff,

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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let argv = h3replay::cli::with_required("h3server", extra);
        Args::try_parse_from(argv)
    }

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.cc, Cc::Cubic);
        assert_eq!(a.pacing, OnOff::On);
        assert_eq!(a.gso, OnOff::Off);
        assert_eq!((a.max_ack_delay_ms, a.ack_delay_exponent), (25, 3));
        assert_eq!(a.early_data, OnOff::Off);
        // the shared options (h3replay::cli) are flattened in
        assert_eq!(a.common.max_udp_payload, 1350);
    }

    #[test]
    fn protocol_settings() {
        let a = parse(&[
            "--cc",
            "bbr2",
            "--pacing",
            "off",
            "--gso",
            "on",
            "--max-ack-delay-ms",
            "5",
            "--ack-delay-exponent",
            "8",
            "--early-data",
            "on",
            "--initial-cwnd-packets",
            "32",
        ])
        .unwrap();
        assert_eq!((a.max_ack_delay_ms, a.ack_delay_exponent), (5, 8));
        assert_eq!(a.cc, Cc::Bbr2);
        assert!(!a.pacing.on() && a.gso.on() && a.early_data.on());
        assert_eq!(a.common.initial_cwnd_packets, 32);
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
        assert!(parse(&["--pacing", "maybe"]).is_err());
        assert!(parse(&["--max-ack-delay-ms", "16384"]).is_err());
        assert!(parse(&["--max-ack-delay-ms", "-1"]).is_err());
        assert!(parse(&["--ack-delay-exponent", "21"]).is_err());
        assert!(Args::try_parse_from(["h3server", "--recording", "r"]).is_err());
    }
}
