//! The QUIC packets coalesced in one UDP datagram, so each is fed to quiche on
//! its own (RFC 9000 §12.2: a receiver processes every coalesced packet as if
//! it came alone).
//!
//! quiche 0.24 stops at the first packet of a datagram it cannot decrypt and
//! drops the rest of the datagram with it (cloudflare/quiche#1834, #2640).
//! Chromium coalesces {Initial ACK, Handshake Finished, 1-RTT request} into one
//! datagram whenever it still owes the server's Initial an ACK; if the server
//! has already processed a Handshake packet it has discarded its Initial keys,
//! so the Initial fails and the Finished and the request went with it: one
//! probe timeout (about two RTTs) lost on the handshake and the page's first
//! request on that connection, in about one QUIC trial in five under DSL.
//! TCP has nothing like it, so it was a handicap of the QUIC replay only.
//!
//! Only packet boundaries are read here (the long header's lengths); nothing
//! is decrypted or trusted. A packet whose destination connection ID differs
//! from the first packet's is left out (RFC 9000 §12.2: receivers SHOULD
//! ignore it).

use std::ops::Range;

const VERSION_1: u32 = 0x0000_0001;
const VERSION_2: u32 = 0x6b33_43cf;

/// The byte ranges of the packets in `dgram`, in order. `cid_len` is the
/// length of this server's connection IDs (a short header does not carry it).
/// A datagram it cannot read further than its first packet is one range (the
/// whole datagram), as quiche would have read it.
pub fn packets(dgram: &[u8], cid_len: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut first_dcid: Option<&[u8]> = None;
    let mut at = 0;
    while at < dgram.len() {
        let Some((len, dcid)) = packet_end(&dgram[at..], cid_len) else {
            out.push(at..dgram.len()); // quiche refuses it, as before
            break;
        };
        if out.is_empty() {
            first_dcid = dcid;
            out.push(at..at + len);
        } else if dcid.is_some() && dcid == first_dcid {
            out.push(at..at + len);
        }
        at += len;
    }
    out
}

/// The length of the packet at the start of `b` and its destination
/// connection ID; None where the rest of the datagram is one packet that
/// cannot be delimited (a short header takes the rest, so does a Retry or a
/// version negotiation, or an unknown version, or a long header cut short).
fn packet_end(b: &[u8], cid_len: usize) -> Option<(usize, Option<&[u8]>)> {
    let first = *b.first()?;
    if first & 0x80 == 0 {
        // short header: DCID of our length, then the rest of the datagram
        return Some((b.len(), b.get(1..1 + cid_len)));
    }
    let version = u32::from_be_bytes(b.get(1..5)?.try_into().ok()?);
    let mut at = 5;
    let dcid_len = *b.get(at)? as usize;
    let dcid = b.get(at + 1..at + 1 + dcid_len)?;
    at += 1 + dcid_len;
    let scid_len = *b.get(at)? as usize;
    at += 1 + scid_len;
    let ty = (first & 0x30) >> 4;
    let (initial, retry) = match version {
        VERSION_1 => (0, 3),
        VERSION_2 => (1, 0),
        _ => return Some((b.len(), Some(dcid))),
    };
    if ty == retry {
        return Some((b.len(), Some(dcid)));
    }
    if ty == initial {
        let (token_len, n) = varint(b.get(at..)?)?;
        at += n + usize::try_from(token_len).ok()?;
    }
    let (length, n) = varint(b.get(at..)?)?;
    let end = at
        .checked_add(n)?
        .checked_add(usize::try_from(length).ok()?)?;
    if end > b.len() || end == 0 {
        return None;
    }
    Some((end, Some(dcid)))
}

