//! h3's QUIC traits over quinn, with request priorities: h3-quinn's types
//! for everything but request streams, and for those (the client's
//! bidirectional streams) a thin adapter of this server's own that keeps the
//! quinn::SendStream at hand, so that a response's urgency reaches
//! `SendStream::set_priority`, which h3-quinn hides.
//!
//! The handler (serve.rs) notes a request's priority in `Priorities` under
//! its stream id before it sends the response; the stream applies it at the
//! first write (the HEADERS frame).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};
use h3replay::priority::Priority;

/// The quinn send priority of a response of RFC 9218 urgency `u` (0, most
/// urgent, to 7): -1 - u. quinn sends higher values first; HTTP/3's control
/// and QPACK streams keep quinn's default 0, so they go before every
/// response, as quiche's h3 layer shifts urgencies (by 124) for the same end.
pub fn quinn_priority(p: Priority) -> i32 {
    -1 - i32::from(p.urgency.min(7))
}

/// Requests' priorities noted by the handler, by stream id, until the
/// stream's first write takes them.
pub type Priorities = Arc<Mutex<HashMap<u64, i32>>>;

type Accepting = Pin<
    Box<
        dyn Future<Output = Result<(quinn::SendStream, quinn::RecvStream), quinn::ConnectionError>>
            + Send
            + Sync,
    >,
>;

/// A connection whose request streams carry priorities.
pub struct Conn {
    inner: h3_quinn::Connection,
    conn: quinn::Connection,
    accepting: Option<Accepting>,
    priorities: Priorities,
}

impl Conn {
    pub fn new(conn: quinn::Connection, priorities: Priorities) -> Conn {
        Conn {
            inner: h3_quinn::Connection::new(conn.clone()),
            conn,
            accepting: None,
            priorities,
        }
    }
}

fn connection_error(e: quinn::ConnectionError) -> ConnectionErrorIncoming {
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => ConnectionErrorIncoming::ApplicationClose {
            error_code: c.error_code.into(),
        },
        quinn::ConnectionError::TimedOut => ConnectionErrorIncoming::Timeout,
        e => ConnectionErrorIncoming::Undefined(Arc::new(e)),
    }
}

fn stream_error_of_connection(e: quinn::ConnectionError) -> StreamErrorIncoming {
    StreamErrorIncoming::ConnectionErrorIncoming {
        connection_error: connection_error(e),
    }
}

fn write_error(e: quinn::WriteError) -> StreamErrorIncoming {
    match e {
        quinn::WriteError::Stopped(code) => StreamErrorIncoming::StreamTerminated {
            error_code: code.into_inner(),
        },
        quinn::WriteError::ConnectionLost(e) => stream_error_of_connection(e),
        e => StreamErrorIncoming::Unknown(Box::new(e)),
    }
}

fn read_error(e: quinn::ReadError) -> StreamErrorIncoming {
    match e {
        quinn::ReadError::Reset(code) => StreamErrorIncoming::StreamTerminated {
            error_code: code.into_inner(),
        },
        quinn::ReadError::ConnectionLost(e) => stream_error_of_connection(e),
        e => StreamErrorIncoming::Unknown(Box::new(e)),
    }
}

fn stream_id(id: quinn::StreamId) -> StreamId {
    StreamId::try_from(u64::from(id)).expect("quinn's stream ids are QUIC's")
}

impl<B: Buf> quic::Connection<B> for Conn {
    type RecvStream = h3_quinn::RecvStream;
    type OpenStreams = Opener;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        quic::Connection::<B>::poll_accept_recv(&mut self.inner, cx)
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let accepting = self.accepting.get_or_insert_with(|| {
            let conn = self.conn.clone();
            Box::pin(async move { conn.accept_bi().await })
        });
        let result = ready!(accepting.as_mut().poll(cx));
        self.accepting = None;
        let (send, recv) = result.map_err(connection_error)?;
        Poll::Ready(Ok(RequestStream {
            send,
            writing: None,
            recv: Some(recv),
            reading: None,
            priorities: self.priorities.clone(),
        }))
    }

    fn opener(&self) -> Self::OpenStreams {
        Opener(quic::Connection::<B>::opener(&self.inner))
    }
}

/// h3-quinn's opener of unidirectional streams (control, QPACK).
pub struct Opener(h3_quinn::OpenStreams);

