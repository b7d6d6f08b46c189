//! The per-run summary: counts a reader diffs before and after a page load,
//! and every connection's transport figures (ConnStats), the same JSON from
//! both servers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Longest a changed summary stays unwritten.
pub const MAX_DELAY: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Which server: "h3server" or "h3quinn".
    pub server: &'static str,
    /// That server's version and its QUIC stack's.
    pub version: &'static str,
    /// The congestion controller, by quiche's name for it, which names the
    /// generation: "cubic", "reno", "bbr" (BBRv1), "bbr2_gcongestion"
    /// (BBRv2; h3server only).
    pub cc: &'static str,
    /// Requests answered (recorded responses and 404s).
    pub requests: u64,
    /// Requests with no matching exchange (answered 404).
    pub misses: u64,
    /// URL of every miss, in order (repeats kept).
    pub miss_urls: Vec<String>,
    /// Response body bytes handed to QUIC streams.
    pub bytes: u64,
    /// QUIC connections that carried at least one request.
    pub connections: u64,
    /// Those connections' transport figures (ConnStats), in the order
    /// they were accepted: final for closed ones, current for open ones as
    /// of the write.
    pub conns: Vec<ConnStats>,
    /// Of those, the ones that resumed a TLS session (a ticket of this server).
    pub resumed: u64,
    /// Requests that arrived in 0-RTT (early data accepted, handshake not yet
    /// complete).
    pub early_data: u64,
}

impl Summary {
    pub fn new(server: &'static str, version: &'static str, cc: &'static str) -> Self {
        Summary {
            server,
            version,
            cc,
            ..Default::default()
        }
    }
}

/// One QUIC connection's figures: final once `closed`, current otherwise.
/// Times in ms; rates in bits per second; None (JSON null) for a figure not
/// known yet (no RTT sample, handshake not complete).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConnStats {
    /// The server's source connection ID, hex (h3server: also the connection's
    /// trace id; h3quinn: the connection's handshake DCID, see h3server/h3quinn/src/stats.rs).
    pub id: String,
    /// The client's address, "ip:port".
    pub peer: String,
    /// The server's address the client reached, "ip:port".
    pub local: String,
    /// Whether the connection is over (closed, or closing/draining: it will
    /// send nothing more, so its figures are final).
    pub closed: bool,
    /// The congestion controller, by the summary's `cc` name ("cubic", "bbr", ...).
    pub cc: &'static str,
    /// From the first Initial packet read to the handshake's completion
    /// (server side); None while it is not complete.
    pub handshake_ms: Option<f64>,
    /// From the first Initial packet read to the end of the connection (or
    /// to now while it is open).
    pub duration_ms: f64,
    /// Smoothed RTT; None without an RTT sample.
    pub rtt_ms: Option<f64>,
    /// Smallest RTT sample; None without one.
    pub min_rtt_ms: Option<f64>,
    /// RTT variation; None without an RTT sample.
    pub rttvar_ms: Option<f64>,
    /// The path's congestion window when the connection was accepted.
    pub cwnd_initial_bytes: u64,
    /// The path's congestion window now (at the end, once closed).
    pub cwnd_bytes: u64,
    /// Largest UDP payload this server sends on the connection.
    pub max_datagram_size: u64,
    pub sent_packets: u64,
    pub recv_packets: u64,
    pub lost_packets: u64,
    /// Packets sent carrying retransmitted data; None (JSON null) where the
    /// stack does not count them (quinn).
    pub retrans_packets: Option<u64>,
    pub sent_bytes: u64,
    pub recv_bytes: u64,
    pub lost_bytes: u64,
    /// Stream data bytes sent again; None where the stack does not count them
    /// (quinn).
    pub stream_retrans_bytes: Option<u64>,
    /// The stack's delivery rate estimate of the path, bits per second; None
    /// where it has none (quinn).
    pub delivery_rate_bps: Option<u64>,
    /// Requests answered on the connection.
    pub requests: u64,
}

