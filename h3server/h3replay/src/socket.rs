//! The UDP socket buffers both servers ask for: 4 MiB each way (the kernel
//! caps them at net.core.rmem_max / wmem_max). With the default (about
//! 208 KiB here) a server busy sending drops its client's ACKs in bursts:
//! on loopback h3quinn lost 30-270 client datagrams per 3 MiB transfer,
//! and a run of 129 or more lost in a row let quiche 0.24.6's short packet
//! numbers be decoded wrongly (vendor/quiche-0.24.6/VENDORED.md).

use std::net::UdpSocket;

use nix::sys::socket::{setsockopt, sockopt};

/// Socket buffer sizes asked for, bytes.
pub const BUFFER_BYTES: usize = 4 << 20;

/// Ask for BUFFER_BYTES of send and receive buffer; best effort (an
/// unprivileged process gets at most the sysctl maxima).
pub fn enlarge_buffers(sock: &UdpSocket) {
    let _ = setsockopt(sock, sockopt::SndBuf, &BUFFER_BYTES);
    let _ = setsockopt(sock, sockopt::RcvBuf, &BUFFER_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::getsockopt;

    #[test]
    fn buffers_grow_past_the_default() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = getsockopt(&sock, sockopt::RcvBuf).unwrap();
        enlarge_buffers(&sock);
        let after = getsockopt(&sock, sockopt::RcvBuf).unwrap();
        // Linux doubles what is asked (for its bookkeeping), up to rmem_max.
        assert!(after > before, "{before} -> {after}");
    }
}
