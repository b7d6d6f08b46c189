//! HTTP/3 over one quinn connection: every request matched to the recording
//! (the shared library h3replay: a recorded exchange, or a 404 counted as a miss),
//! its headers (the library's response.rs, plus `alt-svc` when announced)
//! and body sent; requests, misses, bytes and connections counted in the
//! shared state.
//!
//! Priorities: the request's `priority` header (RFC 9218, the library's
//! priority.rs) sets the response stream's quinn send priority
//! (transport.rs): more urgent responses go first. What differs from
//! h3server (quiche): quinn round-robins streams of the same urgency whether
//! or not they are incremental (quiche sends non-incremental ones one after
//! the other), and h3 does not hand PRIORITY_UPDATE frames to the server, so
//! a priority changed after the request is not applied.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use h3replay::matching;
use h3replay::priority::Priority;
use h3replay::response::{self, Field};
use log::{debug, info, warn};

use crate::state::State;
use crate::transport::{quinn_priority, Conn, Priorities};

/// A decided response: headers, body, whether the body goes out.
pub struct Answer {
    pub status: u16,
    pub fields: Vec<Field>,
    pub body: Arc<[u8]>,
    pub with_body: bool,
    pub miss: Option<String>,
    pub priority: Priority,
}

/// What a request says, as h3 parsed it.
pub struct Asked<'a> {
    pub method: &'a str,
    pub scheme: &'a str,
    pub authority: &'a str,
    pub target: &'a str,
    pub priority: Option<&'a [u8]>,
}

/// The response to a request: the recording's, or a 404 (a miss).
pub fn answer(
    rec: &h3replay::recording::Recording,
    not_found: &Arc<[u8]>,
    alt_svc_port: Option<u16>,
    asked: &Asked,
) -> Answer {
    let req = matching::Request {
        scheme: asked.scheme,
        authority: asked.authority,
        method: asked.method,
        target: asked.target,
    };
    let is_head = asked.method == "HEAD";
    let priority = asked.priority.and_then(Priority::parse).unwrap_or_default();
    let mut a = match rec.find(&req) {
        Some(x) => Answer {
            status: x.status,
            fields: response::headers(x),
            body: x.body.clone(),
            with_body: !is_head && response::has_content(x.status),
            miss: None,
            priority,
        },
        None => Answer {
            status: 404,
            fields: response::not_found(),
            body: not_found.clone(),
            with_body: !is_head,
            miss: Some(format!(
                "{}://{}{}",
                asked.scheme, asked.authority, asked.target
            )),
            priority,
        },
    };
    if let Some(port) = alt_svc_port {
        a.fields.push(response::alt_svc(port));
    }
    a
}

/// The fields as an http::Response (its status from `:status`). A field
/// that http cannot carry (a value with control characters) is left out
/// with a warning; h3 sends the rest in HeaderMap order (grouped by name).
pub fn http_response(conn: &str, a: &Answer) -> http::Response<()> {
    let mut r = http::Response::builder().status(a.status);
    for (n, v) in &a.fields {
        if n.starts_with(b":") {
            continue;
        }
        match (
            http::HeaderName::from_bytes(n),
            http::HeaderValue::from_bytes(v),
        ) {
            (Ok(n), Ok(v)) => r = r.header(n, v),
            _ => warn!(
                "{conn} header {} left out: http cannot carry it",
                String::from_utf8_lossy(n)
            ),
        }
    }
    r.body(())
        .unwrap_or_else(|_| http::Response::builder().status(500).body(()).unwrap())
}

