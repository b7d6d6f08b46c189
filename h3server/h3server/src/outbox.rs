//! A connection's way out: the datagrams quiche generates, each given its
//! release time, queued until due and then sent alone or as GSO batches.
//!
//! server.rs's flush is `Outbox::flush` with the connection's socket; every
//! decision of it is here, tested without a socket: when to ask quiche for
//! another datagram, where a datagram's release time comes from (`Release`),
//! what leaves now and in which sendmsg, and what a failed send does.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use log::{error, warn};

use crate::args::Cc;
use crate::pacer::{Pacer, PathView};
use crate::udp;

/// QUIC's INTERNAL_ERROR transport error (RFC 9000, 20.1), for closing a connection
/// this server cannot go on serving.
pub const QUIC_INTERNAL_ERROR: u64 = 0x1;

/// One UDP datagram of the connection.
pub struct Datagram {
    pub data: Vec<u8>,
    pub to: SocketAddr,
    /// Release time.
    pub at: Instant,
}

/// Where a datagram's release time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Now: pacing off, or everything at once (at exit).
    Now,
    /// quiche's pacer (`SendInfo::at`): BBR.
    Quiche,
    /// This server's pacer (crate::pacer): CUBIC and Reno.
    Pacer,
}

impl Release {
    /// For `--pacing` (`pacing`) and `--cc`; `now_all` sends everything at once.
    pub fn of(pacing: bool, cc: Cc, now_all: bool) -> Release {
        if !pacing || now_all {
            Release::Now
        } else if cc.paced_by_quiche() {
            Release::Quiche
        } else {
            Release::Pacer
        }
    }
}

/// What `send_due` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Nothing was due.
    Nothing,
    /// Every due datagram went out (or was dropped by a failed send).
    All,
    /// The socket would block: the datagrams not sent stay queued.
    Blocked,
}

/// The connection's queue of datagrams and the pacer that times them.
#[derive(Default)]
pub struct Outbox {
    queue: VecDeque<Datagram>,
    pacer: Pacer,
}

