//! The real binary over real sockets: the contract the end-to-end harness
//! and the demo rely on (first stdout line, keep-alive, attempt records),
//! and the property that made it replace tiny_http: connections held open
//! by keep-alive never keep a new connection from being answered.

// Test code: a failed expectation is the test failing, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Backend {
    child: Child,
    addr: String,
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Backend {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attache-testbackend"))
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the backend");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Backend { child, addr }
}

/// A connection that fails the test instead of hanging it.
fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("read timeout");
    stream
}

/// Sends one request and reads one response (status, lower-case headers, body).
fn exchange(
    stream: &mut TcpStream,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    send(stream, path, headers);
    receive(stream)
}

fn send(stream: &mut TcpStream, path: &str, headers: &[(&str, &str)]) {
    let mut request = format!("GET {path} HTTP/1.1\r\nhost: test\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("send");
}

fn receive(stream: &mut TcpStream) -> (u16, Vec<(String, String)>, String) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut response_headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("header");
        response_headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = response_headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .expect("content-length");
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    (
        status,
        response_headers,
        String::from_utf8(body).expect("utf-8 body"),
    )
}

#[test]
fn keep_alive_connection_serves_fail_times_then_success_and_records_attempts() {
    let backend = start();
    let mut conn = connect(&backend.addr);
    let plan = [
        ("x-backend-key", "k"),
        ("x-backend-fail-times", "2"),
        ("x-backend-status", "502"),
    ];
    let statuses: Vec<u16> = (0..3)
        .map(|_| exchange(&mut conn, "/x?y=1", &plan).0)
        .collect();
    assert_eq!(statuses, [502, 502, 200]);

    let (status, headers, body) = exchange(&mut conn, "/echo?q=1", &[("x-a", "1"), ("x-a", "2")]);
    assert_eq!(status, 200);
    assert!(headers.contains(&("x-backend-attempt".to_owned(), "1".to_owned())));
    let echo: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(echo["path"], "/echo");
    assert_eq!(echo["query"], "q=1");
    assert_eq!(echo["headers"]["x-a"], serde_json::json!(["1", "2"]));

    let (_, _, body) = exchange(&mut conn, "/__attempts/k", &[]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).expect("json")["attempts"],
        3
    );
}

#[test]
fn bad_control_header_is_a_400_naming_it() {
    let backend = start();
    let (status, _, body) = exchange(
        &mut connect(&backend.addr),
        "/",
        &[("x-backend-delay-ms", "soon")],
    );
    assert_eq!(status, 400);
    assert!(body.contains("x-backend-delay-ms"), "{body}");
}

#[test]
fn a_burst_of_connections_held_open_is_answered_in_full() {
    let backend = start();
    // Envoy's upstream pool opens connections in bursts and keeps them open
    // after their answer. Every one must be answered while the others stay
    // open (tiny_http queued some behind the open ones, forever).
    const CONNECTIONS: usize = 32;
    let release = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (answered, answers) = std::sync::mpsc::channel();
    let holders: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (addr, answered, release) =
                (backend.addr.clone(), answered.clone(), release.clone());
            std::thread::spawn(move || {
                let mut conn = connect(&addr);
                let status = exchange(&mut conn, "/", &[]).0;
                answered.send(status).expect("report");
                // Hold the connection open, as a keep-alive pool does.
                for _ in 0..3000 {
                    if release.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                drop(conn);
            })
        })
        .collect();
    let statuses: Vec<u16> = (0..CONNECTIONS)
        .map(|i| {
            answers
                .recv_timeout(Duration::from_secs(25))
                .unwrap_or_else(|_| panic!("only {i} of {CONNECTIONS} connections were answered"))
        })
        .collect();
    release.store(true, std::sync::atomic::Ordering::Relaxed);
    for holder in holders {
        holder.join().expect("holder");
    }
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
}

#[test]
fn connections_busy_with_slow_answers_never_block_a_new_one() {
    let backend = start();
    // Many keep-alive connections, each busy with a slow request, as Envoy's
    // upstream pool holds them under load.
    let (sent, all_sent) = std::sync::mpsc::channel();
    let busy: Vec<_> = (0..32)
        .map(|_| {
            let (addr, sent) = (backend.addr.clone(), sent.clone());
            std::thread::spawn(move || {
                let mut conn = connect(&addr);
                send(&mut conn, "/", &[("x-backend-delay-ms", "1500")]);
                sent.send(()).expect("signal");
                receive(&mut conn).0
            })
        })
        .collect();
    for _ in 0..32 {
        all_sent.recv().expect("every busy request sent");
    }
    // A fresh connection is answered while they are all still open.
    let (status, _, _) = exchange(&mut connect(&backend.addr), "/", &[]);
    assert_eq!(status, 200);
    for handle in busy {
        assert_eq!(handle.join().expect("busy connection"), 200);
    }
}
