//! One connection's figures for the summary's `conns` list, h3server's
//! ConnStats (the shared library, summary.rs) filled from quinn's
//! `Connection::stats()`.
//!
//! What quinn does not have, and what stands in for it:
//! - `id`: quinn does not expose the server's connection ID; the client's
//!   original destination connection ID (hex) names the connection instead,
//!   as it names its qlog file.
//! - `rttvar_ms`: quinn keeps no public RTT variation: null.
//! - `retrans_packets`, `stream_retrans_bytes`: quinn counts no
//!   retransmissions (it resends lost frames in new packets): null.
//! - `delivery_rate_bps`: quinn has no delivery-rate estimate: null.
//! - `recv_packets`: UDP datagrams received (a coalesced datagram counts once;
//!   quiche counts QUIC packets).
//! - `cwnd_initial_bytes`: the window configured (N x payload), which is
//!   quinn's window when a connection is accepted.

use std::net::SocketAddr;
use std::time::Instant;

use h3replay::summary::{ms, ConnStats};

/// What the server notes about a connection beside quinn's figures.
#[derive(Debug, Clone)]
pub struct Track {
    pub id: String,
    pub local: SocketAddr,
    pub accepted: Instant,
    pub cwnd_initial: u64,
    pub established: Option<Instant>,
    pub ended: Option<Instant>,
    pub requests: u64,
}

impl Track {
    /// `id`: the original destination connection ID, hex.
    pub fn new(id: String, local: SocketAddr, accepted: Instant, cwnd_initial: u64) -> Track {
        Track {
            id,
            local,
            accepted,
            cwnd_initial,
            established: None,
            ended: None,
            requests: 0,
        }
    }
}

/// quinn's figures of a connection, as read from it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub peer: Option<SocketAddr>,
    pub stats: quinn::ConnectionStats,
}

/// The summary's entry for a connection as of `now`.
pub fn snapshot(t: &Track, f: &Figures, cc: &'static str, now: Instant) -> ConnStats {
    let p = &f.stats.path;
    let end = t.ended.unwrap_or(now);
    // quinn's RTT is its initial guess (333 ms) until the handshake's sample.
    let sampled = t.established.is_some();
    ConnStats {
        id: t.id.clone(),
        peer: f.peer.map(|a| a.to_string()).unwrap_or_default(),
        local: t.local.to_string(),
        closed: t.ended.is_some(),
        cc,
        handshake_ms: t
            .established
            .map(|e| ms(e.saturating_duration_since(t.accepted))),
        duration_ms: ms(end.saturating_duration_since(t.accepted)),
        rtt_ms: sampled.then(|| ms(p.rtt)),
        min_rtt_ms: sampled.then(|| ms(p.min_rtt)),
        rttvar_ms: None,
        cwnd_initial_bytes: t.cwnd_initial,
        cwnd_bytes: p.cwnd,
        max_datagram_size: u64::from(p.current_mtu),
        sent_packets: p.sent_packets,
        recv_packets: f.stats.udp_rx.datagrams,
        lost_packets: p.lost_packets,
        retrans_packets: None,
        sent_bytes: f.stats.udp_tx.bytes,
        recv_bytes: f.stats.udp_rx.bytes,
        lost_bytes: p.lost_bytes,
        stream_retrans_bytes: None,
        delivery_rate_bps: None,
        requests: t.requests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn maps_quinns_figures_onto_h3servers_fields() {
        let t0 = Instant::now();
        let mut t = Track::new("ab01".into(), "127.0.0.1:4433".parse().unwrap(), t0, 13_500);
        let mut f = Figures {
            peer: Some("127.0.0.1:50000".parse().unwrap()),
            ..Default::default()
        };
        f.stats.path.rtt = Duration::from_micros(24_500);
        f.stats.path.min_rtt = Duration::from_millis(24);
        f.stats.path.cwnd = 40_000;
        f.stats.path.current_mtu = 1350;
        f.stats.path.sent_packets = 100;
        f.stats.path.lost_packets = 3;
        f.stats.path.lost_bytes = 4050;
        f.stats.udp_tx.bytes = 135_000;
        f.stats.udp_rx.bytes = 5_000;
        f.stats.udp_rx.datagrams = 50;
        let fresh = snapshot(&t, &f, "cubic", t0 + Duration::from_millis(5));
        assert_eq!(
            (fresh.handshake_ms, fresh.rtt_ms, fresh.min_rtt_ms),
            (None, None, None)
        );
        assert_eq!(fresh.duration_ms, 5.0);
        assert!(!fresh.closed);
        t.established = Some(t0 + Duration::from_millis(30));
        t.ended = Some(t0 + Duration::from_millis(100));
        t.requests = 7;
        let s = snapshot(&t, &f, "cubic", t0 + Duration::from_secs(9));
        assert_eq!(s.id, "ab01");
        assert_eq!(
            (s.peer.as_str(), s.local.as_str()),
            ("127.0.0.1:50000", "127.0.0.1:4433")
        );
        assert!(s.closed);
        assert_eq!(s.handshake_ms, Some(30.0));
        assert_eq!(s.duration_ms, 100.0, "ends when first seen over");
        assert_eq!(
            (s.rtt_ms, s.min_rtt_ms, s.rttvar_ms),
            (Some(24.5), Some(24.0), None)
        );
        assert_eq!(
            (s.cwnd_initial_bytes, s.cwnd_bytes, s.max_datagram_size),
            (13_500, 40_000, 1350)
        );
        assert_eq!(
            (s.sent_packets, s.recv_packets, s.lost_packets),
            (100, 50, 3)
        );
        assert_eq!(
            (s.sent_bytes, s.recv_bytes, s.lost_bytes),
            (135_000, 5_000, 4050)
        );
        assert_eq!(
            (
                s.retrans_packets,
                s.stream_retrans_bytes,
                s.delivery_rate_bps
            ),
            (None, None, None)
        );
        assert_eq!((s.requests, s.cc), (7, "cubic"));
        // The same 23 keys as h3server's entries.
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 23);
        for unknown in [
            "rttvar_ms",
            "retrans_packets",
            "stream_retrans_bytes",
            "delivery_rate_bps",
        ] {
            assert!(json[unknown].is_null(), "{unknown}");
        }
    }
}
