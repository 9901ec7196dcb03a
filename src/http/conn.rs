//! Connections: the accept loop behind [`crate::serve`], with hyper's header-read timeout, a cap
//! on open connections, and a shutdown that ends within its grace period whatever clients hold.
//!
//! - hyper's `header_read_timeout` closes a connection that has not sent a whole request head
//!   within the limit. hyper starts it again whenever a keep-alive connection waits for its
//!   next request, so the same limit is the idle timeout: a silent socket, a slow-header
//!   client and an idle keep-alive connection all end after it.
//! - Each connection holds a semaphore permit; at the cap the loop stops accepting (new
//!   connections wait in the kernel's backlog) until one closes.
//! - On shutdown the listener closes, hyper is asked to finish every connection gracefully
//!   (in-flight requests complete, idle connections close), and after the grace period the
//!   remaining connection tasks are dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tower::ServiceExt;

pub use crate::state::ConnLimits;

/// Serves `router` on `listener` until `stop` resolves, then shuts down within the grace period.
pub async fn run<F>(mut listener: TcpListener, router: Router, limits: ConnLimits, stop: F)
where
    F: Future<Output = ()> + Send,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            biased;
            () = &mut stop => break,
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (io, addr): (_, SocketAddr) = tokio::select! {
            biased;
            () = &mut stop => break,
            // axum's listener logs and retries accept errors (such as running out of files).
            accepted = axum::serve::Listener::accept(&mut listener) => accepted,
        };
        while conns.try_join_next().is_some() {}
        let service = router.clone().map_request(move |mut req: axum::http::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(addr));
            req
        });
        let conn = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
        let conn = graceful.watch(conn);
        conns.spawn(async move {
            // Timeouts and resets end connections all the time; nothing to report.
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
        while conns.try_join_next().is_some() {}
        tracing::warn!(
            open = conns.len(),
            grace_secs = limits.shutdown_grace.as_secs_f64(),
            "connections still open after the shutdown grace period are closed"
        );
    }
    conns.shutdown().await;
}
