//! Log lines on stderr: `<trace id> <LEVEL> <message>`.
//!
//! Messages (ours and quiche's) start with the connection's trace id; lines
//! about no connection start with `server`. The level goes after the first
//! word so that every line still starts with the trace id.

use std::io::Write;

/// Prefix of lines that belong to no connection.
pub const SERVER: &str = "server";

pub fn init(filter: &str) {
    env_logger::Builder::new()
        .parse_filters(filter)
        .format(|buf, record| {
            let msg = record.args().to_string();
            writeln!(buf, "{}", line(&msg, record.level()))
        })
        .init();
}

/// `trace-id LEVEL rest` from `trace-id rest`.
pub fn line(msg: &str, level: log::Level) -> String {
    match msg.split_once(' ') {
        Some((first, rest)) => format!("{first} {level} {rest}"),
        None => format!("{msg} {level}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_after_trace_id() {
        assert_eq!(line("abc123 got request", log::Level::Info), "abc123 INFO got request");
        assert_eq!(line("abc123", log::Level::Warn), "abc123 WARN");
    }
}
