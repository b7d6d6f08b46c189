//! h3bulk: GETs one URL over HTTP/3 on one connection, again and again (at
//! least --count times and for --seconds), and discards the bodies; prints
//! what the transfer cost the client as JSON.
//!
//! The client of bench/sender (README, "Sender efficiency"): it must not be
//! the bottleneck, so it measures its own CPU time (getrusage) over the
//! transfer, from the first request to the last body byte.
//!
//! quiche acknowledges whatever arrived each time the application calls
//! `send()`; it has no ACK timer or ACK-frequency setting of its own (its
//! max_ack_delay and ack_delay_exponent only describe the delay to the peer).
//! So this client decides when to acknowledge, as a receiver's ACK policy
//! does: after every `--ack-every`-th datagram, every 2nd before
//! `--ack-decimation-after` datagrams have arrived, and at the latest
//! `--ack-delay-rtt` x min RTT (capped at `--max-ack-delay-ms`) after the
//! first datagram not yet acknowledged. Chromium's policy: 2 then 10 after
//! 100 packets, a quarter of the min RTT, 25 ms cap.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Parser;
use mio::{Events, Interest, Poll, Token};
use quiche::h3::NameValue;
use serde::Serialize;

const SOCKET: Token = Token(0);
/// Datagrams read between two passes over the HTTP/3 events.
const READ_BATCH: usize = 32;
/// Receive buffer asked for (capped at net.core.rmem_max).
const RCVBUF: usize = 8 << 20;

/// GET a URL over HTTP/3 COUNT times on one connection, discarding the bodies.
#[derive(Parser, Debug)]
#[command(name = "h3bulk", version)]
struct Args {
    /// Server address.
    #[arg(long, value_name = "IP:PORT")]
    connect: SocketAddr,
    /// Host name for SNI and :authority.
    #[arg(long, value_name = "NAME")]
    host: String,
    /// Request path.
    #[arg(long, default_value = "/")]
    path: String,
    /// At least this many GETs, one after the other. Defaults to 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    count: u32,
    /// And GET again until this many seconds have passed since the first
    /// request. Defaults to 0.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    seconds: f64,
    /// Acknowledge every N-th datagram (after the decimation point). Defaults to 2.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    ack_every: u64,
    /// Datagrams received before --ack-every applies (every 2nd before). Defaults to 0.
    #[arg(long, value_name = "PACKETS", default_value_t = 0)]
    ack_decimation_after: u64,
    /// Longest an unacknowledged datagram waits, as a fraction of the min RTT. Defaults to 0.25.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.25)]
    ack_delay_rtt: f64,
    /// Cap of that wait, ms. Defaults to 25 (QUIC's default max_ack_delay).
    #[arg(long, value_name = "MS", default_value_t = 25)]
    max_ack_delay_ms: u64,
    /// Largest UDP payload this client sends. Defaults to 1350 (Chromium's).
    #[arg(long, value_name = "BYTES", default_value_t = 1350)]
    max_udp_payload: usize,
    /// Give up after this many seconds. Defaults to 120.
    #[arg(long, value_name = "S", default_value_t = 120)]
    timeout: u64,
}

#[derive(Serialize, Default)]
struct Report {
    requests: u32,
    bytes: u64,
    /// From the first request sent to the last body byte read.
    seconds: f64,
    /// This process's user+system CPU time over the same span.
    cpu_seconds: f64,
    handshake_ms: f64,
    /// Datagrams received and packets sent (almost all ACK-only) over the
    /// connection, by quiche's counts.
    recv_packets: usize,
    sent_packets: usize,
    /// Packets this client saw lost (its own).
    lost_packets: usize,
    min_rtt_ms: f64,
    /// The largest UDP payload the server sent.
    max_datagram: usize,
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct Acks {
    every: u64,
    decimation_after: u64,
    delay_rtt: f64,
    max_delay: Duration,
    received: u64,
    unacked: u64,
    first_unacked: Option<Instant>,
}

impl Acks {
    fn threshold(&self) -> u64 {
        if self.received < self.decimation_after {
            2
        } else {
            self.every
        }
    }

    /// A datagram arrived; whether to acknowledge now.
    fn on_datagram(&mut self, now: Instant) -> bool {
        self.received += 1;
        self.unacked += 1;
        self.first_unacked.get_or_insert(now);
        self.unacked >= self.threshold()
    }

    fn acked(&mut self) {
        self.unacked = 0;
        self.first_unacked = None;
    }

