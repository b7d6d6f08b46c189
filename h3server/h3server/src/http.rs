//! HTTP/3 on one established connection: every request matched to the
//! recording (a recorded exchange, or a 404 counted as a miss), its response
//! headers (response.rs, plus `alt-svc` when announced) and body handed to
//! quiche stream by stream as far as flow control takes them, the rest
//! resumed when the stream is writable again; PRIORITY_UPDATEs applied;
//! requests, misses, bytes and connections counted in the summary.
//!
//! Must not touch sockets, timers or other connections, nor accept or close
//! one (the event loop, server.rs, does), nor decide what a response's
//! headers say (response.rs does).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use log::{debug, error, info, trace, warn};
use quiche::h3::{Header, NameValue};

use crate::h3fields;
use crate::h3priority::QuichePriority;
use crate::matching;
use crate::priority::Priority;
use crate::recording::Recording;
use crate::response;
use crate::summary::{self, Summary};

/// What answering requests needs from the server, lent for one call.
pub struct Responder<'a> {
    pub recording: &'a Recording,
    /// Body of every miss (response::NOT_FOUND), shared.
    pub not_found: &'a Arc<[u8]>,
    /// Added to every response when the server announces itself
    /// (response::alt_svc for the port the connection came in on).
    pub alt_svc: Option<Header>,
    pub summary: &'a mut Summary,
    /// Told whenever the summary changes.
    pub writer: &'a mut summary::Writer,
}

/// The HTTP/3 state of one connection beside quiche's own.
#[derive(Default)]
pub struct Streams {
    /// Responses not yet entirely handed to quiche, by stream.
    pending: HashMap<u64, Pending>,
    /// Requests answered on this connection (it is in the summary's count
    /// from its first).
    requests: u64,
}

/// A response not yet entirely handed to quiche.
struct Pending {
    /// Headers still to send (the stream was blocked).
    headers: Option<Vec<Header>>,
    body: Arc<[u8]>,
    /// Whether the body goes out (not for HEAD, 1xx, 204, 304).
    with_body: bool,
    written: usize,
    priority: Priority,
}

impl Streams {
    /// Requests answered on this connection so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Continue the responses whose streams are writable again, then answer
    /// every request and handle every event quiche has for this connection.
    pub fn serve(
        &mut self,
        conn: &mut quiche::Connection,
        h3: &mut quiche::h3::Connection,
        r: &mut Responder,
    ) {
        let Streams { pending, requests } = self;
        let writable: Vec<u64> = conn
            .writable()
            .filter(|s| pending.contains_key(s))
            .collect();
        for stream in writable {
            let p = pending.get_mut(&stream).expect("filtered");
            match advance(conn, h3, stream, p, r.summary) {
                Ok(true) => {
                    pending.remove(&stream);
                    r.writer.changed(Instant::now());
                }
                Ok(false) => {}
                Err(e) => {
                    debug!(
                        "{} stream {stream}: response abandoned: {e}",
                        conn.trace_id()
                    );
                    pending.remove(&stream);
                }
            }
        }
        let mut scratch = [0u8; 16 * 1024];
        loop {
            match h3.poll(conn) {
                Ok((stream, quiche::h3::Event::Headers { list, .. })) => {
                    let now = Instant::now();
                    if *requests == 0 {
                        // Counted at its first request, so that readiness
                        // probes (handshake only) leave the summary alone.
                        r.summary.connections += 1;
                        if conn.is_resumed() || conn.is_in_early_data() {
                            r.summary.resumed += 1;
                        }
                    }
                    if conn.is_in_early_data() {
                        r.summary.early_data += 1;
                    }
                    *requests += 1;
                    let mut p = r.answer(conn.trace_id(), stream, &list);
                    r.writer.changed(now);
                    match advance(conn, h3, stream, &mut p, r.summary) {
                        Ok(true) => {}
                        Ok(false) => {
                            pending.insert(stream, p);
                        }
                        Err(e) => debug!(
                            "{} stream {stream}: response abandoned: {e}",
                            conn.trace_id()
                        ),
                    }
                }
                Ok((stream, quiche::h3::Event::Data)) => {
                    // Request bodies are not part of the matching rule: drain them.
                    while let Ok(n) = h3.recv_body(conn, stream, &mut scratch) {
                        trace!(
                            "{} stream {stream}: {n} request body bytes ignored",
                            conn.trace_id()
                        );
                    }
                }
                Ok((_, quiche::h3::Event::Finished)) => {}
                Ok((stream, quiche::h3::Event::Reset(code))) => {
                    debug!(
                        "{} stream {stream} reset by the client ({code:#x})",
                        conn.trace_id()
                    );
                    pending.remove(&stream);
                }
                Ok((stream, quiche::h3::Event::PriorityUpdate)) => {
                    let Ok(value) = h3.take_last_priority_update(stream) else {
                        continue;
                    };
                    let Some(prio) = Priority::parse(&value) else {
                        continue;
                    };
                    trace!(
                        "{} stream {stream}: priority update {prio:?}",
                        conn.trace_id()
                    );
                    match pending.get_mut(&stream) {
                        Some(p) if p.headers.is_some() => p.priority = prio,
                        _ => {
                            let _ = prio.apply(conn, stream);
                        }
                    }
                }
                Ok((_, quiche::h3::Event::GoAway)) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(e) => {
                    // quiche closes the connection itself on fatal errors.
                    error!("{} HTTP/3 error: {e}", conn.trace_id());
                    break;
                }
            }
        }
    }
}

