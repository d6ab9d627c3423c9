//! A connection's stream with what the server read of its start: bytes read already (the
//! ClientHello, read before rustls gets the stream) given again first, or a copy kept of
//! the first bytes read (the HTTP/2 preface, read by hyper).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How much of a connection's start a tap keeps: the preface and the first frames.
const KEPT: usize = 64 * 1024;

pub(crate) struct Tap<IO> {
    inner: IO,
    /// Read already, given again before `inner` is read.
    replay: Bytes,
    /// A copy of the first bytes read, up to `KEPT`.
    kept: Option<Arc<Mutex<Vec<u8>>>>,
}

impl<IO> Tap<IO> {
    /// `inner`, whose first bytes `replay` holds.
    pub(crate) fn replaying(replay: Bytes, inner: IO) -> Self {
        Tap { inner, replay, kept: None }
    }

    /// `inner`, with a copy of the first bytes read from it kept.
    pub(crate) fn keeping(inner: IO) -> (Self, Arc<Mutex<Vec<u8>>>) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        (Tap { inner, replay: Bytes::new(), kept: Some(kept.clone()) }, kept)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Tap<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.replay.has_remaining() {
            let n = self.replay.len().min(buf.remaining());
            buf.put_slice(&self.replay[..n]);
            self.replay.advance(n);
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(kept) = &self.kept {
            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
            let room = KEPT.saturating_sub(kept.len());
            let new = &buf.filled()[before..];
            kept.extend_from_slice(&new[..new.len().min(room)]);
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Tap<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