/// A duration in ms, at microsecond resolution (plenty, and short JSON).
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Bytes as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Keeps FILE current: atomic rewrites (temporary file + rename), at most
/// every MAX_DELAY, and on demand at exit.
#[derive(Debug)]
pub struct Writer {
    path: Option<PathBuf>,
    dirty_since: Option<Instant>,
    last_write: Option<Instant>,
}

impl Writer {
    pub fn new(path: Option<PathBuf>) -> Self {
        Writer {
            path,
            dirty_since: None,
            last_write: None,
        }
    }

    /// Note that the summary changed at `now`.
    pub fn changed(&mut self, now: Instant) {
        if self.path.is_some() && self.dirty_since.is_none() {
            self.dirty_since = Some(now);
        }
    }

    /// When the pending change must be written, if any.
    pub fn deadline(&self) -> Option<Instant> {
        let dirty = self.dirty_since?;
        Some(match self.last_write {
            Some(t) => (t + MAX_DELAY).max(dirty),
            None => dirty,
        })
    }

    /// Whether `maybe_write` would write now.
    pub fn due(&self, now: Instant, force: bool) -> bool {
        if self.path.is_none() {
            return false;
        }
        match self.deadline() {
            Some(t) => force || t <= now,
            None => force && self.last_write.is_none(),
        }
    }

    /// Write if a change is due (or `force` and anything changed or never written).
    pub fn maybe_write(&mut self, s: &Summary, now: Instant, force: bool) -> std::io::Result<bool> {
        if !self.due(now, force) {
            return Ok(false);
        }
        let Some(path) = &self.path else {
            return Ok(false);
        };
        write_atomic(path, s)?;
        self.last_write = Some(now);
        self.dirty_since = None;
        Ok(true)
    }
}

/// Write `s` as JSON to a temporary file beside `path`, then rename it over `path`.
pub fn write_atomic(path: &Path, s: &Summary) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    // Compact and buffered: unbuffered, serde_json makes one write(2) per token, and the summary
    // (every connection's figures) grows with the replay's life; each write blocks
    // the event loop, so later loads would wait longer on the server.
    let mut f = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp)?);
    serde_json::to_writer(&mut f, s)?;
    f.write_all(b"\n")?;
    f.into_inner().map_err(|e| e.into_error())?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttles_and_forces() {
        let t0 = Instant::now();
        let dir = std::env::temp_dir().join(format!("h3server-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("summary.json");
        let mut w = Writer::new(Some(file.clone()));
        let mut s = Summary::new("h3server", "0.1.0 (quiche 0.24.6)", "bbr");
        // Nothing changed, not forced: nothing written.
        assert!(!w.due(t0, false) && w.due(t0, true));
        assert!(!w.maybe_write(&s, t0, false).unwrap());
        // Forced at start: written once even unchanged.
        assert!(w.maybe_write(&s, t0, true).unwrap());
        s.requests = 1;
        w.changed(t0 + Duration::from_millis(10));
        assert_eq!(w.deadline(), Some(t0 + MAX_DELAY));
        assert!(!w
            .maybe_write(&s, t0 + Duration::from_millis(20), false)
            .unwrap());
        assert!(w.maybe_write(&s, t0 + MAX_DELAY, false).unwrap());
        assert_eq!(w.deadline(), None);
        // A change long after the last write is written at once.
        w.changed(t0 + Duration::from_secs(5));
        assert_eq!(w.deadline(), Some(t0 + Duration::from_secs(5)));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v["server"], "h3server");
        assert_eq!(v["version"], "0.1.0 (quiche 0.24.6)");
        assert_eq!(v["requests"], 1);
        assert_eq!(v["cc"], "bbr");
        assert_eq!(v["miss_urls"], serde_json::json!([]));
        assert_eq!(v["conns"], serde_json::json!([]));
        for key in ["version", "misses", "bytes", "connections"] {
            assert!(v.get(key).is_some(), "{key}");
        }
        // No temporary file left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
