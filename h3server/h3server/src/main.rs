//! h3server: serves one testbed recording from memory over HTTP/3 (quiche).
//!
//! Wiring only: arguments (args.rs), the settings and QUIC configuration
//! made of them (config.rs), the recording (h3replay's recording.rs), the
//! event loop (server.rs), which hands requests to http.rs and datagrams to
//! outbox.rs. Exit status (h3replay::fatal): 0 after SIGINT/SIGTERM, 2 for
//! bad input (arguments, recording, certificate), 1 for anything else.

mod args;
mod coalesced;
mod config;
mod connstats;
mod h3fields;
mod h3priority;
mod http;
mod logging;
mod outbox;
mod pacer;
mod server;
mod udp;

// Shared with h3quinn (the h3replay crate): the recording, matching, response
// headers, priorities, the summary and the error type.
use h3replay::{matching, priority, recording, response, summary, Fatal};

use std::process::ExitCode;

use clap::Parser;
use log::info;

/// quiche's version, pinned by Cargo.lock (a test checks they agree).
pub const QUICHE_VERSION: &str = "0.24.6";
/// This server's version and quiche's, as shown by --version and the summary.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (quiche ", "0.24.6", ")");

fn main() -> ExitCode {
    let args = args::Args::parse();
    logging::init(&args.common.log_level);
    h3replay::fatal::exit("h3server", run(&args))
}

fn run(args: &args::Args) -> Result<(), Fatal> {
    let settings = config::Settings::from_args(args)?;
    let config = config::quic_config(&settings, &args.common.cert, &args.common.key)?;
    let rec = recording::load(&args.common.recording).map_err(|e| Fatal::Input(e.0))?;
    info!(
        "{} recording {} ({}): {} exchanges, {} body bytes in memory",
        logging::SERVER,
        rec.name,
        rec.path.display(),
        rec.exchanges.len(),
        rec.body_bytes
    );
    let mut srv = server::Server::new(settings, config, rec)?;
    info!(
        "{} h3server {} listening on {} (cc {:?}, initial cwnd {} packets, pacing {:?}, max UDP payload {}, GSO {:?}, max ACK delay {} ms, ACK delay exponent {})",
        logging::SERVER,
        VERSION,
        srv.local_addrs().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
        args.cc,
        args.common.initial_cwnd_packets,
        args.pacing,
        args.common.max_udp_payload,
        args.gso,
        args.max_ack_delay_ms,
        args.ack_delay_exponent
    );
    srv.run()
}

#[cfg(test)]
mod tests {
    #[test]
    fn quiche_version_matches_the_lock_file() {
        let lock = include_str!("../../Cargo.lock");
        let pinned = format!("name = \"quiche\"\nversion = \"{}\"", super::QUICHE_VERSION);
        assert!(
            lock.contains(&pinned),
            "Cargo.lock pins another quiche than {}",
            super::QUICHE_VERSION
        );
        assert!(super::VERSION.contains(super::QUICHE_VERSION));
    }
}
