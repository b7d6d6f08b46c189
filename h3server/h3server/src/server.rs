//! The event loop: one UDP socket per listen address, QUIC connections
//! accepted, fed and closed, their datagrams paced out, the summary kept
//! written (with every connection's figures, crate::connstats) and the
//! statistics logged at exit.
//!
//! One thread, one mio poll. Deadlines (quiche timers, pacing release times,
//! the summary's next write) arm one timerfd, whose nanosecond resolution is
//! what pacing needs (epoll's own timeout has millisecond resolution).
//! SIGINT/SIGTERM arrive on a signalfd: connections are closed, the summary
//! written, and `run` returns.
//!
//! Must not decide anything about HTTP: requests and responses are http.rs's,
//! settings config.rs's, which datagram leaves when and in which sendmsg
//! outbox.rs's (release times pacer.rs's).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{debug, error, info, warn};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::coalesced;
use crate::config::Settings;
use crate::connstats::{ConnStats, Track};
use crate::h3fields;
use crate::http::{Responder, Streams};
use crate::logging::{self, SERVER};
use crate::outbox::{Outbox, Release, QUIC_INTERNAL_ERROR};
use crate::recording::Recording;
use crate::response;
use crate::summary::{self, Summary};
use crate::udp;
use h3replay::Fatal;

const TIMER: Token = Token(usize::MAX - 1);
const SIGNALS: Token = Token(usize::MAX - 2);

/// Length of the connection IDs this server picks. Short-header packets do
/// not carry it, so it is also how much `Header::from_slice` reads as DCID.
const CID_LEN: usize = quiche::MAX_CONN_ID_LEN;
/// Largest UDP datagram read.
const RECV_BUF: usize = 65_535;
/// H3_NO_ERROR, for closing connections at exit.
const H3_NO_ERROR: u64 = 0x100;

struct Socket {
    io: mio::net::UdpSocket,
    local: SocketAddr,
    /// The last send would block: wait for a WRITABLE event.
    blocked: bool,
}

struct Client {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    socket: usize,
    /// Connection IDs routed to this client.
    cids: Vec<Vec<u8>>,
    /// Requests and responses in progress (http.rs).
    streams: Streams,
    /// Datagrams waiting for their release time, and the pacer (outbox.rs).
    out: Outbox,
    /// What the summary shows beside quiche's figures (handshake time, ...).
    track: Track,
}

pub struct Server {
    settings: Settings,
    config: quiche::Config,
    h3_config: quiche::h3::Config,
    recording: Recording,
    not_found: Arc<[u8]>,
    poll: Poll,
    sockets: Vec<Socket>,
    timer: TimerFd,
    signals: SignalFd,
    clients: HashMap<u64, Client>,
    routes: HashMap<Vec<u8>, u64>,
    next_client: u64,
    summary: Summary,
    writer: summary::Writer,
    /// Final figures of the connections gone that carried a request, by client id.
    gone: Vec<(u64, ConnStats)>,
    shutdown: bool,
}

