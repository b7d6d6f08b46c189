//! h3quinn: the testbed's second HTTP/3 replay server, on quinn + h3
//! (rustls, ring), so that a verdict about QUIC can be checked against a
//! second, independent QUIC stack. It serves one recording from memory as
//! h3server does, sharing the workspace's library h3replay with it for
//! everything that is not transport: the recording, matching, response
//! headers, priorities, the summary, the shared options and the error type.
//!
//! Wiring only: arguments (args.rs), TLS and transport settings
//! (config.rs), one quinn endpoint per --listen address, each accepted
//! connection served by serve.rs, counts and the summary in state.rs, the
//! summary's connection figures from quinn's (stats.rs), h3's QUIC traits
//! with request priorities (transport.rs). Exit status (h3replay::fatal): 0
//! after SIGINT/SIGTERM, 2 for bad input (recording, certificate, key), 1
//! for anything else.

mod args;
mod config;
mod serve;
mod state;
mod stats;
mod transport;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use h3replay::summary::{hex, Summary, Writer};
use h3replay::Fatal;
use log::{debug, info, warn};

use crate::state::State;
use crate::stats::Track;

/// quinn's and h3's versions, pinned by Cargo.lock (a test checks them).
pub const QUINN_VERSION: &str = "0.11.12";
pub const H3_VERSION: &str = "0.0.8";
/// This server's version and its stack's, as --version and the summary show.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (quinn ",
    "0.11.12",
    ", h3 ",
    "0.0.8",
    ")"
);
/// H3_NO_ERROR, for closing connections at exit.
const H3_NO_ERROR: u32 = 0x100;
/// Longest wait at exit for the closing connections' last packets.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let args = args::Args::parse();
    env_logger::Builder::new()
        .parse_filters(&args.common.log_level)
        .format(|buf, r| writeln!(buf, "{} {}", r.level(), r.args()))
        .init();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return h3replay::fatal::exit("h3quinn", Err(Fatal::Runtime(format!("runtime: {e}"))))
        }
    };
    let result = rt.block_on(run(&args));
    rt.shutdown_timeout(Duration::from_secs(1));
    h3replay::fatal::exit("h3quinn", result)
}

/// What accepting a connection needs.
struct Accept {
    base: Arc<quinn::ServerConfig>,
    args: args::Args,
    state: Arc<Mutex<State>>,
}

async fn run(args: &args::Args) -> Result<(), Fatal> {
    let a = &args.common;
    let tls = config::tls(&a.cert, &a.key)?;
    let rec = h3replay::recording::load(&a.recording).map_err(|e| Fatal::Input(e.0))?;
    a.create_qlog_dir()?;
    info!(
        "server recording {} ({}): {} exchanges, {} body bytes in memory",
        rec.name,
        rec.path.display(),
        rec.exchanges.len(),
        rec.body_bytes
    );
    let transport = config::transport(
        args.cc,
        args.common.initial_cwnd_packets,
        args.common.max_udp_payload,
    );
    let mut server_config = quinn::ServerConfig::with_crypto(Arc::new(tls));
    server_config.transport_config(Arc::new(transport));
    let mut endpoints = Vec::new();
    for addr in &args.common.listen {
        let ep = endpoint(&server_config, *addr)
            .map_err(|e| Fatal::Runtime(format!("{addr}: cannot serve on it: {e}")))?;
        let local = ep
            .local_addr()
            .map_err(|e| Fatal::Runtime(format!("{addr}: {e}")))?;
        endpoints.push((ep, local));
    }
    let state = Arc::new(Mutex::new(State {
        recording: Arc::new(rec),
        not_found: Arc::from(h3replay::response::NOT_FOUND),
        alt_svc: args.common.alt_svc.on(),
        cc: args.cc.name(),
        summary: Summary::new("h3quinn", VERSION, args.cc.name()),
        writer: Writer::new(args.common.summary.clone()),
        tracks: Vec::new(),
        conns: Vec::new(),
        figures: Vec::new(),
        changed: Arc::new(tokio::sync::Notify::new()),
    }));
    // Written once at start, as h3server does.
    state.lock().unwrap().write(true);
    tokio::spawn(state::keep_written(state.clone()));
    let accept = Arc::new(Accept {
        base: Arc::new(server_config),
        args: args.clone(),
        state: state.clone(),
    });
    for (ep, local) in &endpoints {
        let (ep, local, accept) = (ep.clone(), *local, accept.clone());
        tokio::spawn(async move {
            while let Some(incoming) = ep.accept().await {
                tokio::spawn(connection(incoming, local, accept.clone()));
            }
        });
    }
    info!(
        "server h3quinn {VERSION} listening on {} (cc {}, initial cwnd {} packets, max UDP payload {}, GSO off, MTU discovery off)",
        endpoints
            .iter()
            .map(|(_, a)| a.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        args.cc.name(),
        args.common.initial_cwnd_packets,
        args.common.max_udp_payload
    );
    wait_for_signal().await?;
    info!("server stopping: closing connections");
    for (ep, _) in &endpoints {
        ep.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"");
    }
    for (ep, _) in &endpoints {
        if tokio::time::timeout(CLOSE_WAIT, ep.wait_idle())
            .await
            .is_err()
        {
            warn!("server connections still closing after {CLOSE_WAIT:?}");
        }
    }
    let mut s = state.lock().unwrap();
    for slot in 0..s.tracks.len() {
        s.ended(slot);
    }
    let now = Instant::now();
    let snap = s.snapshot();
    s.writer
        .maybe_write(&snap, now, true)
        .map_err(|e| Fatal::Runtime(format!("summary: {e}")))?;
    info!(
        "server stopped: {} requests ({} misses), {} body bytes, {} connections",
        snap.requests, snap.misses, snap.bytes, snap.connections
    );
    Ok(())
}

