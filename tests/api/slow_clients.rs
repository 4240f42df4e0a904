//! Slow and half-open clients are cut off by the read timeouts (guide: "Slow
//! clients") while everyone else is served; answers that take long (long
//! polls, the dashboard's event stream) are not cut; a request refused before
//! its body was read leaves the client able to go on.
//!
//! Raw sockets on loopback, so the test decides what is sent and when.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

use crate::helpers::{TestApp, client_builder, two_options};

/// Short timeouts, so each test lasts seconds.
fn short(c: &mut hds::config::Config) {
    c.header_read_timeout = 1;
    c.body_read_timeout = 2;
    c.keep_alive_timeout = 3;
    c.write_timeout = 1;
    // These tests hold hundreds of connections from one address.
    c.max_connections_per_address = 0;
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the server closes the connection (EOF or reset) and returns
/// what came; None if it stays open for `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let closed = timeout(limit, async {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = s.read(&mut buf).await {
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    closed.ok().map(|()| got)
}

/// `closed_within`, asserted.
async fn until_closed(s: &mut TcpStream, limit: Duration) -> Vec<u8> {
    closed_within(s, limit)
        .await
        .expect("the server kept the connection open")
}

/// One HTTP/1.1 response read off the socket (Content-Length bodies only).
struct Raw {
    status: u16,
    head: String,
    body: Value,
}