impl<B: Buf> quic::OpenStreams<B> for Opener {
    type BidiStream = RequestStream<B>;
    type SendStream = h3_quinn::SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        Poll::Ready(Err(StreamErrorIncoming::Unknown(
            "a server opens no bidirectional streams".into(),
        )))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        quic::OpenStreams::<B>::poll_open_send(&mut self.0, cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.0, code, reason)
    }
}

impl<B: Buf> quic::OpenStreams<B> for Conn {
    type BidiStream = RequestStream<B>;
    type SendStream = h3_quinn::SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        // A server opens no bidirectional streams (RFC 9114 §6.1).
        Poll::Ready(Err(StreamErrorIncoming::Unknown(
            "a server opens no bidirectional streams".into(),
        )))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        quic::OpenStreams::<B>::poll_open_send(&mut self.inner, cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.inner, code, reason)
    }
}

type Reading = Pin<
    Box<
        dyn Future<
                Output = (
                    quinn::RecvStream,
                    Result<Option<quinn::Chunk>, quinn::ReadError>,
                ),
            > + Send
            + Sync,
    >,
>;

/// A request stream: the client's bidirectional stream, whose send half
/// takes the request's priority at its first write.
pub struct RequestStream<B: Buf> {
    send: quinn::SendStream,
    writing: Option<WriteBuf<B>>,
    recv: Option<quinn::RecvStream>,
    reading: Option<Reading>,
    priorities: Priorities,
}

impl<B: Buf> quic::SendStream<B> for RequestStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        if let Some(data) = &mut self.writing {
            while data.has_remaining() {
                let n = ready!(Pin::new(&mut self.send).poll_write(cx, data.chunk()))
                    .map_err(write_error)?;
                data.advance(n);
            }
        }
        self.writing = None;
        Poll::Ready(Ok(()))
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        if self.writing.is_some() {
            return Err(StreamErrorIncoming::ConnectionErrorIncoming {
                connection_error: ConnectionErrorIncoming::InternalError(
                    "send_data while a write is pending".into(),
                ),
            });
        }
        let id = u64::from(self.send.id());
        if let Some(p) = self.priorities.lock().unwrap().remove(&id) {
            let _ = self.send.set_priority(p);
        }
        self.writing = Some(data.into());
        Ok(())
    }

    fn poll_finish(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        Poll::Ready(
            self.send
                .finish()
                .map_err(|e| StreamErrorIncoming::Unknown(Box::new(e))),
        )
    }

    fn reset(&mut self, code: u64) {
        let _ = self
            .send
            .reset(quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX));
    }

    fn send_id(&self) -> StreamId {
        stream_id(self.send.id())
    }
}

impl<B: Buf> quic::RecvStream for RequestStream<B> {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Self::Buf>, StreamErrorIncoming>> {
        if let Some(mut recv) = self.recv.take() {
            self.reading = Some(Box::pin(async move {
                let chunk = recv.read_chunk(usize::MAX, true).await;
                (recv, chunk)
            }));
        }
        let Some(reading) = self.reading.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        let (recv, chunk) = ready!(reading.as_mut().poll(cx));
        self.reading = None;
        self.recv = Some(recv);
        Poll::Ready(chunk.map(|c| c.map(|c| c.bytes)).map_err(read_error))
    }

    fn stop_sending(&mut self, code: u64) {
        if let Some(recv) = self.recv.as_mut() {
            let _ = recv.stop(quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX));
        }
    }

    fn recv_id(&self) -> StreamId {
        stream_id(self.send.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_urgent_goes_first_and_control_streams_before_all() {
        let q = |u: u8| {
            quinn_priority(Priority {
                urgency: u,
                incremental: false,
            })
        };
        assert_eq!(q(0), -1);
        assert_eq!(q(3), -4); // the default urgency
        assert_eq!(q(7), -8);
        assert!((0..7).all(|u| q(u) > q(u + 1)));
        // quinn's default priority (0), which h3's control and QPACK streams keep.
        assert!((0..=7).all(|u| q(u) < 0));
        // `i` does not change the order.
        let i = quinn_priority(Priority {
            urgency: 2,
            incremental: true,
        });
        assert_eq!(i, q(2));
    }
}