    fn deadline(&self, min_rtt: Option<Duration>) -> Option<Instant> {
        let delay = min_rtt.map_or(self.max_delay, |r| {
            r.mul_f64(self.delay_rtt).min(self.max_delay)
        });
        self.first_unacked.map(|t| t + delay)
    }
}

fn main() {
    let args = Args::parse();
    match run(&args) {
        Ok(r) => println!("{}", serde_json::to_string(&r).expect("plain struct")),
        Err(e) => {
            eprintln!("h3bulk: {e}");
            std::process::exit(1);
        }
    }
}

fn config(args: &Args) -> Result<quiche::Config, String> {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|e| e.to_string())?;
    c.verify_peer(false);
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .map_err(|e| e.to_string())?;
    c.set_max_idle_timeout(30_000);
    c.set_max_send_udp_payload_size(args.max_udp_payload);
    c.set_max_recv_udp_payload_size(65_527);
    // Flow control never limits the sender, and never needs an update: quiche
    // sends MAX_(STREAM_)DATA only from send(), which this client calls when
    // its ACK policy says, so windows it had to reopen would stall the sender.
    c.set_initial_max_data(1 << 40);
    c.set_initial_max_stream_data_bidi_local(1 << 36);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_disable_active_migration(true);
    Ok(c)
}

struct Client {
    sock: mio::net::UdpSocket,
    conn: quiche::Connection,
    out: Vec<u8>,
    local: SocketAddr,
    started: Instant,
}

impl Client {
    /// Send everything quiche has (ACKs, flow control, requests).
    fn flush(&mut self) -> Result<(), String> {
        loop {
            let (len, info) = match self.conn.send(&mut self.out) {
                Ok(v) => v,
                Err(quiche::Error::Done) => return Ok(()),
                Err(e) => return Err(format!("send: {e}")),
            };
            loop {
                match self.sock.send_to(&self.out[..len], info.to) {
                    Ok(_) => break,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) => return Err(format!("sendto {}: {e}", info.to)),
                }
            }
        }
    }
}

fn run(args: &Args) -> Result<Report, String> {
    let mut cfg = config(args)?;
    let bind: SocketAddr = if args.connect.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .expect("literal");
    let std_sock = std::net::UdpSocket::bind(bind).map_err(|e| format!("bind: {e}"))?;
    std_sock
        .connect(args.connect)
        .map_err(|e| format!("connect {}: {e}", args.connect))?;
    std_sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let _ = nix::sys::socket::setsockopt(&std_sock, nix::sys::socket::sockopt::RcvBuf, &RCVBUF);
    let local = std_sock.local_addr().map_err(|e| e.to_string())?;
    let mut sock = mio::net::UdpSocket::from_std(std_sock);
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    poll.registry()
        .register(&mut sock, SOCKET, Interest::READABLE)
        .map_err(|e| e.to_string())?;

    let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
    getrandom::fill(&mut scid).map_err(|e| e.to_string())?;
    let scid = quiche::ConnectionId::from_ref(&scid);
    let conn = quiche::connect(Some(&args.host), &scid, local, args.connect, &mut cfg)
        .map_err(|e| format!("connect: {e}"))?;
    let mut c = Client {
        sock,
        conn,
        out: vec![0u8; 65_535],
        local,
        started: Instant::now(),
    };
    let mut acks = Acks {
        every: args.ack_every,
        decimation_after: args.ack_decimation_after,
        delay_rtt: args.ack_delay_rtt,
        max_delay: Duration::from_millis(args.max_ack_delay_ms),
        received: 0,
        unacked: 0,
        first_unacked: None,
    };
    let give_up = c.started + Duration::from_secs(args.timeout);
    c.flush()?;

    let h3_config = quiche::h3::Config::new().map_err(|e| e.to_string())?;
    let mut h3: Option<quiche::h3::Connection> = None;
    let req = vec![
        quiche::h3::Header::new(b":method", b"GET"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", args.host.as_bytes()),
        quiche::h3::Header::new(b":path", args.path.as_bytes()),
        quiche::h3::Header::new(b"user-agent", b"h3bulk"),
    ];
    let mut report = Report::default();
    let mut body = vec![0u8; 1 << 20];
    let mut buf = vec![0u8; 65_535];
    let mut events = Events::with_capacity(64);
    let mut t0: Option<(Instant, f64)> = None;
    let mut done = 0u32;
    let mut finished = false;
    let mut status_ok = true;

    loop {
        let now = Instant::now();
        if now > give_up {
            return Err(format!("no end after {} s ({done} bodies)", args.timeout));
        }
        let min_rtt = c.conn.path_stats().next().and_then(|p| p.min_rtt);
        let deadlines = [
            c.conn.timeout_instant(),
            acks.deadline(min_rtt),
            Some(give_up),
        ];
        let next = deadlines
            .into_iter()
            .flatten()
            .min()
            .expect("give_up is set");
        let timeout = next.saturating_duration_since(now);
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        // Read until the socket is empty, acknowledging as the policy says.
        'read: loop {
            for _ in 0..READ_BATCH {
                let (len, from) = match c.sock.recv_from(&mut buf) {
                    Ok(v) => v,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break 'read,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("recv: {e}")),
                };
                report.max_datagram = report.max_datagram.max(len);
                let info = quiche::RecvInfo { from, to: c.local };
                if let Err(e) = c.conn.recv(&mut buf[..len], info) {
                    if e != quiche::Error::Done {
                        return Err(format!("quiche recv: {e}"));
                    }
                }
                let established = c.conn.is_established();
                if acks.on_datagram(Instant::now()) || !established {
                    c.flush()?;
                    acks.acked();
                }
            }
            read_bodies(
                &mut c,
                &mut h3,
                &h3_config,
                &req,
                &mut body,
                args,
                &mut report,
                &mut t0,
                &mut done,
                &mut finished,
                &mut status_ok,
            )?;
        }
        if c.conn
            .timeout_instant()
            .is_some_and(|t| t <= Instant::now())
        {
            // A loss probe (PTO) or retransmission quiche decides on here
            // leaves only through send(): without this flush a lost request
            // waited for the next datagram from the server, which, with
            // nothing in flight, never came.
            c.conn.on_timeout();
            c.flush()?;
        }
        read_bodies(
            &mut c,
            &mut h3,
            &h3_config,
            &req,
            &mut body,
            args,
            &mut report,
            &mut t0,
            &mut done,
            &mut finished,
            &mut status_ok,
        )?;
        if !status_ok {
            return Err("the server answered with a status other than 200".into());
        }
        if finished {
            let (start, cpu0) = t0.expect("requests were sent");
            report.seconds = start.elapsed().as_secs_f64();
            report.cpu_seconds = cpu_seconds() - cpu0;
            let s = c.conn.stats();
            report.recv_packets = s.recv;
            report.sent_packets = s.sent;
            report.lost_packets = s.lost;
            report.min_rtt_ms = min_rtt.map_or(0.0, |r| r.as_secs_f64() * 1e3);
            let _ = c.conn.close(true, 0x100, b"done");
            c.flush()?;
            return Ok(report);
        }
        let due = acks.deadline(min_rtt).is_some_and(|t| t <= Instant::now());
        if due || c.conn.is_closed() || !c.conn.is_established() {
            c.flush()?;
            acks.acked();
        }
        if c.conn.is_closed() {
            return Err(format!(
                "connection closed early ({done} bodies, {} bytes, after {:?}): peer error {:?}, local error {:?}, timed out {}",
                report.bytes, c.started.elapsed(), c.conn.peer_error(), c.conn.local_error(), c.conn.is_timed_out()
            ));
        }
    }
}

