//! Request priorities (h3replay's priority.rs) applied to quiche.
//!
//! quiche parses a priority field only into an opaque `h3::Priority`, which
//! serves for the response headers; a PRIORITY_UPDATE that arrives after them
//! must be applied to the transport stream directly.

use h3replay::priority::Priority;

/// quiche's h3 layer shifts urgencies by this much before handing them to
/// the transport (`PRIORITY_URGENCY_OFFSET` in quiche's h3/mod.rs, version
/// pinned by Cargo.lock) so that its control streams go first.
const TRANSPORT_URGENCY_OFFSET: u8 = 124;

/// A priority in quiche's terms.
pub trait QuichePriority {
    fn h3(self) -> quiche::h3::Priority;
    /// Apply to a stream whose response headers are already sent.
    fn apply(self, conn: &mut quiche::Connection, stream_id: u64) -> quiche::Result<()>;
}

impl QuichePriority for Priority {
    fn h3(self) -> quiche::h3::Priority {
        quiche::h3::Priority::new(self.urgency, self.incremental)
    }

    fn apply(self, conn: &mut quiche::Connection, stream_id: u64) -> quiche::Result<()> {
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
    fn quiche_agrees_on_what_it_sends() {
        let q: quiche::h3::Priority = quiche::h3::Priority::try_from(&b"u=0, i"[..]).unwrap();
        assert_eq!(q, Priority::parse(b"u=0, i").unwrap().h3());
    }
}