async fn read_response(s: &mut TcpStream) -> Raw {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("a response")
            .expect("a response, not a reset");
        assert!(n > 0, "closed before a response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..end].to_vec())
        .unwrap()
        .to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("a content-length")
        .trim()
        .parse()
        .unwrap();
    let mut body = buf[end..].to_vec();
    while body.len() < len {
        let n = s.read(&mut chunk).await.expect("the body, not a reset");
        assert!(n > 0, "closed mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    Raw {
        status,
        head,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

fn post(key: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /v1/actions HTTP/1.1\r\nHost: hds\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Raises the soft limit on open files to the hard limit (this process holds
/// both ends of every connection; a common soft default is 1024) and returns it.
fn open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        l.current = l.maximum;
        let _ = setrlimit(Resource::Nofile, l);
    }
    getrlimit(Resource::Nofile).current
}

#[tokio::test]
async fn half_open_connections_are_closed_while_health_keeps_answering() {
    const N: usize = 500;
    if let Some(limit) = open_file_limit() {
        // Two ends per connection, plus the server's database and the test's own.
        assert!(
            limit >= 2 * N as u64 + 200,
            "this test holds {} sockets; raise `ulimit -n` (now {limit})",
            2 * N
        );
    }
    let app = TestApp::spawn_with(short).await;
    let key = app.live_key();
    // A third each: half a request line, a head without its blank line, a
    // body shorter than its Content-Length.
    let partial_body = {
        let mut p = post(&key, r#"{"title": "never whole", "options": []}"#);
        p.truncate(p.len() - 20);
        p
    };
    let started = Instant::now();
    let mut closing = Vec::new();
    for i in 0..N {
        let mut s = connect(&app).await;
        let sent: &[u8] = match i % 3 {
            0 => b"GET /hea",
            1 => b"GET /health HTTP/1.1\r\nHost: hds\r\n",
            _ => &partial_body,
        };
        s.write_all(sent).await.unwrap();
        // Closed within the longest timeout (the body's, 2 s) and a margin.
        closing.push(tokio::spawn(async move {
            let closed = closed_within(&mut s, Duration::from_secs(8)).await;
            closed.map(|_| started.elapsed())
        }));
    }
    let all_closed = tokio::spawn(futures::future::join_all(closing));
    // Meanwhile, a well-behaved client is served (new connections each time).
    let mut answered = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    while !all_closed.is_finished() && answered < 100 {
        tick.tick().await;
        let r = client_builder()
            .build()
            .unwrap()
            .get(format!("{}/health", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        answered += 1;
    }
    let times: Vec<Option<Duration>> = all_closed
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let open = times.iter().filter(|t| t.is_none()).count();
    assert_eq!(
        open, 0,
        "{open} of {N} connections were still open after 8 s"
    );
    let last = times.iter().flatten().max().unwrap();
    eprintln!(
        "{N} half-open connections closed by {last:?}; /health answered {answered} times meanwhile"
    );
    assert!(answered >= 2, "/health was not asked while they were held");
    // No partial body became an Action.
    let admin = app.admin();
    let list: Value = admin.get("/v1/me/actions", 200).await;
    assert_eq!(list["data"], json!([]), "{list}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout() {
    let app = TestApp::spawn_with(short).await;
    let mut s = connect(&app).await;
    let health = b"GET /health HTTP/1.1\r\nHost: hds\r\n\r\n";
    s.write_all(health).await.unwrap();
    assert_eq!(read_response(&mut s).await.status, 200);
    // Idle past the header timeout (1 s): the connection is still there.
    let mut one = [0u8; 1];
    let early = timeout(Duration::from_millis(1500), s.read(&mut one)).await;
    assert!(early.is_err(), "closed before the keep-alive timeout");
    s.write_all(health).await.unwrap();
    assert_eq!(read_response(&mut s).await.status, 200);
    // Then idle past the keep-alive timeout (3 s): closed.
    let t = Instant::now();
    until_closed(&mut s, Duration::from_secs(6)).await;
    eprintln!("idle keep-alive connection closed after {:?}", t.elapsed());
    // Not at the header timeout (1 s): at the keep-alive timeout (3 s).
    assert!(
        t.elapsed() >= Duration::from_millis(2500),
        "closed after {:?}, before the keep-alive timeout",
        t.elapsed()
    );
}

/// One address holds at most its share of connections; a further one is
/// closed at once, and a place frees when one of its connections ends.
/// A trusted proxy is exempt.
#[tokio::test]
async fn one_address_holds_at_most_its_share_of_connections() {
    let app = TestApp::spawn_with(|c| {
        c.max_connections_per_address = 5;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut s = connect(&app).await;
        // Half a request line: the connection is held (header timeout 10 s).
        s.write_all(b"GET /hea").await.unwrap();
        held.push(s);
    }
    // The sixth is closed without an answer.
    let mut sixth = connect(&app).await;
    let mut buf = [0u8; 64];
    let n = timeout(Duration::from_secs(5), sixth.read(&mut buf))
        .await
        .expect("the sixth connection was neither served nor closed");
    assert!(
        matches!(n, Ok(0) | Err(_)),
        "the sixth connection was served"
    );
    // One ends; a new connection is served.
    drop(held.pop());
    let mut answered = false;
    for _ in 0..50 {
        let mut s = connect(&app).await;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: hds\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        if out.starts_with(b"HTTP/1.1 200") {
            answered = true;
            break;
        }
        // The server may not have seen the close yet.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(answered, "no place came free after a connection closed");

    // Behind a trusted proxy every client shares the proxy's address: no cap.
    let proxied = TestApp::spawn_with(|c| {
        c.max_connections_per_address = 2;
        c.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let mut many = Vec::new();
    for _ in 0..6 {
        let mut s = connect(&proxied).await;
        s.write_all(b"GET /hea").await.unwrap();
        many.push(s);
    }
    let mut s = connect(&proxied).await;
    s.write_all(b"GET /health HTTP/1.1\r\nHost: hds\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

/// A client that pipelines requests and never reads the answers is
/// disconnected once a write has made no progress for the write timeout;
/// it cannot hold its connection (and a place) forever.
#[tokio::test]
async fn a_client_that_never_reads_its_answers_is_disconnected() {
    let app = TestApp::spawn_with(short).await;
    let addr: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    // A small receive window fills fast.
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(addr).await.unwrap();
    let one = b"GET /v1/openapi.json HTTP/1.1\r\nHost: hds\r\n\r\n";
    let many: Vec<u8> = one.iter().copied().cycle().take(one.len() * 400).collect();
    // The server stops reading once its answers back up; write what it takes.
    let _ = timeout(Duration::from_secs(3), s.write_all(&many)).await;
    // Past the write timeout (1 s) with nothing read…
    tokio::time::sleep(Duration::from_secs(3)).await;
    // …the server has given up: what was sent drains, then the stream ends.
    let mut sink = vec![0u8; 1 << 16];
    let mut total = 0usize;
    let ended = timeout(Duration::from_secs(20), async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the connection was still open after {total} bytes"
    );
    let doc = client_builder()
        .build()
        .unwrap()
        .get(format!("{}/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let answers = 400 * doc.len();
    assert!(
        total < answers,
        "all {total} bytes arrived: nothing was cut"
    );
}

#[tokio::test]
async fn a_long_poll_and_the_event_stream_outlast_the_read_timeouts() {
    let app = TestApp::spawn_with(short).await;
    let a = app.create_action(two_options("Slow to decide")).await;
    let id = a["id"].as_str().unwrap();
    let mut poll = app.held_poll(id).await;

    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let events = browser.url("/app/events");
    let first = browser.http().get(&events).send().await.unwrap();
    let seen = first.headers().get("content-type").cloned();
    assert_eq!(seen.unwrap(), "text/event-stream");
    let text = first.text().await.unwrap();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an event id")
        .to_owned();
    let held_events = {
        let req = browser.http().get(&events).header("last-event-id", version);
        tokio::spawn(async move { req.send().await.unwrap().text().await.unwrap() })
    };

    // Both wait longer than the header, body and keep-alive timeouts.
    assert!(
        timeout(Duration::from_secs(4), &mut poll).await.is_err(),
        "the long poll answered before the decision"
    );
    assert!(!held_events.is_finished(), "the event stream ended early");
    let d = app.decide(&a, json!({"option_id": "approve"})).await;
    d.ok(200);
    assert_eq!(TestApp::answer(poll).await["status"], "resolved");
    let text = timeout(Duration::from_secs(10), held_events)
        .await
        .unwrap()
        .unwrap();
    assert!(text.contains("event: changed"), "{text}");
}

/// A 200 KB create refused before its body is read: the answer says
/// `Connection: close`, arrives whole (no reset), the connection then ends
/// cleanly, and a client's next request (on a new connection) succeeds.
#[tokio::test]
async fn a_large_post_refused_early_is_answered_whole_and_the_client_goes_on() {
    let app = TestApp::spawn_with(|c| c.rate_limit = 1).await;
    let key = app.live_key();
    let big = json!({"title": "big", "metadata": {"blob": "x".repeat(200 * 1024)}}).to_string();

    // 401: a key that does not exist.
    let mut s = connect(&app).await;
    s.write_all(&post("svc_live_nope", &big)).await.unwrap();
    let r = read_response(&mut s).await;
    assert_eq!(r.status, 401, "{}", r.head);
    assert_eq!(r.body["error"]["code"], "INVALID_API_KEY");
    assert!(r.head.contains("connection: close"), "{}", r.head);
    assert!(
        until_closed(&mut s, Duration::from_secs(5))
            .await
            .is_empty()
    );

    // A body too large for the sockets' buffers (and over the limit: its
    // declared length is refused before the key is looked at): the client
    // is still writing when the answer comes, so hds reads on (lingers) to
    // let it finish and read the answer instead of meeting a reset.
    let huge = format!("{{\"title\": \"{}\"}}", "x".repeat(4 << 20));
    let mut s = connect(&app).await;
    s.write_all(&post("svc_live_nope", &huge)).await.unwrap();
    let r = read_response(&mut s).await;
    assert_eq!(r.status, 413, "{}", r.head);
    assert_eq!(
        r.body["error"]["code"], "ACTION_PAYLOAD_TOO_LARGE",
        "{}",
        r.body
    );
    assert!(r.head.contains("connection: close"), "{}", r.head);

    // 429: the bucket (rate 1, burst 2) spent on one keep-alive connection.
    // Until it runs out, each big body is read whole and refused (422, the
    // connection goes on); the first 429 leaves it unread. Bounded, and not
    // timing-dependent: it takes seconds of delay for the bucket to refill
    // as fast as it is spent.
    let mut s = connect(&app).await;
    let mut r = None;
    for _ in 0..10 {
        s.write_all(&post(&key, &big)).await.unwrap();
        let got = read_response(&mut s).await;
        if got.status == 429 {
            r = Some(got);
            break;
        }
        assert_eq!(got.status, 422, "{}", got.body);
        assert!(!got.head.contains("connection: close"), "{}", got.head);
    }
    let r = r.expect("no 429 within 10 requests at a rate of 1/s");
    assert_eq!(r.status, 429, "{}", r.head);
    assert_eq!(r.body["error"]["code"], "RATE_LIMITED");
    assert!(r.head.contains("connection: close"), "{}", r.head);
    assert!(
        until_closed(&mut s, Duration::from_secs(5))
            .await
            .is_empty()
    );

    // An HTTP client takes the hint: its next request goes out on a new
    // connection and succeeds.
    let http = client_builder().build().unwrap();
    let refused = http
        .post(format!("{}/v1/actions", app.base))
        .bearer_auth("svc_live_nope")
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let ok = http
        .get(format!("{}/health", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

/// A body that stalls past the body timeout is refused and the connection
/// closed; nothing of it is stored.
#[tokio::test]
async fn a_stalled_body_is_refused_and_nothing_is_stored() {
    let app = TestApp::spawn_with(short).await;
    let mut s = connect(&app).await;
    let mut p = post(&app.live_key(), &two_options("half").to_string());
    p.truncate(p.len() - 10);
    s.write_all(&p).await.unwrap();
    let r = read_response(&mut s).await;
    assert_eq!(r.status, 422, "{}", r.head);
    assert_eq!(r.body["error"]["code"], "VALIDATION_ERROR");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not arrive within 2 s"),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["error"]["details"]["errors"][0]["field"], "body",
        "{}",
        r.body
    );
    assert!(r.head.contains("connection: close"), "{}", r.head);
    until_closed(&mut s, Duration::from_secs(5)).await;
    let list: Value = app.admin().get("/v1/me/actions", 200).await;
    assert_eq!(list["data"], json!([]), "{list}");
}

/// A `Content-Length` over the limit is refused at once, before the body
/// arrives (the client is not left to send it, nor to wait for the body
/// timeout): 413 with the limit, on every kind of body.
#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_the_body() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Rotate")).await;
    let id = a["id"].as_str().unwrap();
    for (path, key, code) in [
        (
            "/v1/actions".to_owned(),
            app.live_key(),
            "ACTION_PAYLOAD_TOO_LARGE",
        ),
        (
            format!("/v1/actions/{id}"),
            app.live_key(),
            "ACTION_PAYLOAD_TOO_LARGE",
        ),
        (
            format!("/v1/actions/{id}/comments"),
            app.user_token(),
            "PAYLOAD_TOO_LARGE",
        ),
        (
            format!("/v1/actions/{id}/cancel"),
            app.live_key(),
            "PAYLOAD_TOO_LARGE",
        ),
        // Routes that read no body at all.
        (
            format!("/v1/actions/{id}/claim"),
            app.user_token(),
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "/v1/notifications/read-all".to_owned(),
            app.user_token(),
            "PAYLOAD_TOO_LARGE",
        ),
    ] {
        let method = if path.ends_with(id) { "PATCH" } else { "POST" };
        let mut s = connect(&app).await;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: hds\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{{}}"
        );
        s.write_all(head.as_bytes()).await.unwrap();
        // Within the 10 s read_response allows, far below the body timeout.
        let r = read_response(&mut s).await;
        assert_eq!(r.status, 413, "{path}: {}", r.head);
        assert_eq!(r.body["error"]["code"], code, "{path}: {}", r.body);
        assert_eq!(
            r.body["error"]["details"]["limit_bytes"], 262_144,
            "{}",
            r.body
        );
    }
    // A dashboard form gets the error page, not JSON.
    let mut s = connect(&app).await;
    let head = format!(
        "POST /app/actions/{id}/comments HTTP/1.1\r\nHost: hds\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 999999999\r\n\r\nbody=x"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let r = read_response(&mut s).await;
    assert_eq!(r.status, 413, "{}", r.head);
    assert!(r.head.contains("content-type: text/html"), "{}", r.head);
    let a: Value = app.source().get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(a["data"]["status"], "open", "nothing applied: {a}");
    assert!(a["data"]["assignee"].is_null(), "not claimed: {a}");
}
