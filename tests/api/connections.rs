//! Connections: silent and slow clients are closed after the header-read timeout, a cap bounds
//! open connections without starving probes, and shutdown ends within drain + grace whatever
//! clients hold (issue 49).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use mnemo::http::conn::ConnLimits;
use mnemo::RuntimeConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn limits(header_read_secs: u64, max_connections: usize, grace_secs: u64) -> RuntimeConfig {
    RuntimeConfig {
        connections: ConnLimits {
            header_read_timeout: Duration::from_secs(header_read_secs),
            max_connections,
            shutdown_grace: Duration::from_secs(grace_secs),
        },
        ..Default::default()
    }
}

fn addr(base: &str) -> String {
    base.trim_start_matches("http://").to_string()
}

/// Waits until the server closes `s` (EOF or reset), up to `within`; the time it took.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(within.saturating_sub(started.elapsed()), s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue, // a response (e.g. 408) before the close
        }
    }
}

#[tokio::test]
async fn silent_slow_and_idle_connections_are_closed_after_the_header_timeout() {
    let app = crate::common::spawn_with(limits(1, 1024, 5)).await;
    let a = addr(&app.base);
    // Silent: connects and sends nothing.
    let mut silent = TcpStream::connect(&a).await.unwrap();
    // Slow: half a request head, never finished.
    let mut slow = TcpStream::connect(&a).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    // Idle: one whole request answered, then nothing on the kept-alive connection.
    let mut idle = TcpStream::connect(&a).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut head = [0u8; 12];
    idle.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    for (name, s) in [("silent", &mut silent), ("slow", &mut slow), ("idle", &mut idle)] {
        let took = closed_within(s, Duration::from_secs(10)).await;
        assert!(took.is_some(), "{name}: the connection was never closed");
    }
}

#[tokio::test]
async fn probes_answer_while_hundreds_of_silent_sockets_are_open() {
    // Below the cap: the silent sockets take nothing from the probe.
    let app = crate::common::spawn_with(limits(3, 1024, 5)).await;
    let a = addr(&app.base);
    let mut held = Vec::new();
    for _ in 0..400 {
        held.push(TcpStream::connect(&a).await.unwrap());
    }
    let started = Instant::now();
    let r = app.client.get(app.url("/healthz")).timeout(Duration::from_secs(10)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    eprintln!("healthz with 400 silent sockets open: {:?}", started.elapsed());
    // Past the cap: connections wait to be accepted, and the header timeout frees the slots the
    // silent ones hold, so the probe is answered after a few timeouts at most.
    let capped = crate::common::spawn_with(limits(1, 50, 5)).await;
    let a = addr(&capped.base);
    let mut held = Vec::new();
    for _ in 0..200 {
        held.push(TcpStream::connect(&a).await.unwrap());
    }
    let started = Instant::now();
    let r = capped.client.get(capped.url("/healthz")).timeout(Duration::from_secs(30)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    eprintln!("healthz behind 200 silent sockets at a cap of 50 (1 s timeout): {:?}", started.elapsed());
}

#[tokio::test]
async fn shutdown_ends_after_drain_and_grace_while_a_client_holds_half_a_request() {
    // The server on its own task, so the test sees `serve` return.
    let db = crate::common::fresh_database().await;
    let pool = mnemo::db::pool::connect(db.options.clone(), 2).await.unwrap();
    mnemo::db::pool::migrate(&pool).await.unwrap();
    let app_pool = mnemo::db::pool::connect_app(crate::common::app_options(&db.options), 4).await.unwrap();
    let embedder = mnemo::embed::build(&mnemo::embed::EmbedderConfig::Hash { dims: 384 }).unwrap();
    // A header timeout far longer than the test: only the shutdown may end the held connection.
    let config = RuntimeConfig { shutdown_drain_secs: 1, ..limits(600, 1024, 1) };
    let state = mnemo::AppState::new(app_pool, config, embedder);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mnemo::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    let mut held = TcpStream::connect(&a).await.unwrap();
    held.write_all(b"POST /v1/episodes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(&a).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server).await.expect("serve returned").unwrap().unwrap();
    let took = started.elapsed();
    eprintln!("shutdown with drain 1 s, grace 1 s and a half-sent request held: {took:?}");
    assert!(took >= Duration::from_secs(1), "the drain period is kept: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    for s in [&mut held, &mut silent] {
        assert!(closed_within(s, Duration::from_secs(2)).await.is_some());
    }
    assert!(TcpStream::connect(&a).await.is_err(), "the listener is closed");
}
