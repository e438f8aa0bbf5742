//! A connection's output is written once per round trip.
//!
//! pgwire answers some messages with `send` (ParseComplete, RowDescription, NoData,
//! CloseComplete, errors), and `send` flushes. A client that sends Parse, Bind, Describe,
//! Execute and Sync in one packet would then get its answer in several `sendto` calls, each
//! a system call and, over loopback, a wake-up of the client that finds an incomplete
//! answer. [`Corked`] sits between the framed writer and the socket and keeps what is
//! written until the connection's loop *opens* it ([`Corked::open`]): the loop does so
//! when the client has sent nothing more that it could answer, that is, before the
//! connection would wait to read. The invariant that keeps this safe: outside an
//! extended-query group the connection never waits for the client while output is held
//! back (`connection::process_socket` flushes with the cork open before every read that
//! can block, and when the connection ends); inside a group (after Parse, Bind, Describe,
//! Execute or Close) output waits for the client's Sync or Flush, as PostgreSQL's does.
//!
//! Output is not held without bound: past [`WRITE_THROUGH`] bytes the held bytes are
//! written out, so a long result streams as it did.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes held back beyond which they are written out without waiting to be opened.
pub(crate) const WRITE_THROUGH: usize = 64 << 10;

/// A stream whose writes are held until it is flushed while open (see the module).
pub(crate) struct Corked<S> {
    inner: S,
    /// Bytes written and not yet handed to `inner`, from `start` on.
    held: Vec<u8>,
    start: usize,
    open: bool,
}

impl<S> Corked<S> {
    pub(crate) fn new(inner: S) -> Self {
        Corked {
            inner,
            held: Vec::new(),
            start: 0,
            open: false,
        }
    }

    /// Whether a flush writes the held bytes out (true) or leaves them held (false).
    pub(crate) fn open(&mut self, open: bool) {
        self.open = open;
    }

    /// Bytes held back.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.len() - self.start
    }
}

impl<S: AsyncWrite + Unpin> Corked<S> {
    /// Hands every held byte to `inner`.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.start < self.held.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held[self.start..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.start += n;
        }
        self.held.clear();
        self.start = 0;
        if self.held.capacity() > 2 * WRITE_THROUGH {
            self.held.shrink_to(WRITE_THROUGH);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Corked<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corked<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.held.len() - this.start + data.len() > WRITE_THROUGH {
            ready!(this.poll_write_held(cx))?;
            if data.len() >= WRITE_THROUGH {
                return Pin::new(&mut this.inner).poll_write(cx, data);
            }
        }
        this.held.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.open {
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn writes_are_held_until_flushed_open() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut c = Corked::new(a);
        c.write_all(b"hello").await.unwrap();
        c.flush().await.unwrap();
        assert_eq!(c.held(), 5, "a flush while closed holds the bytes");
        c.open(true);
        c.flush().await.unwrap();
        assert_eq!(c.held(), 0);
        let mut got = [0u8; 5];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
    }

    #[tokio::test]
    async fn a_long_output_is_written_through() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut c = Corked::new(a);
        let chunk = vec![7u8; 8 << 10];
        for _ in 0..20 {
            c.write_all(&chunk).await.unwrap();
        }
        assert!(c.held() <= WRITE_THROUGH, "held {} bytes", c.held());
        let passed = 20 * chunk.len() - c.held();
        assert!(passed > 0);
        let mut got = vec![0u8; passed];
        b.read_exact(&mut got).await.unwrap();
        assert!(got.iter().all(|&x| x == 7));
        // A big single write goes straight through once nothing is held.
        c.open(true);
        c.flush().await.unwrap();
        c.open(false);
        let mut rest = vec![0u8; 20 * chunk.len() - passed];
        b.read_exact(&mut rest).await.unwrap();
        let big = vec![9u8; WRITE_THROUGH + 1];
        c.write_all(&big).await.unwrap();
        assert_eq!(c.held(), 0);
    }

    #[tokio::test]
    async fn shutdown_writes_what_is_held() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut c = Corked::new(a);
        c.write_all(b"bye").await.unwrap();
        c.shutdown().await.unwrap();
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"bye");
    }
}