/// A QUIC variable-length integer (RFC 9000 §16) and its length in bytes.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: [u8; 4] = [0xaa, 0xbb, 0xcc, 0xdd];

    /// A version 1 long-header packet of type `ty` (0 Initial, 2 Handshake)
    /// with `payload` bytes after the length.
    fn long(ty: u8, dcid: &[u8], payload: usize) -> Vec<u8> {
        let mut p = vec![0xc0 | (ty << 4)];
        p.extend_from_slice(&VERSION_1.to_be_bytes());
        p.push(dcid.len() as u8);
        p.extend_from_slice(dcid);
        p.push(2);
        p.extend_from_slice(&[1, 2]);
        if ty == 0 {
            p.push(0); // no token
        }
        p.extend_from_slice(&[0x40 | (payload >> 8) as u8, payload as u8]); // 2-byte varint
        p.extend(std::iter::repeat_n(0x5a, payload));
        p
    }

    fn short(dcid: &[u8], payload: usize) -> Vec<u8> {
        let mut p = vec![0x40];
        p.extend_from_slice(dcid);
        p.extend(std::iter::repeat_n(0x33, payload));
        p
    }

    #[test]
    fn chromiums_initial_handshake_and_1rtt_come_apart() {
        // what Chromium sent in the slow trials: Initial ACK, Handshake Finished,
        // 1-RTT request, padded to 1250 bytes inside the 1-RTT packet
        let (i, h) = (long(0, &CID, 20), long(2, &CID, 60));
        let s = short(&CID, 1250 - i.len() - h.len() - 1 - CID.len());
        let d = [i.clone(), h.clone(), s].concat();
        assert_eq!(d.len(), 1250);
        let got = packets(&d, CID.len());
        assert_eq!(
            got,
            vec![
                0..i.len(),
                i.len()..i.len() + h.len(),
                i.len() + h.len()..1250
            ]
        );
    }

    #[test]
    fn a_single_packet_is_the_whole_datagram() {
        let d = long(0, &CID, 1200);
        assert_eq!(packets(&d, 4), vec![0..d.len()]);
        let s = short(&CID, 100);
        assert_eq!(packets(&s, 4), vec![0..s.len()]);
    }

    #[test]
    fn a_packet_for_another_connection_is_left_out() {
        let a = long(2, &CID, 10);
        let b = long(2, &[9, 9, 9, 9], 10);
        let c = short(&CID, 30);
        let d = [a.clone(), b.clone(), c].concat();
        let skip = a.len() + b.len();
        assert_eq!(packets(&d, 4), vec![0..a.len(), skip..d.len()]);
    }

    #[test]
    fn what_cannot_be_delimited_is_handed_on_whole() {
        // a length beyond the datagram: the rest is one range (quiche refuses it)
        let mut a = long(2, &CID, 10);
        a.truncate(a.len() - 3);
        assert_eq!(packets(&a, 4), vec![0..a.len()]);
        let ok = long(0, &CID, 5);
        let d = [ok.clone(), a.clone()].concat();
        assert_eq!(packets(&d, 4), vec![0..ok.len(), ok.len()..d.len()]);
        // an unknown version, a header cut inside its CIDs, an empty datagram
        let mut v = long(2, &CID, 10);
        v[1..5].copy_from_slice(&[0x0a, 0x0a, 0x0a, 0x0a]);
        assert_eq!(packets(&v, 4), vec![0..v.len()]);
        assert_eq!(packets(&[0xc0, 0, 0, 0, 1, 20, 1], 4), vec![0..7]);
        assert!(packets(&[], 4).is_empty());
    }

    /// The bug and the fix with real quiche: after the handshake (the server's
    /// Initial keys discarded) a datagram of an Initial and a 1-RTT packet
    /// carrying a request. Fed whole, quiche drops the request with the Initial;
    /// fed packet by packet, the request arrives.
    #[test]
    fn a_request_behind_an_undecryptable_initial_arrives() {
        use crate::connstats::tests::{cert_files, deliver, pair, server_config};
        let (dir, cert, key) = cert_files("coalesced");
        let mut config = server_config(&cert, &key);
        let (mut client, mut server) = pair(&mut config);
        while !(client.is_established() && server.is_established()) {
            assert!(
                deliver(&mut client, &mut server) + deliver(&mut server, &mut client) > 0,
                "stalled"
            );
        }
        while deliver(&mut client, &mut server) + deliver(&mut server, &mut client) > 0 {}
        client.stream_send(0, b"GET /", true).unwrap();
        let mut buf = [0u8; 65_535];
        let (len, info) = client.send(&mut buf).unwrap();
        let request = buf[..len].to_vec();
        assert_eq!(request[0] & 0x80, 0, "a 1-RTT packet");
        let initial = long(0, &[0xab; 20], 40); // the server's CID; no key opens it now
        let dgram = [initial.clone(), request].concat();
        let recv = quiche::RecvInfo {
            from: info.from,
            to: info.to,
        };

        let mut whole = dgram.clone();
        let _ = server.recv(&mut whole, recv);
        assert!(
            !server.readable().any(|s| s == 0),
            "quiche read past the Initial"
        );

        let mut split = dgram.clone();
        let ranges = packets(&split, 20);
        assert_eq!(ranges.len(), 2);
        for r in ranges {
            let _ = server.recv(&mut split[r], recv);
        }
        let mut got = [0u8; 16];
        assert_eq!(server.stream_recv(0, &mut got).unwrap(), (5, true));
        assert_eq!(&got[..5], b"GET /");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn varints_of_every_length() {
        assert_eq!(varint(&[0x25]), Some((37, 1)));
        assert_eq!(varint(&[0x7b, 0xbd]), Some((15293, 2)));
        assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
        assert_eq!(
            varint(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]),
            Some((151_288_809_941_952_652, 8))
        );
        assert_eq!(varint(&[0x7b]), None);
    }
}