/// Serve every request of one established connection until it ends.
pub async fn connection(
    conn: quinn::Connection,
    slot: usize,
    local: SocketAddr,
    state: Arc<Mutex<State>>,
) {
    let tag = state.lock().unwrap().tracks[slot].id.clone();
    // No GREASE frames or streams: aioquic, one of the test clients, stalls
    // on a response stream that carries one, and h3server sends none.
    let priorities = Priorities::default();
    let mut h3conn = match h3::server::builder()
        .send_grease(false)
        .build::<_, Bytes>(Conn::new(conn.clone(), priorities.clone()))
        .await
    {
        Ok(c) => c,
        Err(e) => {
            warn!("{tag} cannot start HTTP/3: {e}");
            return;
        }
    };
    loop {
        match h3conn.accept().await {
            Ok(Some(resolver)) => {
                let state = state.clone();
                let tag = tag.clone();
                let priorities = priorities.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else {
                        return;
                    };
                    let id = stream.id();
                    let (rec, not_found, alt_svc) = {
                        let s = state.lock().unwrap();
                        (s.recording.clone(), s.not_found.clone(), s.alt_svc)
                    };
                    let uri = req.uri();
                    let authority = uri
                        .authority()
                        .map(|a| a.as_str().to_string())
                        .or_else(|| {
                            req.headers()
                                .get(http::header::HOST)
                                .and_then(|h| h.to_str().ok())
                                .map(str::to_string)
                        })
                        .unwrap_or_default();
                    let target = uri.path_and_query().map_or("/", |p| p.as_str());
                    let asked = Asked {
                        method: req.method().as_str(),
                        scheme: uri.scheme_str().unwrap_or("https"),
                        authority: &authority,
                        target,
                        priority: req.headers().get("priority").map(|v| v.as_bytes()),
                    };
                    let a = answer(&rec, &not_found, alt_svc.then_some(local.port()), &asked);
                    match &a.miss {
                        None => info!(
                            "{tag} stream {id:?}: {} {}://{authority}{target} -> {} ({} bytes, {:?})",
                            asked.method,
                            asked.scheme,
                            a.status,
                            a.body.len(),
                            a.priority
                        ),
                        Some(url) => {
                            warn!("{tag} stream {id:?}: {} {url} -> 404 (not in the recording)", asked.method)
                        }
                    }
                    state.lock().unwrap().request(slot, a.miss.clone());
                    priorities
                        .lock()
                        .unwrap()
                        .insert(id.into_inner(), quinn_priority(a.priority));
                    let sent = async {
                        stream.send_response(http_response(&tag, &a)).await?;
                        if a.with_body && !a.body.is_empty() {
                            stream.send_data(Bytes::from_owner(a.body.clone())).await?;
                            state.lock().unwrap().sent(a.body.len());
                        }
                        stream.finish().await
                    };
                    if let Err(e) = sent.await {
                        debug!("{tag} stream {id:?}: response abandoned: {e}");
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                debug!("{tag} connection over: {e}");
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording() -> h3replay::recording::Recording {
        let x = |target: &str, status: u16, body: &[u8]| h3replay::recording::Exchange {
            key: matching::Key {
                scheme: "https".into(),
                host: "a.test".into(),
                method: "GET".into(),
                target: target.into(),
            },
            status,
            response_headers: vec![
                ("content-type".into(), "text/html".into()),
                ("connection".into(), "close".into()),
                ("content-length".into(), "999".into()),
            ],
            body: Arc::from(body.to_vec()),
        };
        let exchanges = vec![x("/?v=1", 200, b"hello"), x("/nm", 304, b"")];
        let index = matching::Index::new(exchanges.iter().map(|x| &x.key));
        h3replay::recording::Recording {
            path: "r".into(),
            name: "t".into(),
            exchanges,
            index,
            body_bytes: 5,
        }
    }

    fn ask<'a>(method: &'a str, target: &'a str, prio: Option<&'a [u8]>) -> Asked<'a> {
        Asked {
            method,
            scheme: "https",
            authority: "A.test:443",
            target,
            priority: prio,
        }
    }

    fn names(a: &Answer) -> Vec<String> {
        a.fields
            .iter()
            .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
            .collect()
    }

    #[test]
    fn answers_like_h3server() {
        let rec = recording();
        let nf: Arc<[u8]> = Arc::from(response::NOT_FOUND);
        let hit = answer(&rec, &nf, Some(4433), &ask("GET", "/?v=2", Some(b"u=1, i")));
        assert_eq!(
            (hit.status, &*hit.body, hit.with_body),
            (200, &b"hello"[..], true)
        );
        assert_eq!(
            names(&hit),
            [":status", "content-type", "content-length", "alt-svc"]
        );
        assert_eq!(hit.fields[2].1, b"5");
        assert_eq!(hit.fields[3].1, b"h3=\":4433\"; ma=86400");
        assert_eq!(
            hit.priority,
            Priority {
                urgency: 1,
                incremental: true
            }
        );
        assert!(hit.miss.is_none());
        let head = answer(&rec, &nf, None, &ask("HEAD", "/", None));
        assert!(!head.with_body && head.status == 404);
        assert_eq!(head.miss.as_deref(), Some("https://A.test:443/"));
        assert_eq!(head.priority, Priority::default());
        let nm = answer(&rec, &nf, None, &ask("GET", "/nm", Some(b"u=x")));
        assert!(!nm.with_body && nm.status == 304);
        assert_eq!(names(&nm), [":status", "content-type"]);
        let miss = answer(&rec, &nf, None, &ask("GET", "/nothing", None));
        assert_eq!((&*miss.body, miss.with_body), (response::NOT_FOUND, true));
        assert!(!names(&miss).contains(&"alt-svc".to_string()));
    }

    #[test]
    fn http_response_keeps_every_field_http_can_carry() {
        let rec = recording();
        let nf: Arc<[u8]> = Arc::from(response::NOT_FOUND);
        let mut a = answer(&rec, &nf, Some(443), &ask("GET", "/", None));
        a.fields.push((b"x-bad".to_vec(), b"a\nb".to_vec()));
        let r = http_response("t", &a);
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-length"], "5");
        assert_eq!(r.headers()["alt-svc"], "h3=\":443\"; ma=86400");
        assert!(r.headers().get("x-bad").is_none());
        assert!(r.headers().get("connection").is_none());
    }
}
