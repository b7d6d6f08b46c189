//! Request matching: Mahimahi's rule, shared with the Python replay server.
//!
//! Candidates are the exchanges with the same scheme, the same host (the
//! request's :authority without its port, compared case-insensitively), the
//! same method (case-sensitive) and the same path (target up to the first
//! `?`, compared byte for byte: no decoding or normalisation). Among them the
//! exchange whose full target shares the longest common prefix with the
//! request's target wins, an identical target outranking one that merely
//! extends it (Mahimahi compares whole request lines, `GET /a HTTP/1.1`, so
//! the terminator counts); ties go to the earliest exchange in the
//! recording's order. No candidate: a miss. `tests/vectors/matching.json`
//! pins the rule down; both implementations run it.

use std::collections::HashMap;

/// What the rule needs from a recorded exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub scheme: String,
    pub host: String,
    pub method: String,
    pub target: String,
}

/// What the rule needs from a request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub scheme: &'a str,
    /// The :authority (or Host) as sent; a port is ignored.
    pub authority: &'a str,
    pub method: &'a str,
    pub target: &'a str,
}

/// (scheme, host, method, path): what candidates share.
type Group = (String, String, String, String);

/// Exchanges grouped by (scheme, host, method, path), in recording order.
#[derive(Debug, Default)]
pub struct Index {
    groups: HashMap<Group, Vec<(usize, String)>>,
}

impl Index {
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a Key>) -> Self {
        let mut groups: HashMap<_, Vec<_>> = HashMap::new();
        for (i, k) in keys.into_iter().enumerate() {
            let group = (
                k.scheme.to_ascii_lowercase(),
                host_of(&k.host),
                k.method.clone(),
                path_of(&k.target).to_string(),
            );
            groups.entry(group).or_default().push((i, k.target.clone()));
        }
        Index { groups }
    }

    /// Index of the matching exchange, or None for a miss.
    pub fn find(&self, req: &Request) -> Option<usize> {
        let group = (
            req.scheme.to_ascii_lowercase(),
            host_of(req.authority),
            req.method.to_string(),
            path_of(req.target).to_string(),
        );
        let candidates = self.groups.get(&group)?;
        let mut best: Option<(usize, usize)> = None; // (score, index)
        for (i, target) in candidates {
            let s = score(req.target, target);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, *i));
            }
        }
        best.map(|(_, i)| i)
    }
}

/// Length of the common prefix of two targets, plus one when they are equal.
pub fn score(request: &str, recorded: &str) -> usize {
    let (a, b) = (request.as_bytes(), recorded.as_bytes());
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    common + usize::from(a == b)
}

/// The target up to its first `?`.
pub fn path_of(target: &str) -> &str {
    target.split_once('?').map_or(target, |(p, _)| p)
}

/// Host of an authority: trimmed, lower case, without a port; an IPv6
/// literal keeps its brackets (and loses what follows them).
pub fn host_of(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if a.starts_with('[') {
        return match a.find(']') {
            Some(end) => a[..=end].to_string(),
            None => a,
        };
    }
    if a.matches(':').count() == 1 {
        return a.split(':').next().unwrap_or_default().to_string();
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    const VECTORS: &str = include_str!("../../../tests/vectors/matching.json");

    #[derive(Deserialize)]
    struct Vectors {
        exchanges: Vec<VExchange>,
        cases: Vec<Case>,
    }

    #[derive(Deserialize)]
    struct VExchange {
        scheme: String,
        host: String,
        #[allow(dead_code)]
        port: u16,
        method: String,
        target: String,
    }

    #[derive(Deserialize)]
    struct Case {
        name: String,
        request: VRequest,
        expect: Option<usize>,
    }

    #[derive(Deserialize)]
    struct VRequest {
        scheme: String,
        host: String,
        method: String,
        target: String,
    }

    #[test]
    fn shared_vectors() {
        let v: Vectors = serde_json::from_str(VECTORS).expect("matching.json parses");
        assert!(v.cases.len() >= 24, "at least 24 cases");
        let keys: Vec<Key> = v
            .exchanges
            .iter()
            .map(|x| Key {
                scheme: x.scheme.clone(),
                host: x.host.clone(),
                method: x.method.clone(),
                target: x.target.clone(),
            })
            .collect();
        let index = Index::new(&keys);
        let mut failed = Vec::new();
        for c in &v.cases {
            if let Some(i) = c.expect {
                assert!(i < keys.len(), "{}: expect {} out of range", c.name, i);
            }
            let got = index.find(&Request {
                scheme: &c.request.scheme,
                authority: &c.request.host,
                method: &c.request.method,
                target: &c.request.target,
            });
            if got != c.expect {
                failed.push(format!(
                    "{}: expected {:?}, got {:?}",
                    c.name, c.expect, got
                ));
            }
        }
        assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("A.Test"), "a.test");
        assert_eq!(host_of("a.test:443"), "a.test");
        assert_eq!(host_of("a.test:"), "a.test");
        assert_eq!(host_of(" a.test "), "a.test");
        assert_eq!(host_of("[2001:DB8::1]:443"), "[2001:db8::1]");
        assert_eq!(host_of("[2001:db8::1]"), "[2001:db8::1]");
        assert_eq!(host_of("2001:db8::1"), "2001:db8::1");
        assert_eq!(host_of("192.0.2.7:8443"), "192.0.2.7");
    }

    #[test]
    fn scores() {
        assert_eq!(score("/a", "/a"), 3);
        assert_eq!(score("/a", "/a?x"), 2);
        assert_eq!(score("/a?y", "/a?x"), 3);
        assert_eq!(path_of("/a?b?c"), "/a");
        assert_eq!(path_of("/"), "/");
    }
}
