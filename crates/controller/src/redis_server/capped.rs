//! A connection to a redis-server that reads at most so many bytes in all (DESIGN §9 tenancy):
//! the server runs the tenant's image, so its replies are hostile input. Without a cap a server
//! answering `INFO` with `$2000000000` and streaming makes the client buffer it all (the
//! controller grew to 630 MiB in one call), and one tenant's image crash-loops the operator of
//! every namespace.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What one connection may read from a redis-server over all its replies. The controller's
/// replies are a few hundred bytes (`INFO replication` with a few replicas, `INFO keyspace`,
/// `CONFIG GET min-replicas-*`, `+OK`).
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// Bytes handed to the reader per read, so the part of its buffer zeroed for it stays small.
const CHUNK: usize = 16 * 1024;

/// A stream whose reads fail once `left` bytes have been read; writes pass through.
pub struct Capped<S> {
    inner: S,
    left: usize,
}

impl<S> Capped<S> {
    pub fn new(inner: S, limit: usize) -> Self {
        Capped { inner, left: limit }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if this.left == 0 {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the redis-server's replies exceed {MAX_REPLY_BYTES} bytes"),
            )));
        }
        let wanted = buf.remaining().min(this.left).min(CHUNK);
        // Only `wanted` bytes are offered to the inner stream: a read never overshoots the cap.
        let mut part = ReadBuf::new(buf.initialize_unfilled_to(wanted));
        match Pin::new(&mut this.inner).poll_read(cx, &mut part) {
            Poll::Ready(Ok(())) => {
                let read = part.filled().len();
                this.left -= read;
                buf.advance(read);
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn reads_up_to_the_cap_then_fails_with_a_clear_error() {
        let data = [b'x'; 100];
        let mut capped = Capped::new(&data[..], 40);
        let mut read = Vec::new();
        let error = capped
            .read_to_end(&mut read)
            .await
            .expect_err("past the cap");
        assert_eq!(read.len(), 40, "every byte up to the cap is handed on");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("exceed"), "{error}");
    }

    #[tokio::test]
    async fn a_stream_shorter_than_the_cap_reads_whole() {
        let data = vec![b'x'; 100];
        let mut capped = Capped::new(&data[..], 1000);
        let mut read = Vec::new();
        capped.read_to_end(&mut read).await.expect("under the cap");
        assert_eq!(read, data);
    }
}