/// A quinn endpoint on `addr` whose socket has h3server's buffers
/// (h3replay::socket): with the default a busy server drops its clients'
/// ACKs in bursts.
fn endpoint(config: &quinn::ServerConfig, addr: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let sock = std::net::UdpSocket::bind(addr)?;
    h3replay::socket::enlarge_buffers(&sock);
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config.clone()),
        sock,
        Arc::new(quinn::TokioRuntime),
    )
}

async fn wait_for_signal() -> Result<(), Fatal> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| Fatal::Runtime(format!("SIGTERM: {e}")))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| Fatal::Runtime(format!("SIGINT: {e}")))?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

/// The transport settings with a qlog stream into DIR/<odcid>.sqlog.
fn with_qlog(
    a: &Accept,
    dir: &Path,
    odcid: &str,
    at: Instant,
) -> std::io::Result<quinn::ServerConfig> {
    let path: PathBuf = dir.join(format!("{odcid}.sqlog"));
    let file = std::fs::File::create(&path)?;
    let mut q = quinn::QlogConfig::default();
    q.writer(Box::new(std::io::BufWriter::new(file)))
        .title(Some(format!("h3quinn {VERSION}")))
        .start_time(at);
    let mut t = config::transport(
        a.args.cc,
        a.args.common.initial_cwnd_packets,
        a.args.common.max_udp_payload,
    );
    t.qlog_stream(q.into_stream());
    let mut sc = (*a.base).clone();
    sc.transport_config(Arc::new(t));
    Ok(sc)
}

/// Accept one connection, track it, serve it until it ends.
async fn connection(incoming: quinn::Incoming, local: SocketAddr, a: Arc<Accept>) {
    let at = Instant::now();
    let odcid = hex(&incoming.orig_dst_cid());
    let config = match &a.args.common.qlog_dir {
        Some(dir) => match with_qlog(&a, dir, &odcid, at) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                warn!("{odcid} no qlog: {e}");
                a.base.clone()
            }
        },
        None => a.base.clone(),
    };
    let connecting = match incoming.accept_with(config) {
        Ok(c) => c,
        Err(e) => {
            debug!("{odcid} not accepted: {e}");
            return;
        }
    };
    let window = config::initial_window(
        a.args.common.initial_cwnd_packets,
        a.args.common.max_udp_payload,
    );
    let slot = a
        .state
        .lock()
        .unwrap()
        .accepted(Track::new(odcid.clone(), local, at, window));
    let conn = match connecting.await {
        Ok(c) => c,
        Err(e) => {
            debug!("{odcid} handshake failed: {e}");
            a.state.lock().unwrap().ended(slot);
            return;
        }
    };
    info!(
        "{odcid} connection from {} established",
        conn.remote_address()
    );
    a.state.lock().unwrap().established(slot, conn.clone());
    let (watch, state) = (conn.clone(), a.state.clone());
    tokio::spawn(async move {
        watch.closed().await;
        state.lock().unwrap().ended(slot);
    });
    serve::connection(conn, slot, local, a.state.clone()).await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_match_the_lock_file() {
        let lock = include_str!("../../Cargo.lock");
        for (name, v) in [("quinn", super::QUINN_VERSION), ("h3", super::H3_VERSION)] {
            let pinned = format!("name = \"{name}\"\nversion = \"{v}\"");
            assert!(
                lock.contains(&pinned),
                "Cargo.lock pins another {name} than {v}"
            );
            assert!(super::VERSION.contains(&format!("{name} {v}")));
        }
    }
}