impl Responder<'_> {
    /// Decide the response to a request on connection `trace_id` (a recorded
    /// exchange or a 404) and count it.
    fn answer(&mut self, trace_id: &str, stream: u64, list: &[Header]) -> Pending {
        let mut method = String::new();
        let mut scheme = String::new();
        let mut authority = None;
        let mut host = None;
        let mut target = String::new();
        let mut priority = Priority::default();
        for h in list {
            let v = || String::from_utf8_lossy(h.value()).into_owned();
            match h.name() {
                b":method" => method = v(),
                b":scheme" => scheme = v(),
                b":authority" => authority = Some(v()),
                b":path" => target = v(),
                b"host" => host = Some(v()),
                b"priority" => priority = Priority::parse(h.value()).unwrap_or_default(),
                _ => {}
            }
        }
        let authority = authority.or(host).unwrap_or_default();
        let req = matching::Request {
            scheme: &scheme,
            authority: &authority,
            method: &method,
            target: &target,
        };
        let url = format!("{scheme}://{authority}{target}");
        let is_head = method == "HEAD";
        self.summary.requests += 1;
        let (mut headers, body, with_body) = match self.recording.find(&req) {
            Some(x) => {
                info!(
                    "{trace_id} stream {stream}: {method} {url} -> {} ({} bytes)",
                    x.status,
                    x.body.len()
                );
                (
                    h3fields::headers(&response::headers(x)),
                    x.body.clone(),
                    !is_head && response::has_content(x.status),
                )
            }
            None => {
                warn!("{trace_id} stream {stream}: {method} {url} -> 404 (not in the recording)");
                self.summary.misses += 1;
                self.summary.miss_urls.push(url);
                (
                    h3fields::headers(&response::not_found()),
                    self.not_found.clone(),
                    !is_head,
                )
            }
        };
        if let Some(h) = &self.alt_svc {
            headers.push(h.clone());
        }
        Pending {
            headers: Some(headers),
            body,
            with_body,
            written: 0,
            priority,
        }
    }
}

