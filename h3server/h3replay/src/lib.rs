//! What the testbed's two HTTP/3 replay servers share, free of any QUIC
//! stack: the recording (recording.rs) and Mahimahi's matching rule
//! (matching.rs), the response headers of an exchange or a miss as plain
//! name/value pairs (response.rs), request priorities (priority.rs),
//! the JSON summary with its per-connection figures (summary.rs), the UDP
//! socket buffers (socket.rs), the command-line options both servers take
//! (cli.rs) and why a server stopped, with its exit status (fatal.rs).
//!
//! h3server (quiche, ../h3server/) and h3quinn (quinn + h3, ../h3quinn/) turn
//! these into their own stacks' types; neither decides what a response says.
//! No QUIC stack or TLS library is a dependency of this crate.

pub mod cli;
pub mod fatal;
pub mod matching;
pub mod priority;
pub mod recording;
pub mod response;
pub mod socket;
pub mod summary;

pub use fatal::Fatal;
