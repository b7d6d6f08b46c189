//! Per-connection transport statistics for the summary's `conns` list:
//! quiche's figures (`stats()`, the active path's `path_stats()`) plus what
//! quiche does not keep: the congestion window when the connection was
//! accepted, how long the handshake took and how many requests it carried.
//!
//! Must not touch sockets or the summary file (server.rs does), nor count
//! requests (http.rs does).

use std::time::Instant;

pub use h3replay::summary::ConnStats;
use h3replay::summary::{hex, ms};

/// What the server notes about a connection beside quiche's figures.
#[derive(Debug, Clone)]
pub struct Track {
    /// When the first Initial packet was read.
    accepted: Instant,
    /// The path's congestion window right after the connection was accepted.
    cwnd_initial: usize,
    /// When the handshake was first seen complete.
    established: Option<Instant>,
    /// When the connection was first seen over (closing, draining or closed).
    ended: Option<Instant>,
}

impl Track {
    /// Start tracking a connection just accepted for an Initial read at `read_at`.
    pub fn new(conn: &quiche::Connection, read_at: Instant) -> Track {
        let cwnd_initial = conn.path_stats().next().map(|p| p.cwnd).unwrap_or_default();
        Track {
            accepted: read_at,
            cwnd_initial,
            established: None,
            ended: None,
        }
    }

    /// Note the handshake's completion and the connection's end as of `now`;
    /// true when either is newly seen (the summary shows both).
    pub fn update(&mut self, conn: &quiche::Connection, now: Instant) -> bool {
        let mut changed = false;
        if self.established.is_none() && conn.is_established() {
            self.established = Some(now);
            changed = true;
        }
        if self.ended.is_none() && is_over(conn) {
            self.ended = Some(now);
            changed = true;
        }
        changed
    }

    /// The connection's figures as of `now` (`requests`: as counted by http.rs).
    pub fn snapshot(
        &self,
        conn: &quiche::Connection,
        cc: &'static str,
        requests: u64,
        now: Instant,
    ) -> ConnStats {
        let s = conn.stats();
        let path = conn
            .path_stats()
            .find(|p| p.active)
            .or_else(|| conn.path_stats().next());
        let end = self.ended.unwrap_or(now);
        let sampled = path.as_ref().and_then(|p| p.min_rtt).is_some();
        let (peer, local) = match &path {
            Some(p) => (p.peer_addr.to_string(), p.local_addr.to_string()),
            None => (String::new(), String::new()),
        };
        ConnStats {
            id: hex(&conn.source_id()),
            peer,
            local,
            closed: self.ended.is_some(),
            cc,
            handshake_ms: self
                .established
                .map(|t| ms(t.saturating_duration_since(self.accepted))),
            duration_ms: ms(end.saturating_duration_since(self.accepted)),
            rtt_ms: path.as_ref().filter(|_| sampled).map(|p| ms(p.rtt)),
            min_rtt_ms: path.as_ref().and_then(|p| p.min_rtt).map(ms),
            rttvar_ms: path.as_ref().filter(|_| sampled).map(|p| ms(p.rttvar)),
            cwnd_initial_bytes: self.cwnd_initial as u64,
            cwnd_bytes: path.as_ref().map_or(0, |p| p.cwnd as u64),
            max_datagram_size: conn.max_send_udp_payload_size() as u64,
            sent_packets: s.sent as u64,
            recv_packets: s.recv as u64,
            lost_packets: s.lost as u64,
            retrans_packets: Some(s.retrans as u64),
            sent_bytes: s.sent_bytes,
            recv_bytes: s.recv_bytes,
            lost_bytes: s.lost_bytes,
            stream_retrans_bytes: Some(s.stream_retrans_bytes),
            delivery_rate_bps: Some(
                path.as_ref()
                    .map_or(0, |p| p.delivery_rate.saturating_mul(8)),
            ),
            requests,
        }
    }
}

/// Whether the connection will send nothing more: closed, or closing or
/// draining after a CONNECTION_CLOSE (either side's).
fn is_over(conn: &quiche::Connection) -> bool {
    conn.is_closed() || conn.is_draining()
}

#[cfg(test)]
pub mod tests {
    //! A real quiche client and server handshaking in memory.

    use super::*;
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::time::Duration;

