//! The options both servers take, defined once: each server's clap struct
//! flattens `Common` (`#[command(flatten)]`) beside the options of its own
//! QUIC stack (congestion control, and h3server's pacing, GSO, ACK
//! parameters and 0-RTT), so the shared ones have one spelling, range,
//! default and help text.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::fatal::Fatal;

/// The options of both servers.
#[derive(Args, Debug, Clone)]
pub struct Common {
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

    /// Private key of the leaf certificate (PEM: PKCS#8, SEC1 or PKCS#1).
    /// Required.
    #[arg(long, value_name = "PEM")]
    pub key: PathBuf,

    /// Initial congestion window in packets (window = N x --max-udp-payload).
    /// Defaults to 10.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub initial_cwnd_packets: u32,

    /// Largest UDP payload this server sends, in bytes (no path MTU
    /// discovery). Defaults to 1350.
    #[arg(long, value_name = "BYTES", default_value_t = 1350,
          value_parser = clap::value_parser!(u16).range(1200..=65527))]
    pub max_udp_payload: u16,

    /// Announce on every response that the origin is served over HTTP/3
    /// here: `alt-svc: h3=":PORT"; ma=86400`, PORT being the port the request
    /// came in on (any alt-svc in the recording is dropped). A browser
    /// counts an origin with a known QUIC alternative service as one that
    /// handles request priorities, as it does an origin it reached over
    /// HTTP/2. Defaults to on.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub alt_svc: OnOff,

    /// Write one qlog file per connection into this folder, named after the
    /// connection ID its log lines start with (<id>.sqlog). Defaults to
    /// $QLOGDIR when set, otherwise no qlog.
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    pub qlog_dir: Option<PathBuf>,

    /// Keep a JSON summary (requests, misses, bytes, connections) in this
    /// file, rewritten atomically after a change (at most every 50 ms) and
    /// at exit. Defaults to none.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,

    /// Log filter for stderr, env_logger syntax (`info`, `debug`,
    /// `h3server=debug,quiche=info`, `h3quinn=debug,quinn=info`, ...).
    /// Defaults to info.
    #[arg(long, alias = "log", value_name = "FILTER", default_value = "info")]
    pub log_level: String,
}

impl Common {
    /// Create the qlog folder if one is asked for; Fatal::Input naming it
    /// when it cannot be.
    pub fn create_qlog_dir(&self) -> Result<(), Fatal> {
        let Some(dir) = &self.qlog_dir else {
            return Ok(());
        };
        std::fs::create_dir_all(dir).map_err(|e| {
            Fatal::Input(format!(
                "{}: --qlog-dir cannot be created: {e}",
                dir.display()
            ))
        })
    }
}

/// The value of a switch: `on` or `off`.
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

/// The command line `PROGRAM` + the required options (placeholder values) +
/// `extra`: for tests of a server's parsing.
pub fn with_required<'a>(program: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let required = [
        "--recording",
        "r",
        "--listen",
        "127.0.0.1:4433",
        "--cert",
        "c.pem",
        "--key",
        "k.pem",
    ];
    [&[program], &required[..], extra].concat()
}

/// The end of both servers' --help: ENVIRONMENT (the lines under
/// "Environment:"), then how requests are matched and the exit status.
pub fn after_help(environment: &str) -> String {
    format!(
        "\
Environment:
{environment}

Matching (the shared library's matching.rs): same scheme, host (port
ignored, case-insensitive), method and path; the longest common prefix of
the full target wins (an identical target beats an extension of it), ties go
to the earliest exchange; no match: 404, a miss.

Exit status: 0 after SIGTERM/SIGINT (connections closed, summary written),
2 for bad input (recording, certificate, key; one line naming the file and
what was expected), 1 for anything else (e.g. an address that cannot be
bound)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        common: Common,
    }

    fn parse(extra: &[&str]) -> Result<Common, clap::Error> {
        let argv = with_required("server", extra);
        Cli::try_parse_from(argv).map(|c| c.common)
    }

    #[test]
    fn defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.initial_cwnd_packets, 10);
        assert_eq!(a.max_udp_payload, 1350);
        assert_eq!(a.alt_svc, OnOff::On);
        assert_eq!(a.log_level, "info");
        assert!(a.summary.is_none());
    }

    #[test]
    fn options() {
        let a = parse(&[
            "--initial-cwnd-packets",
            "32",
            "--listen",
            "10.0.0.1:443",
            "--max-udp-payload",
            "1252",
            "--alt-svc",
            "off",
            "--summary",
            "s.json",
        ])
        .unwrap();
        assert_eq!(a.initial_cwnd_packets, 32);
        assert_eq!(a.listen.len(), 2);
        assert_eq!(a.max_udp_payload, 1252);
        assert!(!a.alt_svc.on());
        assert_eq!(a.summary, Some(PathBuf::from("s.json")));
        // --log is another name for --log-level
        assert_eq!(parse(&["--log", "debug"]).unwrap().log_level, "debug");
        assert_eq!(parse(&["--log-level", "warn"]).unwrap().log_level, "warn");
    }

    #[test]
    fn rejects_bad_values() {
        assert!(parse(&["--max-udp-payload", "100"]).is_err());
        assert!(parse(&["--max-udp-payload", "65528"]).is_err());
        assert!(parse(&["--initial-cwnd-packets", "0"]).is_err());
        assert!(parse(&["--alt-svc", "maybe"]).is_err());
        assert!(Cli::try_parse_from(["server", "--recording", "r"]).is_err());
    }

    #[test]
    fn an_uncreatable_qlog_folder_is_bad_input_naming_it() {
        let file = std::env::temp_dir().join(format!("h3replay-cli-{}", std::process::id()));
        std::fs::write(&file, b"").unwrap();
        let mut a = parse(&[]).unwrap();
        a.qlog_dir = Some(file.join("qlog"));
        let e = a.create_qlog_dir().unwrap_err();
        assert!(
            matches!(&e, Fatal::Input(m) if m.contains("--qlog-dir cannot be created")),
            "{e:?}"
        );
        a.qlog_dir = None;
        assert!(a.create_qlog_dir().is_ok());
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn after_help_keeps_the_environment() {
        let h = after_help("  QLOGDIR        default for --qlog-dir");
        assert!(h.starts_with("Environment:\n  QLOGDIR"), "{h}");
        assert!(h.contains("Exit status: 0 after SIGTERM/SIGINT"));
    }
}
