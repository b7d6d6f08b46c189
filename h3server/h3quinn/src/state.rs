//! What the connections share: the recording, the summary and every
//! connection's tracking, behind one mutex (one thread runs them all), and
//! the task that keeps the summary file current.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use h3replay::recording::Recording;
use h3replay::summary::{Summary, Writer};
use log::error;
use tokio::sync::Notify;

use crate::stats::{self, Figures, Track};

pub struct State {
    pub recording: Arc<Recording>,
    /// Body of every miss, shared.
    pub not_found: Arc<[u8]>,
    /// Announce `alt-svc` on every response.
    pub alt_svc: bool,
    pub cc: &'static str,
    /// Counts without `conns` (made at each write).
    pub summary: Summary,
    pub writer: Writer,
    /// Every connection accepted, in order, and its quinn handle while it
    /// is established and open.
    pub tracks: Vec<Track>,
    pub conns: Vec<Option<quinn::Connection>>,
    /// quinn's figures of each connection as last read (final once it
    /// ended: the handle is then dropped, and quinn frees the connection).
    pub figures: Vec<Figures>,
    /// Woken at every change, for the writer task.
    pub changed: Arc<Notify>,
}

impl State {
    fn touch(&mut self) {
        self.writer.changed(Instant::now());
        self.changed.notify_one();
    }

    /// A connection accepted; its slot.
    pub fn accepted(&mut self, t: Track) -> usize {
        self.tracks.push(t);
        self.conns.push(None);
        self.figures.push(Figures::default());
        self.tracks.len() - 1
    }

    pub fn established(&mut self, slot: usize, conn: quinn::Connection) {
        self.tracks[slot].established = Some(Instant::now());
        self.conns[slot] = Some(conn);
        if self.tracks[slot].requests > 0 {
            self.touch();
        }
    }

    pub fn ended(&mut self, slot: usize) {
        if self.tracks[slot].ended.is_none() {
            self.tracks[slot].ended = Some(Instant::now());
            if let Some(c) = self.conns[slot].take() {
                self.figures[slot] = figures(&c);
            }
            if self.tracks[slot].requests > 0 {
                self.touch();
            }
        }
    }

    /// A request answered on connection `slot` (`miss`: its URL if it was
    /// not in the recording). A connection counts from its first request,
    /// as in h3server, so that readiness probes leave the summary alone.
    pub fn request(&mut self, slot: usize, miss: Option<String>) {
        let t = &mut self.tracks[slot];
        if t.requests == 0 {
            self.summary.connections += 1;
        }
        t.requests += 1;
        self.summary.requests += 1;
        if let Some(url) = miss {
            self.summary.misses += 1;
            self.summary.miss_urls.push(url);
        }
        self.touch();
    }

    /// Body bytes handed to a stream.
    pub fn sent(&mut self, bytes: usize) {
        self.summary.bytes += bytes as u64;
        self.touch();
    }

    /// The summary with every connection that carried a request, as of now.
    pub fn snapshot(&self) -> Summary {
        let now = Instant::now();
        let mut s = self.summary.clone();
        s.conns = self
            .tracks
            .iter()
            .zip(self.conns.iter().zip(&self.figures))
            .filter(|(t, _)| t.requests > 0)
            .map(|(t, (c, last))| {
                let f = c.as_ref().map_or(*last, figures);
                stats::snapshot(t, &f, self.cc, now)
            })
            .collect();
        s
    }

    /// Write the summary if due (or `force`); errors logged.
    pub fn write(&mut self, force: bool) {
        let now = Instant::now();
        if !self.writer.due(now, force) {
            return;
        }
        let s = self.snapshot();
        if let Err(e) = self.writer.maybe_write(&s, now, force) {
            error!("server cannot write the summary: {e}");
        }
    }
}

fn figures(c: &quinn::Connection) -> Figures {
    Figures {
        peer: Some(c.remote_address()),
        stats: c.stats(),
    }
}

/// Keep the summary file current: written when a change is due (at most
/// every 50 ms, h3replay::summary::MAX_DELAY).
pub async fn keep_written(state: Arc<Mutex<State>>) {
    let notify = state.lock().unwrap().changed.clone();
    loop {
        let deadline = state.lock().unwrap().writer.deadline();
        match deadline {
            Some(t) => tokio::time::sleep_until(t.into()).await,
            None => notify.notified().await,
        }
        state.lock().unwrap().write(false);
    }
}
