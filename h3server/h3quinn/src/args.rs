//! Command line: the options both servers take (h3replay::cli::Common,
//! flattened; the same as h3server's) and quinn's own; every option
//! documented with its default. h3server's quiche options (--pacing, --gso,
//! --max-ack-delay-ms, --ack-delay-exponent, --early-data) are refused with
//! clap's usage error: quinn paces always and does not let the ACK
//! parameters be changed (config.rs, docs/h3quinn.md).

use std::sync::LazyLock;

use clap::{Parser, ValueEnum};
pub use h3replay::cli::Common;

/// The end of --help.
static AFTER_HELP: LazyLock<String> =
    LazyLock::new(|| h3replay::cli::after_help("  QLOGDIR        default for --qlog-dir"));

/// Second HTTP/3 replay server (quinn + h3): serves one testbed recording
/// from memory, as h3server does over quiche.
#[derive(Parser, Debug, Clone)]
#[command(name = "h3quinn", version = crate::VERSION, about, long_about = None,
          after_help = AFTER_HELP.as_str())]
pub struct Args {
    #[command(flatten)]
    pub common: Common,

    // quinn's own options, under "quinn options" in --help.
    /// Congestion control: quinn's Cubic, NewReno or BBR (quinn's BBR is
    /// its own BBRv1-style controller). Defaults to cubic.
    #[arg(long, help_heading = "quinn options", value_enum, default_value_t = Cc::Cubic)]
    pub cc: Cc,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let argv = h3replay::cli::with_required("h3quinn", extra);
        Args::try_parse_from(argv)
    }

    #[test]
    fn defaults_are_h3servers() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.cc, Cc::Cubic);
        // the shared options (h3replay::cli) are flattened in
        assert_eq!(a.common.max_udp_payload, 1350);
    }

    #[test]
    fn congestion_control_and_shared_options() {
        let a = parse(&["--cc", "bbr", "--log", "debug", "--alt-svc", "off"]).unwrap();
        assert_eq!((a.cc, a.cc.name()), (Cc::Bbr, "bbr"));
        assert_eq!(a.common.log_level, "debug");
        assert!(!a.common.alt_svc.on());
        assert_eq!(Cc::Cubic.name(), "cubic");
        assert_eq!(Cc::Reno.name(), "reno");
    }

    #[test]
    fn rejects_bad_values_and_h3server_only_options() {
        assert!(parse(&["--cc", "bbr2"]).is_err());
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
