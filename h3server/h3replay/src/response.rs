//! Response headers for a recorded exchange (or a miss), HTTP/3-legal, as
//! plain name/value byte pairs each server turns into its stack's type.

use crate::recording::Exchange;

/// One header field: lower-case name, value.
pub type Field = (Vec<u8>, Vec<u8>);

/// Connection-specific headers that HTTP/3 forbids (RFC 9114 §4.2).
const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "proxy-connection",
];

/// Alternative-service headers: what this server says about itself replaces
/// whatever a recording holds (recordings normally hold none).
const ALT_SVC: [&str; 2] = ["alt-svc", "alternate-protocol"];

/// How long a client may remember the alternative service, seconds (a day,
/// as large sites announce it; a trial's fresh profile forgets it anyway).
pub const ALT_SVC_MAX_AGE: u32 = 86_400;

fn field(name: &[u8], value: &[u8]) -> Field {
    (name.to_vec(), value.to_vec())
}

/// The `alt-svc` header saying that this origin is served over HTTP/3 on
/// `port` of the same host (RFC 7838, RFC 9114 §3.1.1).
pub fn alt_svc(port: u16) -> Field {
    field(
        b"alt-svc",
        format!("h3=\":{port}\"; ma={ALT_SVC_MAX_AGE}").as_bytes(),
    )
}

/// Status, recorded headers minus hop-by-hop ones, alternative services,
/// pseudo-headers and the recorded content-length, plus content-length =
/// body length (omitted for 1xx, 204 and 304, which carry no content).
pub fn headers(x: &Exchange) -> Vec<Field> {
    let mut out = Vec::with_capacity(x.response_headers.len() + 3);
    out.push(field(b":status", x.status.to_string().as_bytes()));
    for (name, value) in &x.response_headers {
        let n = name.as_str();
        if n.starts_with(':')
            || n == "content-length"
            || HOP_BY_HOP.contains(&n)
            || ALT_SVC.contains(&n)
        {
            continue;
        }
        out.push(field(n.as_bytes(), value.as_bytes()));
    }
    if has_content(x.status) {
        out.push(field(
            b"content-length",
            x.body.len().to_string().as_bytes(),
        ));
    }
    out
}

/// Whether a response with this status carries content.
pub fn has_content(status: u16) -> bool {
    !(status < 200 || status == 204 || status == 304)
}

/// Body for the miss response.
pub const NOT_FOUND: &[u8] = b"not in recording\n";

pub fn not_found() -> Vec<Field> {
    vec![
        field(b":status", b"404"),
        field(b"content-type", b"text/plain"),
        field(b"content-length", NOT_FOUND.len().to_string().as_bytes()),
        field(b"cache-control", b"no-store"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn exchange(status: u16, hdrs: &[(&str, &str)], body: &[u8]) -> Exchange {
        Exchange {
            key: crate::matching::Key {
                scheme: "https".into(),
                host: "a.test".into(),
                method: "GET".into(),
                target: "/".into(),
            },
            status,
            response_headers: hdrs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Arc::from(body.to_vec()),
        }
    }

    fn pairs(h: &[Field]) -> Vec<(String, String)> {
        h.iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn drops_hop_by_hop_and_sets_length() {
        let x = exchange(
            200,
            &[
                ("content-type", "text/css"),
                ("connection", "keep-alive"),
                ("keep-alive", "timeout=5"),
                ("transfer-encoding", "chunked"),
                ("upgrade", "h2c"),
                ("proxy-connection", "x"),
                ("content-length", "999"),
                ("alt-svc", "h3=\":8443\""),
                ("alternate-protocol", "443:quic"),
                ("set-cookie", "a=1"),
                ("set-cookie", "b=2"),
            ],
            b"body!",
        );
        assert_eq!(
            pairs(&headers(&x)),
            vec![
                (":status".into(), "200".into()),
                ("content-type".into(), "text/css".into()),
                ("set-cookie".into(), "a=1".into()),
                ("set-cookie".into(), "b=2".into()),
                ("content-length".into(), "5".into()),
            ]
        );
    }

    #[test]
    fn alt_svc_names_h3_on_the_port() {
        assert_eq!(
            pairs(&[alt_svc(443), alt_svc(4433)]),
            vec![
                ("alt-svc".into(), "h3=\":443\"; ma=86400".into()),
                ("alt-svc".into(), "h3=\":4433\"; ma=86400".into()),
            ]
        );
    }

    #[test]
    fn no_length_without_content() {
        for status in [204, 304] {
            let h = pairs(&headers(&exchange(status, &[("content-length", "0")], b"")));
            assert_eq!(h, vec![(":status".into(), status.to_string())]);
        }
        let h = pairs(&headers(&exchange(404, &[], b"")));
        assert!(h.contains(&("content-length".into(), "0".into())));
        assert_eq!(
            pairs(&not_found()),
            vec![
                (":status".into(), "404".into()),
                ("content-type".into(), "text/plain".into()),
                ("content-length".into(), "17".into()),
                ("cache-control".into(), "no-store".into()),
            ]
        );
    }
}