impl Outbox {
    pub fn new() -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            pacer: Pacer::new(),
        }
    }

    /// The release time of the next datagram, if one is queued.
    pub fn next_release(&self) -> Option<Instant> {
        self.queue.front().map(|d| d.at)
    }

    /// Whether to ask quiche for another datagram: fewer than a GSO batch
    /// queued and the last one due (so the pacer holds back one datagram at
    /// a time, and quiche's window is not spent ahead of the schedule).
    pub fn wants_more(&self, now: Instant) -> bool {
        self.queue.len() < udp::GSO_MAX_SEGMENTS && self.queue.back().is_none_or(|d| d.at <= now)
    }

    /// How many datagrams from the front are due at `now`.
    pub fn due(&self, now: Instant) -> usize {
        self.queue.iter().take_while(|d| d.at <= now).count()
    }

    /// Queue what quiche has to send while `wants_more`, each datagram of at
    /// most `payload` bytes released as `release` says. A send error closes the
    /// connection (INTERNAL_ERROR).
    pub fn fill(&mut self, conn: &mut quiche::Connection, release: Release, payload: usize) {
        while self.wants_more(Instant::now()) {
            let mut data = vec![0u8; payload];
            match conn.send(&mut data) {
                Ok((len, info)) => {
                    data.truncate(len);
                    let now = Instant::now();
                    let at = match release {
                        Release::Now => now,
                        Release::Quiche => info.at,
                        Release::Pacer => match PathView::of(conn) {
                            Some(v) => self.pacer.release_time(now, len, &v),
                            None => now,
                        },
                    };
                    self.queue.push_back(Datagram {
                        data,
                        to: info.to,
                        at,
                    });
                }
                Err(quiche::Error::Done) => break,
                Err(e) => {
                    error!("{} send failed: {e}", conn.trace_id());
                    let _ = conn.close(false, QUIC_INTERNAL_ERROR, b"send failed");
                    break;
                }
            }
        }
    }

    /// Send the datagrams due at `now`, front first, one `send(buffers,
    /// destination, segment size)` (a sendmsg) each, or with `gso` as many
    /// at once as one UDP_SEGMENT send takes (udp::gso_batch_len). A send that
    /// would block stops there; one that fails otherwise drops its datagrams
    /// (quiche finds them lost and sends their frames again).
    pub fn send_due<F>(&mut self, now: Instant, gso: bool, mut send: F) -> Sent
    where
        F: FnMut(&[&[u8]], SocketAddr, usize) -> io::Result<usize>,
    {
        let mut due = self.due(now);
        if due == 0 {
            return Sent::Nothing;
        }
        while due > 0 {
            let n = if gso {
                let items: Vec<(usize, SocketAddr)> = self
                    .queue
                    .iter()
                    .take(due)
                    .map(|d| (d.data.len(), d.to))
                    .collect();
                udp::gso_batch_len(&items)
            } else {
                1
            };
            let to = self.queue[0].to;
            let segment = self.queue[0].data.len();
            let bufs: Vec<&[u8]> = self
                .queue
                .iter()
                .take(n)
                .map(|d| d.data.as_slice())
                .collect();
            match send(&bufs, to, segment) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Sent::Blocked,
                // Under the connection's log scope (crate::logging), which names it.
                Err(e) => warn!("send to {to} failed: {e}"),
            }
            self.queue.drain(..n);
            due -= n;
        }
        Sent::All
    }

    /// Send what is due, asking quiche for more as long as datagrams leave:
    /// `fill` and `send_due` until nothing is due. False when the socket
    /// would block (the rest stays queued for the next flush).
    pub fn flush<F>(
        &mut self,
        conn: &mut quiche::Connection,
        release: Release,
        payload: usize,
        gso: bool,
        mut send: F,
    ) -> bool
    where
        F: FnMut(&[&[u8]], SocketAddr, usize) -> io::Result<usize>,
    {
        loop {
            self.fill(conn, release, payload);
            match self.send_due(Instant::now(), gso, &mut send) {
                Sent::All => continue,
                Sent::Nothing => return true,
                Sent::Blocked => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connstats::tests::{cert_files, deliver, pair, server_config};
    use std::time::Duration;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn outbox(items: &[(usize, u16, Instant)]) -> Outbox {
        let mut o = Outbox::new();
        for &(len, port, at) in items {
            o.queue.push_back(Datagram {
                data: vec![0; len],
                to: addr(port),
                at,
            });
        }
        o
    }

    /// The sends a `send_due` made: (datagram sizes, destination, segment).
    type Calls = Vec<(Vec<usize>, SocketAddr, usize)>;

    fn recorder(
        calls: &mut Calls,
    ) -> impl FnMut(&[&[u8]], SocketAddr, usize) -> io::Result<usize> + '_ {
        move |bufs, to, segment| {
            calls.push((bufs.iter().map(|b| b.len()).collect(), to, segment));
            Ok(bufs.iter().map(|b| b.len()).sum())
        }
    }

    #[test]
    fn release_times_come_from_the_pacer_quiche_or_now() {
        assert_eq!(Release::of(false, Cc::Cubic, false), Release::Now);
        assert_eq!(Release::of(false, Cc::Bbr, false), Release::Now);
        assert_eq!(Release::of(true, Cc::Cubic, true), Release::Now);
        assert_eq!(Release::of(true, Cc::Bbr2, true), Release::Now);
        assert_eq!(Release::of(true, Cc::Cubic, false), Release::Pacer);
        assert_eq!(Release::of(true, Cc::Reno, false), Release::Pacer);
        assert_eq!(Release::of(true, Cc::Bbr, false), Release::Quiche);
        assert_eq!(Release::of(true, Cc::Bbr2, false), Release::Quiche);
    }

    #[test]
    fn asks_quiche_for_more_while_the_last_is_due_and_a_batch_is_not_full() {
        let now = Instant::now();
        let later = now + Duration::from_millis(1);
        assert!(outbox(&[]).wants_more(now));
        assert!(outbox(&[(1350, 1, now), (1350, 1, now)]).wants_more(now));
        // the pacer holds the last one back: no more from quiche until it is due
        assert!(!outbox(&[(1350, 1, now), (1350, 1, later)]).wants_more(now));
        assert!(outbox(&[(1350, 1, now), (1350, 1, later)]).wants_more(later));
        let full = vec![(1350, 1, now); udp::GSO_MAX_SEGMENTS];
        assert!(!outbox(&full).wants_more(now));
        assert_eq!(
            outbox(&[(1350, 1, now), (1350, 1, later)]).next_release(),
            Some(now)
        );
        assert_eq!(outbox(&[]).next_release(), None);
    }

    #[test]
    fn sends_only_what_is_due_one_datagram_a_sendmsg_without_gso() {
        let now = Instant::now();
        let later = now + Duration::from_millis(1);
        let mut o = outbox(&[
            (1350, 1, now),
            (1350, 1, now),
            (700, 1, now),
            (1350, 1, later),
        ]);
        let mut calls = Calls::new();
        assert_eq!(o.send_due(now, false, recorder(&mut calls)), Sent::All);
        assert_eq!(
            calls,
            vec![
                (vec![1350], addr(1), 1350),
                (vec![1350], addr(1), 1350),
                (vec![700], addr(1), 700)
            ]
        );
        assert_eq!((o.queue.len(), o.next_release()), (1, Some(later)));
        let mut calls = Calls::new();
        assert_eq!(o.send_due(now, false, recorder(&mut calls)), Sent::Nothing);
        assert!(calls.is_empty());
        assert_eq!(o.send_due(later, false, recorder(&mut calls)), Sent::All);
        assert_eq!(o.queue.len(), 0);
    }

    #[test]
    fn gso_sends_equal_datagrams_to_one_destination_at_once() {
        let now = Instant::now();
        let mut o = outbox(&[
            (1350, 1, now),
            (1350, 1, now),
            (700, 1, now),
            (1350, 1, now),
            (1350, 2, now),
        ]);
        let mut calls = Calls::new();
        assert_eq!(o.send_due(now, true, recorder(&mut calls)), Sent::All);
        assert_eq!(
            calls,
            vec![
                (vec![1350, 1350, 700], addr(1), 1350), // a shorter one ends a batch
                (vec![1350], addr(1), 1350),            // another destination too
                (vec![1350], addr(2), 1350)
            ]
        );
        assert_eq!(o.queue.len(), 0);
    }

    #[test]
    fn a_blocked_socket_keeps_the_rest_a_failed_send_drops_its_datagram() {
        let now = Instant::now();
        let mut o = outbox(&[(1350, 1, now), (1350, 1, now), (1350, 1, now)]);
        let mut n = 0;
        let blocked_second = |_: &[&[u8]], _: SocketAddr, _: usize| {
            n += 1;
            if n == 2 {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(1350)
            }
        };
        assert_eq!(o.send_due(now, false, blocked_second), Sent::Blocked);
        assert_eq!(
            o.queue.len(),
            2,
            "the first went, the second waits for the socket"
        );
        let refused = |_: &[&[u8]], _: SocketAddr, _: usize| -> io::Result<usize> {
            Err(io::ErrorKind::ConnectionRefused.into())
        };
        assert_eq!(o.send_due(now, false, refused), Sent::All);
        assert_eq!(o.queue.len(), 0, "dropped: quiche sends their frames again");
    }

    /// A handshaken quiche pair whose server measured an RTT of at least
    /// `rtt` (each server flight held back that long), and a request on stream
    /// 0 the server answers with up to `body` bytes.
    fn answering(
        tag: &str,
        rtt: Duration,
        body: usize,
    ) -> (quiche::Connection, quiche::Connection) {
        let (dir, cert, key) = cert_files(tag);
        let mut config = server_config(&cert, &key);
        let (mut client, mut server) = pair(&mut config);
        std::fs::remove_dir_all(dir).unwrap();
        while !(client.is_established() && server.is_established()) {
            let sent = deliver(&mut client, &mut server);
            // the server's flight reaches the client `rtt` after it was sent
            let mut flight = Vec::new();
            let mut buf = [0u8; 1350];
            while let Ok((len, info)) = server.send(&mut buf) {
                flight.push((buf[..len].to_vec(), info));
            }
            std::thread::sleep(rtt);
            assert!(sent + flight.len() > 0, "stalled");
            for (mut d, info) in flight {
                let recv = quiche::RecvInfo {
                    from: info.from,
                    to: info.to,
                };
                client.recv(&mut d, recv).unwrap();
            }
        }
        deliver(&mut client, &mut server);
        client.stream_send(0, b"GET", true).unwrap();
        deliver(&mut client, &mut server);
        let mut buf = [0u8; 16];
        assert_eq!(server.stream_recv(0, &mut buf).unwrap(), (3, true));
        // quiche takes as much as its congestion window lets out
        assert!(server.stream_send(0, &vec![7u8; body], true).unwrap() > 0);
        (client, server)
    }

    #[test]
    fn unpaced_the_whole_window_leaves_at_once() {
        let (_client, mut server) = answering("outbox-now", Duration::ZERO, 200_000);
        let mut o = Outbox::new();
        let mut calls = Calls::new();
        assert!(o.flush(&mut server, Release::Now, 1350, false, recorder(&mut calls)));
        // The initial window of 32 packets (crate::connstats::tests's config),
        // less what the handshake used of it: all of it now, nothing queued.
        assert!(calls.len() >= 20, "{}", calls.len());
        assert!(calls
            .iter()
            .all(|(sizes, _, _)| sizes.len() == 1 && sizes[0] <= 1350));
        assert_eq!(o.queue.len(), 0);
        // It stopped because quiche had no more to send: the window is full.
        assert_eq!(server.send(&mut [0u8; 1350]), Err(quiche::Error::Done));
    }

    #[test]
    fn paced_one_datagram_is_held_back_at_the_pacers_rate() {
        let rtt = Duration::from_millis(200);
        let (_client, mut server) = answering("outbox-paced", rtt, 200_000);
        let path = PathView::of(&server).unwrap();
        // (later samples, taken without a delay, bring the smoothed RTT down)
        assert!(path.has_rtt_sample && path.srtt >= rtt / 2, "{path:?}");
        let mut o = Outbox::new();
        let mut calls = Calls::new();
        let t0 = Instant::now();
        assert!(o.flush(
            &mut server,
            Release::Pacer,
            1350,
            false,
            recorder(&mut calls)
        ));
        // Slow start, gain 2: a datagram of LEN bytes every LEN x srtt / (2 x
        // cwnd), 1.5 ms or more for 1350 bytes here; the first leaves at once,
        // the next is queued until its time.
        let sent: usize = calls.iter().map(|(sizes, _, _)| sizes[0]).sum();
        let spacing = path.srtt.mul_f64(sent as f64 / (2.0 * path.cwnd as f64));
        assert!(!calls.is_empty());
        assert!(calls.len() < 20, "{} sent: not paced", calls.len());
        assert_eq!(o.queue.len(), 1, "one datagram waits for its release time");
        let next = o.next_release().unwrap();
        assert!(next > Instant::now(), "held back");
        let earliest = t0 + spacing - crate::pacer::TOLERANCE;
        assert!(next >= earliest, "{:?} early", earliest - next);
        assert!(!o.wants_more(Instant::now()));
        // At its release time it leaves, and the next one is held back again.
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let before = calls.len();
        assert!(o.flush(
            &mut server,
            Release::Pacer,
            1350,
            false,
            recorder(&mut calls)
        ));
        assert!(calls.len() > before);
        assert_eq!(o.queue.len(), 1);
    }

    #[test]
    fn blocked_flush_keeps_quiches_datagrams_for_the_next() {
        let (_client, mut server) = answering("outbox-blocked", Duration::ZERO, 50_000);
        let mut o = Outbox::new();
        let would_block = |_: &[&[u8]], _: SocketAddr, _: usize| -> io::Result<usize> {
            Err(io::ErrorKind::WouldBlock.into())
        };
        assert!(!o.flush(&mut server, Release::Now, 1350, true, would_block));
        let queued = o.queue.len();
        assert!(queued > 1, "{queued}");
        let mut calls = Calls::new();
        assert!(o.flush(&mut server, Release::Now, 1350, true, recorder(&mut calls)));
        // GSO: the queued datagrams of equal size leave in few sendmsgs.
        let sent: usize = calls.iter().map(|(sizes, _, _)| sizes.len()).sum();
        assert!(sent >= queued && calls.len() < sent, "{calls:?}");
        assert_eq!(o.queue.len(), 0);
    }
}
