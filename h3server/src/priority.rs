//! HTTP Extensible Priorities (RFC 9218) of requests and PRIORITY_UPDATEs.
//!
//! quiche parses a priority field only into an opaque `h3::Priority`, which
//! serves for the response headers; a PRIORITY_UPDATE that arrives after them
//! must be applied to the transport stream directly, so the value is parsed
//! here, with quiche's semantics (urgency 0..=7, out of range -> 7; `i`
//! absent -> not incremental; malformed -> ignored).

/// quiche's h3 layer shifts urgencies by this much before handing them to
/// the transport (`PRIORITY_URGENCY_OFFSET` in quiche's h3/mod.rs, version
/// pinned by Cargo.lock) so that its control streams go first.
const TRANSPORT_URGENCY_OFFSET: u8 = 124;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    pub urgency: u8,
    pub incremental: bool,
}

impl Default for Priority {
    fn default() -> Self {
        Priority {
            urgency: 3,
            incremental: false,
        }
    }
}

impl Priority {
    /// Parse a Priority field value (a Structured Fields Dictionary).
    pub fn parse(value: &[u8]) -> Option<Priority> {
        let dict = sfv::Parser::parse_dictionary(value).ok()?;
        let urgency = match dict.get("u") {
            Some(sfv::ListEntry::Item(item)) => {
                let v = item.bare_item.as_int()?;
                if (0..=7).contains(&v) {
                    v as u8
                } else {
                    7
                }
            }
            Some(sfv::ListEntry::InnerList(_)) => return None,
            None => 3,
        };
        let incremental = match dict.get("i") {
            Some(sfv::ListEntry::Item(item)) => item.bare_item.as_bool()?,
            _ => false,
        };
        Some(Priority {
            urgency,
            incremental,
        })
    }

    pub fn h3(self) -> quiche::h3::Priority {
        quiche::h3::Priority::new(self.urgency, self.incremental)
    }

    /// Apply to a stream whose response headers are already sent.
    pub fn apply(self, conn: &mut quiche::Connection, stream_id: u64) -> quiche::Result<()> {
        conn.stream_priority(
            stream_id,
            self.urgency + TRANSPORT_URGENCY_OFFSET,
            self.incremental,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_quiche() {
        let p = |s: &str| Priority::parse(s.as_bytes());
        assert_eq!(
            p("u=0, i"),
            Some(Priority {
                urgency: 0,
                incremental: true
            })
        );
        assert_eq!(
            p("u=5"),
            Some(Priority {
                urgency: 5,
                incremental: false
            })
        );
        assert_eq!(
            p("i"),
            Some(Priority {
                urgency: 3,
                incremental: true
            })
        );
        assert_eq!(
            p("u=9"),
            Some(Priority {
                urgency: 7,
                incremental: false
            })
        );
        assert_eq!(
            p("i=?0, u=1"),
            Some(Priority {
                urgency: 1,
                incremental: false
            })
        );
        assert_eq!(p("u=x"), None);
        assert_eq!(p("u=(1 2)"), None);
        assert_eq!(p(""), Some(Priority::default()));
        // quiche agrees on what it sends for the same value.
        let q: quiche::h3::Priority = quiche::h3::Priority::try_from(&b"u=0, i"[..]).unwrap();
        assert_eq!(q, p("u=0, i").unwrap().h3());
    }
}
