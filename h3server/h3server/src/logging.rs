//! Log lines on stderr: `<trace id> <LEVEL> <message>`.
//!
//! Our messages start with the connection's trace id, or `server` for lines
//! about no connection. quiche's own lines mostly start with the trace id
//! too, but not all (its QPACK traces, for one), so while the server works
//! on a connection it names it in `scope`, and a line that does not start
//! with that trace id gets it put in front. The level goes after the trace
//! id, so every line starts with it.

use std::cell::RefCell;
use std::io::Write;

/// Prefix of lines that belong to no connection.
pub const SERVER: &str = "server";

thread_local! {
    static CURRENT: RefCell<String> = const { RefCell::new(String::new()) };
}

pub fn init(filter: &str) {
    env_logger::Builder::new()
        .parse_filters(filter)
        .format(|buf, record| {
            let msg = record.args().to_string();
            let l = CURRENT.with(|c| line(&msg, record.level(), &c.borrow()));
            writeln!(buf, "{l}")
        })
        .init();
}

/// While the guard lives, log lines belong to connection `trace_id`.
pub struct Scope(());

pub fn scope(trace_id: &str) -> Scope {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        c.clear();
        c.push_str(trace_id);
    });
    Scope(())
}

impl Drop for Scope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.borrow_mut().clear());
    }
}

/// The line for `msg` logged at `level` while working on connection `current`
/// (empty: none).
pub fn line(msg: &str, level: log::Level, current: &str) -> String {
    let (first, rest) = msg.split_once(' ').unwrap_or((msg, ""));
    let named = if current.is_empty() {
        first == SERVER || looks_like_trace_id(first)
    } else {
        first == current
    };
    match (named, current.is_empty()) {
        (true, _) if rest.is_empty() => format!("{first} {level}"),
        (true, _) => format!("{first} {level} {rest}"),
        (false, false) => format!("{current} {level} {msg}"),
        (false, true) => format!("{SERVER} {level} {msg}"),
    }
}

fn looks_like_trace_id(s: &str) -> bool {
    s.len() >= 16 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::Level::*;

    const ID: &str = "0123456789abcdef0123";

    #[test]
    fn level_after_trace_id() {
        assert_eq!(
            line(&format!("{ID} got request"), Info, ""),
            format!("{ID} INFO got request")
        );
        assert_eq!(
            line(&format!("{ID} got request"), Info, ID),
            format!("{ID} INFO got request")
        );
        assert_eq!(line("server listening", Info, ""), "server INFO listening");
        assert_eq!(line(ID, Warn, ""), format!("{ID} WARN"));
    }

    #[test]
    fn lines_without_trace_id_get_the_current_one() {
        assert_eq!(
            line("Indexed index=17", Trace, ID),
            format!("{ID} TRACE Indexed index=17")
        );
        assert_eq!(
            line("Indexed index=17", Trace, ""),
            "server TRACE Indexed index=17"
        );
    }

    #[test]
    fn scope_sets_and_clears() {
        {
            let _s = scope(ID);
            assert_eq!(CURRENT.with(|c| c.borrow().clone()), ID);
        }
        assert_eq!(CURRENT.with(|c| c.borrow().clone()), "");
    }
}
