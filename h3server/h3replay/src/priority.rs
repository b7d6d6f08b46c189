//! HTTP Extensible Priorities (RFC 9218) of requests and PRIORITY_UPDATEs,
//! parsed with quiche's semantics (urgency 0..=7, out of range -> 7; `i`
//! absent -> not incremental; malformed -> ignored), so that both servers
//! read a browser's `priority` header alike.

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
    }
}
