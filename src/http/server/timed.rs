//! Deadlines of one connection: `TimedIo` bounds the wait for a request's
//! head (header timeout), for the next request (keep-alive timeout) and for a
//! write that makes no progress (a client that does not read its answers);
//! `TimedBody` bounds the reading of a body; `ResponseBody` marks the end of a
//! request. A response that keeps flowing is never cut: long polls and event
//! streams run on.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::Limits;

/// Where a connection is between requests; each phase but `Busy` has a deadline.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Waiting for the first byte of the next request, since then.
    Idle(Instant),
    /// Reading a request's head, since the connection opened or its first byte.
    Head(Instant),
    /// A request is being served; its body has its own deadline.
    Busy,
}

/// What a connection's I/O and its requests share.
pub(super) struct ConnState {
    phase: Mutex<(Phase, Option<Waker>)>,
    /// The current request's body has been read to its end (or had none).
    pub(super) body_done: AtomicBool,
    /// A response went out with part of its request unread (`Connection: close`).
    pub(super) unread_body: AtomicBool,
}

impl ConnState {
    pub(super) fn new() -> Self {
        Self {
            phase: Mutex::new((Phase::Head(Instant::now()), None)),
            body_done: AtomicBool::new(true),
            unread_body: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Phase, Option<Waker>)> {
        // A poisoned lock only means a panic elsewhere; the phase is still valid.
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// hyper parsed a head and calls the router.
    pub(super) fn request_started(&self, empty_body: bool) {
        self.body_done.store(empty_body, Ordering::Relaxed);
        self.lock().0 = Phase::Busy;
    }

    /// The response has been sent (or abandoned): the keep-alive wait starts.
    /// The reader is woken, as hyper may have polled it while `Busy`, when
    /// there was no deadline to arm.
    fn request_finished(&self) {
        let mut g = self.lock();
        g.0 = Phase::Idle(Instant::now());
        if let Some(w) = g.1.take() {
            w.wake();
        }
    }

    /// The deadline of a read that is about to wait; `got_bytes` says whether
    /// this poll read anything (the first byte ends an idle wait).
    fn read_deadline(&self, got_bytes: bool, waker: &Waker, limits: &Limits) -> Option<Instant> {
        let mut g = self.lock();
        match g.0 {
            Phase::Busy => {
                match &mut g.1 {
                    Some(w) if w.will_wake(waker) => {}
                    slot => *slot = Some(waker.clone()),
                }
                None
            }
            Phase::Idle(_) if got_bytes => {
                let now = Instant::now();
                g.0 = Phase::Head(now);
                Some(now + limits.header_read)
            }
            Phase::Idle(since) => Some(since + limits.keep_alive),
            Phase::Head(since) => Some(since + limits.header_read),
        }
    }
}

/// How long a connection closed with part of a request unread keeps reading
/// (and discarding) after its response: closing a socket with unread input
/// sends a reset, which can destroy the response before the client reads it.
const LINGER: Duration = Duration::from_secs(2);
/// At most this much is read and discarded while lingering.
const LINGER_BYTES: usize = 8 << 20;

/// The TCP stream with the connection's deadlines: a read that waits past
/// one, or a write that makes no progress for the write timeout, fails with
/// `TimedOut`, and hyper closes the connection.
pub(super) struct TimedIo<S> {
    io: S,
    state: Arc<ConnState>,
    limits: Limits,
    timer: Option<Pin<Box<Sleep>>>,
    /// Since when writes have been waiting without progress.
    write_stalled: Option<Instant>,
    write_timer: Option<Pin<Box<Sleep>>>,
    /// Shutdown: our FIN is sent; then the linger (see `LINGER`).
    shut: bool,
    linger_until: Option<Instant>,
    lingered: usize,
}

impl<S> TimedIo<S> {
    pub(super) fn new(io: S, state: Arc<ConnState>, limits: Limits) -> Self {
        Self {
            io,
            state,
            limits,
            timer: None,
            write_stalled: None,
            write_timer: None,
            shut: false,
            linger_until: None,
            lingered: 0,
        }
    }

    /// A write (or flush) that waits: fails once it has waited the write
    /// timeout since the last progress; any progress resets the wait.
    fn stall<T>(
        &mut self,
        polled: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => {
                let since = *self.write_stalled.get_or_insert_with(Instant::now);
                if expired(&mut self.write_timer, since + self.limits.write_stall, cx) {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "client not reading its responses",
                    )));
                }
                Poll::Pending
            }
            ready => {
                self.write_stalled = None;
                ready
            }
        }
    }
}