/// Hand as much of a response to quiche as it takes; Ok(true) when all of it.
fn advance(
    conn: &mut quiche::Connection,
    h3: &mut quiche::h3::Connection,
    stream: u64,
    p: &mut Pending,
    summary: &mut Summary,
) -> Result<bool, quiche::h3::Error> {
    let no_body = !p.with_body || p.body.is_empty();
    if let Some(headers) = &p.headers {
        match h3.send_response_with_priority(conn, stream, headers, &p.priority.h3(), no_body) {
            Ok(()) => p.headers = None,
            Err(quiche::h3::Error::StreamBlocked) => return Ok(false),
            Err(e) => return Err(e),
        }
        if no_body {
            return Ok(true);
        }
    }
    match h3.send_body(conn, stream, &p.body[p.written..], true) {
        Ok(n) => {
            p.written += n;
            summary.bytes += n as u64;
        }
        Err(quiche::h3::Error::Done) => {}
        Err(e) => return Err(e),
    }
    Ok(p.written == p.body.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::Exchange;

    const ID: &str = "0123456789abcdef0123";

    fn recording() -> Recording {
        let exchange = |target: &str, status: u16, body: &[u8]| Exchange {
            key: matching::Key {
                scheme: "https".into(),
                host: "a.test".into(),
                method: "GET".into(),
                target: target.into(),
            },
            status,
            response_headers: vec![("content-type".into(), "text/html".into())],
            body: Arc::from(body.to_vec()),
        };
        let exchanges = vec![exchange("/", 200, b"hello"), exchange("/gone", 304, b"")];
        Recording {
            path: "r".into(),
            name: "t".into(),
            index: matching::Index::new(exchanges.iter().map(|x| &x.key)),
            exchanges,
            body_bytes: 5,
        }
    }

    fn request(method: &str, target: &str) -> Vec<Header> {
        vec![
            Header::new(b":method", method.as_bytes()),
            Header::new(b":scheme", b"https"),
            Header::new(b":authority", b"a.test:443"),
            Header::new(b":path", target.as_bytes()),
            Header::new(b"priority", b"u=1, i"),
        ]
    }

    fn names(p: &Pending) -> Vec<String> {
        p.headers
            .iter()
            .flatten()
            .map(|h| String::from_utf8_lossy(h.name()).into_owned())
            .collect()
    }

    /// The responses to `requests` (method, target), in order, on a fresh
    /// summary, and that summary.
    fn answer_all(alt_svc: Option<Header>, requests: &[(&str, &str)]) -> (Vec<Pending>, Summary) {
        let rec = recording();
        let not_found: Arc<[u8]> = Arc::from(response::NOT_FOUND);
        let mut summary = Summary::new("h3server", crate::VERSION, "cubic");
        let mut writer = summary::Writer::new(None);
        let mut r = Responder {
            recording: &rec,
            not_found: &not_found,
            alt_svc,
            summary: &mut summary,
            writer: &mut writer,
        };
        let streams = (0u64..).step_by(4);
        let out = streams
            .zip(requests)
            .map(|(stream, (m, t))| r.answer(ID, stream, &request(m, t)))
            .collect();
        (out, summary)
    }

    #[test]
    fn answers_from_the_recording_and_counts() {
        let requests = [
            ("GET", "/?v=2"),
            ("HEAD", "/"),
            ("GET", "/gone"),
            ("GET", "/nothing"),
        ];
        let (out, summary) =
            answer_all(Some(h3fields::header(&response::alt_svc(4433))), &requests);
        let [hit, head, not_modified, miss] = &out[..] else {
            panic!("{} responses", out.len())
        };
        let statuses: Vec<String> = out
            .iter()
            .map(|p| String::from_utf8_lossy(p.headers.as_ref().unwrap()[0].value()).into_owned())
            .collect();
        assert_eq!(statuses, ["200", "404", "304", "404"]);
        assert_eq!(&*hit.body, b"hello");
        assert!(hit.with_body);
        assert_eq!(
            hit.priority,
            Priority {
                urgency: 1,
                incremental: true
            }
        );
        assert_eq!(
            names(hit),
            [":status", "content-type", "content-length", "alt-svc"]
        );
        // Not recorded with HEAD: a miss, but a HEAD's, without body.
        assert!(!head.with_body);
        assert!(!not_modified.with_body);
        assert_eq!(&*miss.body, response::NOT_FOUND);
        assert!(miss.with_body);
        assert_eq!(names(miss).last().map(String::as_str), Some("alt-svc"));
        assert_eq!(summary.requests, 4);
        assert_eq!(summary.misses, 2);
        assert_eq!(
            summary.miss_urls,
            ["https://a.test:443/", "https://a.test:443/nothing"]
        );
        // Body bytes count when handed to quiche, not when decided.
        assert_eq!(summary.bytes, 0);
    }

    #[test]
    fn no_alt_svc_unless_announced() {
        let (out, _) = answer_all(None, &[("GET", "/"), ("GET", "/nothing")]);
        assert_eq!(out.len(), 2);
        for p in &out {
            assert!(!names(p).iter().any(|n| n == "alt-svc"), "{:?}", names(p));
        }
    }
}