    /// A self-signed EC certificate and its key, as PEM files in a fresh folder.
    pub fn cert_files(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
        use boring::asn1::Asn1Time;
        use boring::bn::BigNum;
        use boring::ec::{EcGroup, EcKey};
        use boring::hash::MessageDigest;
        use boring::nid::Nid;
        use boring::pkey::PKey;
        use boring::x509::{X509NameBuilder, X509};

        let dir = std::env::temp_dir().join(format!("h3server-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = PKey::from_ec_key(
            EcKey::generate(&EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap()).unwrap(),
        )
        .unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_nid(Nid::COMMONNAME, "a.test").unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        b.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap())
            .unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        let (cert, keyfile) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, b.build().to_pem().unwrap()).unwrap();
        std::fs::write(&keyfile, key.private_key_to_pem_pkcs8().unwrap()).unwrap();
        (dir, cert, keyfile)
    }

    pub fn client_config() -> quiche::Config {
        let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
        c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
            .unwrap();
        c.verify_peer(false);
        c.set_initial_max_data(1 << 20);
        c.set_initial_max_stream_data_bidi_local(1 << 20);
        c.set_initial_max_stream_data_bidi_remote(1 << 20);
        c.set_initial_max_streams_bidi(10);
        c.set_initial_max_streams_uni(10);
        c
    }

    pub const CLIENT: &str = "127.0.0.1:50000";
    pub const SERVER: &str = "127.0.0.1:4433";

    /// Move every datagram `from` has to send into `to`; how many.
    pub fn deliver(from: &mut quiche::Connection, to: &mut quiche::Connection) -> usize {
        let mut buf = [0u8; 65_535];
        let mut n = 0;
        loop {
            match from.send(&mut buf) {
                Ok((len, info)) => {
                    let _ = to.recv(
                        &mut buf[..len],
                        quiche::RecvInfo {
                            from: info.from,
                            to: info.to,
                        },
                    );
                    n += 1;
                }
                Err(quiche::Error::Done) => return n,
                Err(e) => panic!("send: {e}"),
            }
        }
    }

    /// A client connection and the server's, accepted from the client's
    /// first datagram with `server_config`, not yet handshaken.
    pub fn pair(server_config: &mut quiche::Config) -> (quiche::Connection, quiche::Connection) {
        let (c, s): (SocketAddr, SocketAddr) = (CLIENT.parse().unwrap(), SERVER.parse().unwrap());
        let mut cc = client_config();
        let client = quiche::connect(
            Some("a.test"),
            &quiche::ConnectionId::from_ref(&[1; 16]),
            c,
            s,
            &mut cc,
        )
        .unwrap();
        let server = quiche::accept(
            &quiche::ConnectionId::from_ref(&[0xab; 20]),
            None,
            s,
            c,
            server_config,
        )
        .unwrap();
        (client, server)
    }

    pub fn server_config(cert: &std::path::Path, key: &std::path::Path) -> quiche::Config {
        let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
        c.load_cert_chain_from_pem_file(cert.to_str().unwrap())
            .unwrap();
        c.load_priv_key_from_pem_file(key.to_str().unwrap())
            .unwrap();
        c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
            .unwrap();
        c.set_initial_max_data(1 << 20);
        c.set_initial_max_stream_data_bidi_remote(1 << 20);
        c.set_initial_max_streams_bidi(10);
        c.set_max_send_udp_payload_size(1350);
        c.set_initial_congestion_window_packets(32);
        c
    }

    #[test]
    fn a_real_connection_from_accept_to_close() {
        let (dir, cert, key) = cert_files("connstats");
        let mut config = server_config(&cert, &key);
        let (mut client, mut server) = pair(&mut config);
        let t0 = Instant::now();
        let mut track = Track::new(&server, t0);
        assert!(!track.update(&server, t0), "nothing happened yet");
        let fresh = track.snapshot(&server, "cubic", 0, t0);
        assert_eq!(fresh.id, "ab".repeat(20));
        assert_eq!(
            (fresh.peer.as_str(), fresh.local.as_str()),
            (CLIENT, SERVER)
        );
        assert_eq!(fresh.cwnd_initial_bytes, 32 * 1350);
        assert_eq!(
            (fresh.handshake_ms, fresh.rtt_ms, fresh.min_rtt_ms),
            (None, None, None)
        );
        assert!(!fresh.closed && fresh.sent_packets == 0);

        while !(client.is_established() && server.is_established()) {
            assert!(
                deliver(&mut client, &mut server) + deliver(&mut server, &mut client) > 0,
                "stalled"
            );
        }
        let t1 = t0 + Duration::from_millis(7);
        assert!(track.update(&server, t1), "handshake complete");
        assert!(!track.update(&server, t1), "seen once");
        // The client's data and the server's acknowledgements of it.
        client.stream_send(0, b"hello", true).unwrap();
        deliver(&mut client, &mut server);
        deliver(&mut server, &mut client);
        deliver(&mut client, &mut server);
        let open = track.snapshot(&server, "cubic", 1, t1 + Duration::from_millis(3));
        assert_eq!(open.handshake_ms, Some(7.0));
        assert_eq!(open.duration_ms, 10.0);
        assert!(!open.closed);
        assert!(open.sent_packets > 0 && open.recv_packets > 0 && open.sent_bytes > 0);
        assert!(open.rtt_ms.is_some_and(|r| r >= 0.0) && open.min_rtt_ms.is_some());
        assert_eq!(open.max_datagram_size, 1350);
        assert_eq!((open.lost_packets, open.requests, open.cc), (0, 1, "cubic"));

        // The client closes; the server drains: its figures are final.
        client.close(true, 0x100, b"").unwrap();
        deliver(&mut client, &mut server);
        let t2 = t1 + Duration::from_millis(20);
        assert!(track.update(&server, t2), "over");
        let closed = track.snapshot(&server, "cubic", 1, t2 + Duration::from_secs(5));
        assert!(closed.closed);
        assert_eq!(closed.duration_ms, 27.0, "ends when first seen over");
        let json = serde_json::to_value(&closed).unwrap();
        for key in [
            "id",
            "peer",
            "local",
            "closed",
            "cc",
            "handshake_ms",
            "duration_ms",
            "rtt_ms",
            "min_rtt_ms",
            "rttvar_ms",
            "cwnd_initial_bytes",
            "cwnd_bytes",
            "max_datagram_size",
            "sent_packets",
            "recv_packets",
            "lost_packets",
            "retrans_packets",
            "sent_bytes",
            "recv_bytes",
            "lost_bytes",
            "stream_retrans_bytes",
            "delivery_rate_bps",
            "requests",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert_eq!(json.as_object().unwrap().len(), 23);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn times_in_ms_at_microsecond_resolution() {
        assert_eq!(ms(Duration::from_micros(12_345)), 12.345);
        assert_eq!(ms(Duration::from_nanos(1_499)), 0.001);
        assert_eq!(hex(&[0, 0xff, 0x1a]), "00ff1a");
    }
}