impl Server {
    pub fn new(
        settings: Settings,
        config: quiche::Config,
        recording: Recording,
    ) -> Result<Server, Fatal> {
        let poll = Poll::new().map_err(|e| Fatal::Runtime(format!("epoll: {e}")))?;
        let mut sockets = Vec::new();
        for (i, &addr) in settings.listen.iter().enumerate() {
            let mut io = udp::bind(addr).map_err(|e| {
                Fatal::Runtime(format!("--listen {addr}: cannot bind UDP socket: {e}"))
            })?;
            if settings.gso && !udp::gso_supported(&io) {
                return Err(Fatal::Runtime(format!(
                    "--gso on: the kernel refuses UDP_SEGMENT on {addr}"
                )));
            }
            let local = io
                .local_addr()
                .map_err(|e| Fatal::Runtime(format!("{addr}: {e}")))?;
            poll.registry()
                .register(&mut io, Token(i), Interest::READABLE | Interest::WRITABLE)
                .map_err(|e| Fatal::Runtime(format!("epoll: {e}")))?;
            sockets.push(Socket {
                io,
                local,
                blocked: false,
            });
        }
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(|e| Fatal::Runtime(format!("timerfd: {e}")))?;
        poll.registry()
            .register(
                &mut SourceFd(&timer.as_fd().as_raw_fd()),
                TIMER,
                Interest::READABLE,
            )
            .map_err(|e| Fatal::Runtime(format!("epoll: {e}")))?;
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGINT);
        mask.add(Signal::SIGTERM);
        mask.thread_block()
            .map_err(|e| Fatal::Runtime(format!("sigprocmask: {e}")))?;
        let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| Fatal::Runtime(format!("signalfd: {e}")))?;
        poll.registry()
            .register(
                &mut SourceFd(&signals.as_fd().as_raw_fd()),
                SIGNALS,
                Interest::READABLE,
            )
            .map_err(|e| Fatal::Runtime(format!("epoll: {e}")))?;
        let h3_config =
            quiche::h3::Config::new().map_err(|e| Fatal::Runtime(format!("h3 config: {e}")))?;
        let writer = summary::Writer::new(settings.summary.clone());
        let summary = Summary::new("h3server", crate::VERSION, settings.cc.quiche_name());
        Ok(Server {
            settings,
            config,
            h3_config,
            recording,
            not_found: Arc::from(response::NOT_FOUND),
            poll,
            sockets,
            timer,
            signals,
            clients: HashMap::new(),
            routes: HashMap::new(),
            next_client: 0,
            summary,
            writer,
            gone: Vec::new(),
            shutdown: false,
        })
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets.iter().map(|s| s.local).collect()
    }

    /// Serve until SIGINT or SIGTERM.
    pub fn run(&mut self) -> Result<(), Fatal> {
        self.write_summary(Instant::now(), true)?;
        let mut events = Events::with_capacity(1024);
        let mut buf = vec![0u8; RECV_BUF];
        loop {
            let timeout = self.arm_timer()?;
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fatal::Runtime(format!("epoll_wait: {e}"))),
            }
            for ev in events.iter() {
                match ev.token() {
                    TIMER => {
                        let _ = nix::unistd::read(&self.timer, &mut [0u8; 8]);
                    }
                    SIGNALS => {
                        while let Ok(Some(sig)) = self.signals.read_signal() {
                            info!(
                                "{SERVER} signal {}: closing connections and exiting",
                                sig.ssi_signo
                            );
                            self.shutdown = true;
                        }
                    }
                    Token(i) => {
                        if ev.is_writable() {
                            self.sockets[i].blocked = false;
                        }
                        if ev.is_readable() {
                            self.read_socket(i, &mut buf);
                        }
                    }
                }
            }
            let now = Instant::now();
            for c in self.clients.values_mut() {
                if c.conn.timeout_instant().is_some_and(|t| t <= now) {
                    let _log = logging::scope(c.conn.trace_id());
                    c.conn.on_timeout();
                }
            }
            if self.shutdown {
                return self.close_all();
            }
            let ids: Vec<u64> = self.clients.keys().copied().collect();
            for id in ids {
                self.serve(id);
                self.flush(id, false);
            }
            self.collect_closed();
            self.write_summary(Instant::now(), false)?;
        }
    }

    /// Arm the timer for the earliest deadline; the poll timeout to use.
    fn arm_timer(&mut self) -> Result<Option<Duration>, Fatal> {
        let mut next = self.writer.deadline();
        for c in self.clients.values() {
            let quic = c.conn.timeout_instant();
            let release = if self.sockets[c.socket].blocked {
                None
            } else {
                c.out.next_release()
            };
            for t in [quic, release].into_iter().flatten() {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        }
        let now = Instant::now();
        match next {
            Some(t) if t <= now => Ok(Some(Duration::ZERO)),
            Some(t) => {
                self.timer
                    .set(
                        Expiration::OneShot(TimeSpec::from(t - now)),
                        TimerSetTimeFlags::empty(),
                    )
                    .map_err(|e| Fatal::Runtime(format!("timerfd_settime: {e}")))?;
                Ok(None)
            }
            None => {
                self.timer
                    .unset()
                    .map_err(|e| Fatal::Runtime(format!("timerfd_settime: {e}")))?;
                Ok(None)
            }
        }
    }

    fn read_socket(&mut self, i: usize, buf: &mut [u8]) {
        loop {
            let (len, from) = match self.sockets[i].io.recv_from(buf) {
                Ok(v) => v,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    warn!("{SERVER} recv on {} failed: {e}", self.sockets[i].local);
                    return;
                }
            };
            // Answer each datagram as it is read, as a TCP stack answers each ACK:
            // when a burst of ACKs arrives (Mahimahi's links release them on 1 ms
            // ticks), the first ones open the window for new data at once instead
            // of after the whole burst has been read (qlog: ACK to next packet
            // 5-7 us, against a median of up to ~330 us).
            if let Some(id) = self.handle_datagram(i, from, &mut buf[..len]) {
                self.serve(id);
                self.flush(id, false);
            }
        }
    }

    /// Feed a datagram to its connection (accepting a new one for an Initial);
    /// the connection's id, or None if the datagram was dropped.
    fn handle_datagram(&mut self, sock: usize, from: SocketAddr, pkt: &mut [u8]) -> Option<u64> {
        let local = self.sockets[sock].local;
        let hdr = match quiche::Header::from_slice(pkt, CID_LEN) {
            Ok(h) => h,
            Err(e) => {
                debug!("{SERVER} unparsable packet from {from}: {e}");
                return None;
            }
        };
        let id = match self.routes.get(hdr.dcid.as_ref()) {
            Some(&id) => id,
            None => {
                if hdr.ty != quiche::Type::Initial {
                    debug!(
                        "{SERVER} {:?} packet for unknown connection from {from}",
                        hdr.ty
                    );
                    return None;
                }
                if !quiche::version_is_supported(hdr.version) {
                    let mut out = [0u8; 1350];
                    if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out) {
                        debug!(
                            "{SERVER} version negotiation with {from} (version {:#x})",
                            hdr.version
                        );
                        let _ = self.sockets[sock].io.send_to(&out[..n], from);
                    }
                    return None;
                }
                self.accept(sock, &hdr.dcid, from)?
            }
        };
        let client = self.clients.get_mut(&id).expect("routed client exists");
        let _log = logging::scope(client.conn.trace_id());
        // each coalesced packet on its own: quiche drops a datagram's rest after a
        // packet it cannot decrypt (crate::coalesced)
        for range in coalesced::packets(pkt, CID_LEN) {
            if let Err(e) = client
                .conn
                .recv(&mut pkt[range], quiche::RecvInfo { from, to: local })
            {
                debug!("{} recv failed: {e}", client.conn.trace_id());
            }
        }
        Some(id)
    }

    fn accept(&mut self, sock: usize, odcid: &[u8], from: SocketAddr) -> Option<u64> {
        let local = self.sockets[sock].local;
        let mut scid = [0u8; CID_LEN];
        if let Err(e) = getrandom::fill(&mut scid) {
            error!("{SERVER} no randomness for a connection ID: {e}");
            return None;
        }
        let scid = quiche::ConnectionId::from_ref(&scid);
        let mut conn = match quiche::accept(&scid, None, local, from, &mut self.config) {
            Ok(c) => c,
            Err(e) => {
                warn!("{SERVER} cannot accept connection from {from}: {e}");
                return None;
            }
        };
        let trace_id = conn.trace_id().to_string();
        if let Some(dir) = &self.settings.qlog_dir {
            let path = dir.join(format!("{trace_id}.sqlog"));
            match File::create(&path) {
                Ok(f) => conn.set_qlog(
                    Box::new(BufWriter::new(f)),
                    "h3server".to_string(),
                    format!("h3server {} connection {trace_id}", crate::VERSION),
                ),
                Err(e) => warn!("{trace_id} qlog {} cannot be created: {e}", path.display()),
            }
        }
        if let Some(k) = &self.settings.keylog {
            match k.try_clone() {
                Ok(f) => conn.set_keylog(Box::new(f)),
                Err(e) => warn!("{trace_id} SSLKEYLOGFILE: {e}"),
            }
        }
        let id = self.next_client;
        self.next_client += 1;
        let cids = vec![odcid.to_vec(), scid.to_vec()];
        for cid in &cids {
            self.routes.insert(cid.clone(), id);
        }
        info!("{trace_id} new connection from {from} to {local}");
        let track = Track::new(&conn, Instant::now());
        self.clients.insert(
            id,
            Client {
                conn,
                h3: None,
                socket: sock,
                cids,
                streams: Streams::default(),
                out: Outbox::new(),
                track,
            },
        );
        Some(id)
    }

    /// Start HTTP/3 once established (or in accepted 0-RTT), continue blocked
    /// responses, answer requests.
    fn serve(&mut self, id: u64) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let _log = logging::scope(c.conn.trace_id());
        // Right after the datagram that completes the handshake was fed.
        c.track.update(&c.conn, Instant::now());
        if c.h3.is_none() && (c.conn.is_established() || c.conn.is_in_early_data()) {
            match quiche::h3::Connection::with_transport(&mut c.conn, &self.h3_config) {
                Ok(h3) => {
                    c.h3 = Some(h3);
                    let rtt = c
                        .conn
                        .path_stats()
                        .next()
                        .map(|p| p.rtt)
                        .unwrap_or_default();
                    info!(
                        "{} established: {}, cc {:?}, initial cwnd {} packets, pacing {}, rtt {:?}",
                        c.conn.trace_id(),
                        String::from_utf8_lossy(c.conn.application_proto()),
                        self.settings.cc,
                        self.settings.initial_cwnd_packets,
                        if self.settings.pacing { "on" } else { "off" },
                        rtt
                    );
                }
                Err(e) => {
                    error!("{} cannot start HTTP/3: {e}", c.conn.trace_id());
                    let _ = c.conn.close(false, QUIC_INTERNAL_ERROR, b"h3 setup failed");
                    return;
                }
            }
        }
        let alt_svc = self
            .settings
            .alt_svc
            .then(|| h3fields::header(&response::alt_svc(self.sockets[c.socket].local.port())));
        let Client {
            conn, h3, streams, ..
        } = c;
        let Some(h3) = h3.as_mut() else { return };
        let mut responder = Responder {
            recording: &self.recording,
            not_found: &self.not_found,
            alt_svc,
            summary: &mut self.summary,
            writer: &mut self.writer,
        };
        streams.serve(conn, h3, &mut responder);
    }

    /// Send what is due: everything when pacing is off (or `now_all`),
    /// otherwise each datagram at its release time (outbox.rs decides).
    fn flush(&mut self, id: u64, now_all: bool) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let _log = logging::scope(c.conn.trace_id());
        let sock = &mut self.sockets[c.socket];
        if sock.blocked {
            return;
        }
        let s = &self.settings;
        let release = Release::of(s.pacing, s.cc, now_all);
        let io = &sock.io;
        let sent = c.out.flush(
            &mut c.conn,
            release,
            s.max_udp_payload,
            s.gso,
            |bufs, to, segment| udp::send(io, bufs, to, segment),
        );
        if !sent {
            sock.blocked = true;
        }
    }

    /// Note every connection that is over (its figures final from then on)
    /// and drop the closed ones, keeping their final figures for the summary.
    fn collect_closed(&mut self) {
        let now = Instant::now();
        for c in self.clients.values_mut() {
            if c.track.update(&c.conn, now) && c.streams.requests() > 0 {
                self.writer.changed(now);
            }
        }
        let closed: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.conn.is_closed())
            .map(|(&id, _)| id)
            .collect();
        for id in closed {
            let c = self.clients.remove(&id).expect("listed");
            for cid in &c.cids {
                self.routes.remove(cid);
            }
            if c.streams.requests() > 0 {
                let cc = self.settings.cc.quiche_name();
                self.gone
                    .push((id, c.track.snapshot(&c.conn, cc, c.streams.requests(), now)));
            }
            let s = c.conn.stats();
            let why = match (c.conn.peer_error(), c.conn.local_error()) {
                (Some(e), _) => format!("by peer (error {:#x})", e.error_code),
                (_, Some(e)) => format!("locally (error {:#x})", e.error_code),
                _ if c.conn.is_timed_out() => "idle timeout".to_string(),
                _ => "silently".to_string(),
            };
            info!(
                "{} closed {why}: sent {} packets ({} bytes), received {}, lost {}",
                c.conn.trace_id(),
                s.sent,
                s.sent_bytes,
                s.recv,
                s.lost
            );
        }
    }

    fn close_all(&mut self) -> Result<(), Fatal> {
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            if let Some(c) = self.clients.get_mut(&id) {
                let _ = c.conn.close(true, H3_NO_ERROR, b"server exiting");
            }
            if let Some(c) = self.clients.get(&id) {
                self.sockets[c.socket].blocked = false;
            }
            self.flush(id, true);
        }
        self.collect_closed();
        self.write_summary(Instant::now(), true)?;
        info!(
            "{SERVER} exit: {} requests, {} misses, {} bytes, {} connections",
            self.summary.requests,
            self.summary.misses,
            self.summary.bytes,
            self.summary.connections
        );
        Ok(())
    }

    fn write_summary(&mut self, now: Instant, force: bool) -> Result<(), Fatal> {
        if self.writer.due(now, force) {
            self.refresh_conns(now);
        }
        match self.writer.maybe_write(&self.summary, now, force) {
            Ok(_) => Ok(()),
            Err(e) => {
                let path = self
                    .settings
                    .summary
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                Err(Fatal::Runtime(format!(
                    "{path}: cannot write the summary: {e}"
                )))
            }
        }
    }

    /// The summary's `conns`: the final figures of the connections gone and
    /// the current ones of those open, every one that carried a request, in
    /// the order they were accepted.
    fn refresh_conns(&mut self, now: Instant) {
        let cc = self.settings.cc.quiche_name();
        let mut all: Vec<(u64, ConnStats)> = self.gone.clone();
        all.extend(
            self.clients
                .iter()
                .filter(|(_, c)| c.streams.requests() > 0)
                .map(|(&id, c)| (id, c.track.snapshot(&c.conn, cc, c.streams.requests(), now))),
        );
        all.sort_by_key(|(id, _)| *id);
        self.summary.conns = all.into_iter().map(|(_, s)| s).collect();
    }
}
