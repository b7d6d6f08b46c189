//! UDP sockets: one per listen address, datagrams sent alone or as one
//! UDP_SEGMENT (GSO) super-datagram.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd};

use nix::sys::socket::{self, sockopt, ControlMessage, MsgFlags, SockaddrStorage};

/// Most segments in one GSO send (the kernel's UDP_MAX_SEGMENTS).
pub const GSO_MAX_SEGMENTS: usize = 64;
/// Most payload bytes in one GSO send (IPv4 total length limit, rounded down).
pub const GSO_MAX_BYTES: usize = 65_000;

/// Bind a non-blocking UDP socket on `addr`.
pub fn bind(addr: SocketAddr) -> io::Result<mio::net::UdpSocket> {
    let sock = std::net::UdpSocket::bind(addr)?;
    sock.set_nonblocking(true)?;
    // Best effort: larger buffers absorb bursts (pacing off, a busy sender).
    h3replay::socket::enlarge_buffers(&sock);
    Ok(mio::net::UdpSocket::from_std(sock))
}

/// Whether the kernel accepts UDP_SEGMENT on this socket.
pub fn gso_supported(sock: &impl AsFd) -> bool {
    socket::getsockopt(sock, sockopt::UdpGsoSegment).is_ok()
}

/// Send `bufs` to `to` in one sendmsg: one datagram if there is one buffer,
/// otherwise a GSO send of `segment`-byte datagrams (every buffer but the
/// last exactly `segment` bytes, the last at most).
pub fn send(
    sock: &impl AsRawFd,
    bufs: &[&[u8]],
    to: SocketAddr,
    segment: usize,
) -> io::Result<usize> {
    let iov: Vec<IoSlice> = bufs.iter().map(|b| IoSlice::new(b)).collect();
    let addr = SockaddrStorage::from(to);
    let seg = segment as u16;
    let gso = [ControlMessage::UdpGsoSegments(&seg)];
    let cmsgs: &[ControlMessage] = if bufs.len() > 1 { &gso } else { &[] };
    socket::sendmsg(
        sock.as_raw_fd(),
        &iov,
        cmsgs,
        MsgFlags::empty(),
        Some(&addr),
    )
    .map_err(io::Error::from)
}

/// How many datagrams from the front of `items` (length, destination) can
/// go in one GSO send: same destination, all the size of the first except a
/// shorter last one, within the kernel's limits.
pub fn gso_batch_len(items: &[(usize, SocketAddr)]) -> usize {
    let Some(&(seg, to)) = items.first() else {
        return 0;
    };
    let mut n = 1;
    let mut bytes = seg;
    for &(len, dest) in &items[1..] {
        if n == GSO_MAX_SEGMENTS || dest != to || len > seg || bytes + len > GSO_MAX_BYTES {
            break;
        }
        n += 1;
        bytes += len;
        if len < seg {
            break;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn batches() {
        assert_eq!(gso_batch_len(&[]), 0);
        assert_eq!(gso_batch_len(&[(1350, a(1))]), 1);
        // equal sizes then a short one, which ends the batch
        let v = [(1350, a(1)), (1350, a(1)), (700, a(1)), (1350, a(1))];
        assert_eq!(gso_batch_len(&v), 3);
        // a larger one cannot follow
        assert_eq!(gso_batch_len(&[(700, a(1)), (1350, a(1))]), 1);
        // another destination ends it
        assert_eq!(gso_batch_len(&[(1350, a(1)), (1350, a(2))]), 1);
        // at most 64 segments and 65000 bytes
        let many = vec![(1000, a(1)); 100];
        assert_eq!(gso_batch_len(&many), 64);
        let big = vec![(1350, a(1)); 100];
        assert_eq!(gso_batch_len(&big), 48);
    }

    #[test]
    fn gso_send_arrives_as_separate_datagrams() {
        let server = bind(a(0)).unwrap();
        let client = std::net::UdpSocket::bind(a(0)).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let to = client.local_addr().unwrap();
        if !gso_supported(&server) {
            eprintln!("UDP_SEGMENT not supported here; skipping");
            return;
        }
        let (x, y, z) = (vec![1u8; 1200], vec![2u8; 1200], vec![3u8; 500]);
        let sent = send(&server, &[&x, &y, &z], to, 1200).unwrap();
        assert_eq!(sent, 2900);
        let mut buf = [0u8; 2000];
        let sizes: Vec<(usize, u8)> = (0..3)
            .map(|_| {
                let n = client.recv(&mut buf).unwrap();
                (n, buf[0])
            })
            .collect();
        assert_eq!(sizes, vec![(1200, 1), (1200, 2), (500, 3)]);
    }
}
