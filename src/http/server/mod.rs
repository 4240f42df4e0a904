//! The HTTP/1.1 server under the router: the accept loop with its cap on
//! connections, one task per connection, graceful shutdown, and the
//! connection-level rules for slow clients (guide: "Slow clients"). The
//! deadlines themselves live in `timed`; routes and middleware do not.

mod timed;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::{Body as _, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use crate::config::Config;
use timed::{ConnState, ResponseBody, TimedBody, TimedIo};

/// The connection rules, from `Config` (`--header-read-timeout` and friends).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub header_read: Duration,
    pub body_read: Duration,
    pub keep_alive: Duration,
    /// A response write that makes no progress this long ends the connection.
    pub write_stall: Duration,
    /// The longest a stop waits for connections under way.
    pub drain: Duration,
    pub max_connections: usize,
    /// Connections at once from one client address (IPv6: one /64); 0: no cap.
    pub max_per_address: usize,
}

impl Limits {
    pub fn from_config(c: &Config) -> Self {
        Self {
            header_read: Duration::from_secs(c.header_read_timeout),
            body_read: Duration::from_secs(c.body_read_timeout),
            keep_alive: Duration::from_secs(c.keep_alive_timeout),
            write_stall: Duration::from_secs(c.write_timeout),
            drain: Duration::from_secs(c.drain_timeout),
            max_connections: c.max_connections as usize,
            max_per_address: c.max_connections_per_address as usize,
        }
    }
}

/// Accepts connections until `shutdown` resolves, then stops accepting, lets
/// in-flight requests finish and closes idle connections.
///
/// At `max_connections`, hds stops accepting: new connections wait in the
/// kernel's listen queue (answered late rather than refused). Every held
/// connection is either running a request or bounded by a read deadline, so a
/// place frees up within the header timeout of a flood of half-open ones.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    trusted: &[ipnet::IpNet],
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let places = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = Arc::new(PerAddress {
        max: limits.max_per_address,
        trusted: trusted.to_vec(),
        counts: std::sync::Mutex::new(std::collections::HashMap::new()),
    });
    // `stop` tells connections to finish; each holds a `running` receiver,
    // so `running_tx.closed()` resolves when the last one has ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (running_tx, running_rx) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let place = tokio::select! {
            p = places.clone().acquire_owned() => p,
            () = &mut shutdown => break,
        };
        let Ok(place) = place else { break };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // One client holding its share already: this connection is closed
        // at once (its permit returns), so one address cannot fill the cap.
        let Some(address_place) = per_address.admit(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: too many from this address");
            continue;
        };
        let (router, stop, running) = (router.clone(), stop_rx.clone(), running_rx.clone());
        tokio::spawn(async move {
            connection(stream, peer, router, limits, stop).await;
            drop((place, address_place, running));
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(running_rx);
    // A client still sending its request (a header line at a time, within
    // `--header-read-timeout`, which may be a day) holds the stop no longer
    // than `--drain-timeout`.
    if tokio::time::timeout(limits.drain, running_tx.closed())
        .await
        .is_err()
    {
        tracing::warn!(
            open = running_tx.receiver_count(),
            "connections still open {} s after the stop began (--drain-timeout); closing them",
            limits.drain.as_secs()
        );
    }
    Ok(())
}

/// Connections held per client address (an IPv4 address or an IPv6 /64).
struct PerAddress {
    max: usize,
    /// Reverse proxies carry many clients: never capped.
    trusted: Vec<ipnet::IpNet>,
    counts: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

/// One admitted connection; dropping it frees its place.
struct AddressPlace {
    owner: Arc<PerAddress>,
    key: Option<std::net::IpAddr>,
}

impl PerAddress {
    fn admit(self: &Arc<Self>, peer: std::net::IpAddr) -> Option<AddressPlace> {
        let peer = peer.to_canonical();
        if self.max == 0 || self.trusted.iter().any(|n| n.contains(&peer)) {
            return Some(AddressPlace {
                owner: self.clone(),
                key: None,
            });
        }
        let key = crate::http::client_addr::bucket(Some(peer))?;
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(key).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(AddressPlace {
            owner: self.clone(),
            key: Some(key),
        })
    }
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut counts = self.owner.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&key);
            }
        }
    }
}

/// A failed accept: a client that gave up in the queue is nothing; anything
/// else (out of file descriptors) is logged, and accepting pauses briefly
/// instead of spinning.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Serves one connection to its end; a connection that stopped with part of a
/// request unread gets a lingering close.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let state = Arc::new(ConnState::new());
    let io = TokioIo::new(TimedIo::new(stream, state.clone(), limits));
    let service = ConnService {
        router,
        peer,
        state: state.clone(),
        body_read: limits.body_read,
    };
    let mut conn = hyper::server::conn::http1::Builder::new()
        // The deadlines are TimedIo's: hyper's own header timer starts when a
        // connection begins waiting for its next request, so it would also
        // cut idle keep-alive connections at the header timeout.
        .header_read_timeout(None)
        .serve_connection(io, service);
    let mut stopping = false;
    // hyper flushes the last response, then shuts the stream down, which
    // lingers when a request was left partly unread (`TimedIo::poll_shutdown`).
    let done = loop {
        tokio::select! {
            r = &mut conn => break r,
            _ = stop.wait_for(|s| *s), if !stopping => {
                stopping = true;
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    };
    if let Err(e) = done {
        // Timeouts, resets, malformed requests: the client is gone or refused.
        tracing::debug!(error = %e, %peer, "connection ended");
    }
}

/// The router as one connection sees it: every request carries the peer
/// address (`ConnectInfo<SocketAddr>`) and a body with a deadline.
struct ConnService {
    /// A clone of the one router (an `Arc`): nothing is rebuilt per connection.
    router: Router,
    peer: SocketAddr,
    state: Arc<ConnState>,
    body_read: Duration,
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, std::convert::Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<ResponseBody>;
    type Error = std::convert::Infallible;
    type Future = ServiceFuture;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        use tower_service::Service as _;
        let state = self.state.clone();
        state.request_started(req.body().is_end_stream());
        let mut req = req.map(|b| TimedBody::new(b, state.clone(), self.body_read));
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let mut router = self.router.clone();
        Box::pin(async move {
            let mut resp = router.call(req).await?;
            // Part of the body unread (refused before reading: 401, 429, 413;
            // or a body that timed out): the rest of it is still on the way,
            // so this connection cannot carry another request. Saying so lets
            // the client read this answer and open a new connection.
            if !state.body_done.load(Ordering::Relaxed) {
                state.unread_body.store(true, Ordering::Relaxed);
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(resp.map(|b| ResponseBody::new(b, state)))
        })
    }
}