/// Start HTTP/3 once established, read every body byte there is, send the
/// next request when a response ends.
#[allow(clippy::too_many_arguments)]
fn read_bodies(
    c: &mut Client,
    h3: &mut Option<quiche::h3::Connection>,
    h3_config: &quiche::h3::Config,
    req: &[quiche::h3::Header],
    body: &mut [u8],
    args: &Args,
    report: &mut Report,
    t0: &mut Option<(Instant, f64)>,
    done: &mut u32,
    finished: &mut bool,
    status_ok: &mut bool,
) -> Result<(), String> {
    if h3.is_none() && c.conn.is_established() {
        report.handshake_ms = c.started.elapsed().as_secs_f64() * 1e3;
        let mut h = quiche::h3::Connection::with_transport(&mut c.conn, h3_config)
            .map_err(|e| format!("h3: {e}"))?;
        *t0 = Some((Instant::now(), cpu_seconds()));
        h.send_request(&mut c.conn, req, true)
            .map_err(|e| format!("request: {e}"))?;
        report.requests += 1;
        *h3 = Some(h);
        c.flush()?;
    }
    let Some(h) = h3.as_mut() else { return Ok(()) };
    loop {
        match h.poll(&mut c.conn) {
            Ok((_, quiche::h3::Event::Headers { list, .. })) => {
                let status = list
                    .iter()
                    .find(|x| x.name() == b":status")
                    .map(|x| x.value().to_vec());
                if status.as_deref() != Some(b"200".as_slice()) {
                    *status_ok = false;
                }
            }
            Ok((sid, quiche::h3::Event::Data)) => {
                while let Ok(n) = h.recv_body(&mut c.conn, sid, body) {
                    report.bytes += n as u64;
                }
            }
            Ok((_, quiche::h3::Event::Finished)) => {
                *done += 1;
                let elapsed = t0.map_or(0.0, |(t, _)| t.elapsed().as_secs_f64());
                if *done < args.count || elapsed < args.seconds {
                    h.send_request(&mut c.conn, req, true)
                        .map_err(|e| format!("request: {e}"))?;
                    report.requests += 1;
                    c.flush()?;
                } else {
                    *finished = true;
                }
            }
            Ok((sid, quiche::h3::Event::Reset(code))) => {
                return Err(format!(
                    "stream {sid} reset by the server (error {code:#x})"
                ));
            }
            Ok(_) => {}
            Err(quiche::h3::Error::Done) => return Ok(()),
            Err(e) => return Err(format!("h3: {e}")),
        }
    }
}
