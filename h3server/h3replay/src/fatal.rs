//! Why a server stopped, and the exit status that says so: the error type of
//! both servers.

use std::process::ExitCode;

#[derive(Debug)]
pub enum Fatal {
    /// Bad input: a file, a key, a value. Exit 2.
    Input(String),
    /// Anything else. Exit 1.
    Runtime(String),
}

impl Fatal {
    /// 2 for bad input, 1 for anything else.
    pub fn status(&self) -> u8 {
        match self {
            Fatal::Input(_) => 2,
            Fatal::Runtime(_) => 1,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Fatal::Input(m) | Fatal::Runtime(m) => m,
        }
    }
}

/// The process's exit: 0 for Ok; otherwise `<server>: <message>` on stderr
/// and the error's status.
pub fn exit(server: &str, result: Result<(), Fatal>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{server}: {}", e.message());
            ExitCode::from(e.status())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_2_anything_else_1() {
        let input = Fatal::Input("r/manifest.json: key x".into());
        assert_eq!(
            (input.status(), input.message()),
            (2, "r/manifest.json: key x")
        );
        let runtime = Fatal::Runtime("epoll: nope".into());
        assert_eq!((runtime.status(), runtime.message()), (1, "epoll: nope"));
        assert_eq!(exit("h3server", Ok(())), ExitCode::SUCCESS);
        assert_eq!(exit("h3server", Err(input)), ExitCode::from(2));
    }
}