/// Polls a timer set to `deadline` (re-armed when it moved); true once it passed.
fn expired(timer: &mut Option<Pin<Box<Sleep>>>, deadline: Instant, cx: &mut Context<'_>) -> bool {
    let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if t.deadline() != deadline {
        t.as_mut().reset(deadline);
    }
    t.as_mut().poll(cx).is_ready()
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        let got_bytes = buf.filled().len() > before;
        let deadline = this
            .state
            .read_deadline(got_bytes, cx.waker(), &this.limits);
        match (polled, deadline) {
            (Poll::Pending, Some(d)) if expired(&mut this.timer, d, cx) => Poll::Ready(Err(
                io::Error::new(io::ErrorKind::TimedOut, "client too slow or idle"),
            )),
            (polled, _) => polled,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.stall(polled, cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.stall(polled, cx)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.stall(polled, cx)
    }
    /// hyper calls this once the last response is flushed. Sends our FIN;
    /// then, if a request was left partly unread, reads and discards what the
    /// client still sends until it closes, for at most `LINGER` and
    /// `LINGER_BYTES`, so the client reads our answer instead of a reset.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.shut {
            let polled = Pin::new(&mut this.io).poll_shutdown(cx);
            std::task::ready!(this.stall(polled, cx))?;
            this.shut = true;
        }
        if !this.state.unread_body.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        let until = *this
            .linger_until
            .get_or_insert_with(|| Instant::now() + LINGER);
        let mut sink = [0u8; 4096];
        while this.lingered < LINGER_BYTES {
            let mut buf = ReadBuf::new(&mut sink);
            match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    this.lingered += buf.filled().len();
                }
                // The client closed (or reset): done.
                Poll::Ready(_) => break,
                Poll::Pending if expired(&mut this.timer, until, cx) => break,
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// A request body that must arrive within the body timeout, counted from the
/// request's head. Past it, reading fails, so the extractor refuses the
/// request: a partial body is never handed to a handler.
pub(super) struct TimedBody {
    inner: Incoming,
    state: Arc<ConnState>,
    deadline: Instant,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl TimedBody {
    pub(super) fn new(inner: Incoming, state: Arc<ConnState>, limit: Duration) -> Self {
        Self {
            inner,
            state,
            deadline: Instant::now() + limit,
            limit,
            timer: None,
        }
    }
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => {
                if expired(&mut this.timer, this.deadline, cx) {
                    let secs = this.limit.as_secs();
                    return Poll::Ready(Some(Err(format!(
                        "the body did not arrive within {secs} s"
                    )
                    .into())));
                }
                Poll::Pending
            }
            Poll::Ready(None) => {
                this.state.body_done.store(true, Ordering::Relaxed);
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                if this.inner.is_end_stream() {
                    this.state.body_done.store(true, Ordering::Relaxed);
                }
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
        }
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The router's response body; dropping it (sent in full, or the connection
/// gone) ends the request, and the keep-alive wait begins.
pub(super) struct ResponseBody {
    inner: axum::body::Body,
    state: Arc<ConnState>,
}

impl ResponseBody {
    pub(super) fn new(inner: axum::body::Body, state: Arc<ConnState>) -> Self {
        Self { inner, state }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        self.state.request_finished();
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
