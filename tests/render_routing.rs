//! The rendered routes in a real Envoy route requests as Gateway API says:
//! precedence (exact, longest prefix, method, headers, query, regex last),
//! whole-segment prefixes, hostname precedence with wildcard fallback,
//! `Host` with a port, and 500 for a rule without backends.
//!
//! Every rule sends to its own Service, and every Service is pointed
//! (`--backend`) at its own little in-test server that answers with the
//! Service's name, so the answer says which rule Envoy picked. No filter
//! behaviour is involved, but Envoy needs the filter's .wasm to load the
//! bootstrap: ENVOY_BIN / ATTACHE_WASM as in tests/render_envoy.rs, and
//! ATTACHE_SKIP_ENVOY=1 to skip knowingly.

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::envoy_and_wasm;

const MANIFESTS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: attache}
spec: {controllerName: attache.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: attache
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: exact-host, namespace: t}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  hostnames: [a.example.com]
  rules:
  # Listed from least to most specific: Envoy must not take them in this order.
  - matches: [{path: {type: PathPrefix, value: /h}}]
    backendRefs: [{name: plain-h, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /h}, queryParams: [{name: q, value: "1"}]}]
    backendRefs: [{name: query, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /h}, headers: [{name: X-H, value: "1"}]}]
    backendRefs: [{name: header, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /h}, method: POST}]
    backendRefs: [{name: method, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /x}}]
    backendRefs: [{name: prefix-x, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /x/y/}}]
    backendRefs: [{name: prefix-xy, port: 80}]
  - matches: [{path: {type: Exact, value: /x}}]
    backendRefs: [{name: exact-x, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /gone}}]
    backendRefs: [{name: prefix-x, port: 80, weight: 0}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: regex-host, namespace: t}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  hostnames: [r.example.com]
  rules:
  - matches: [{path: {type: RegularExpression, value: "/r[0-9]+"}}]
    backendRefs: [{name: regex, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /r1}}]
    backendRefs: [{name: prefix-r1, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wildcard, namespace: t}
spec:
  parentRefs: [{name: edge, namespace: infra}]
  hostnames: ["*.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: wild-root, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /only-wild}}]
    backendRefs: [{name: wild-only, port: 80}]
"#;

const SERVICES: &[&str] = &[
    "plain-h",
    "query",
    "header",
    "method",
    "prefix-x",
    "prefix-xy",
    "exact-x",
    "regex",
    "prefix-r1",
    "wild-root",
    "wild-only",
];

/// A request and the Service whose rule must answer it.
struct Case {
    method: &'static str,
    host: &'static str,
    path: &'static str,
    header: Option<(&'static str, &'static str)>,
    expect: &'static str,
}

const fn case(
    method: &'static str,
    host: &'static str,
    path: &'static str,
    expect: &'static str,
) -> Case {
    Case {
        method,
        host,
        path,
        header: None,
        expect,
    }
}

const fn with_header(c: Case, name: &'static str, value: &'static str) -> Case {
    Case {
        header: Some((name, value)),
        ..c
    }
}

const CASES: &[Case] = &[
    case("GET", "a.example.com", "/x", "exact-x"),
    case("GET", "a.example.com", "/x/", "prefix-x"),
    case("GET", "a.example.com", "/x/y", "prefix-xy"),
    case("GET", "a.example.com", "/x/y/z", "prefix-xy"),
    // Whole segments: /xz is not under /x, so a.example.com has no rule
    // for it and the wildcard hostname's rules get their turn.
    case("GET", "a.example.com", "/xz", "wild-root"),
    case("GET", "a.example.com", "/only-wild", "wild-only"),
    with_header(
        case("POST", "a.example.com", "/h?q=1", "method"),
        "x-h",
        "1",
    ),
    with_header(case("GET", "a.example.com", "/h?q=1", "header"), "x-h", "1"),
    case("GET", "a.example.com", "/h?q=1", "query"),
    case("GET", "a.example.com", "/h", "plain-h"),
    case("GET", "A.Example.COM", "/h", "plain-h"),
    case("GET", "r.example.com", "/r1", "prefix-r1"),
    case("GET", "r.example.com", "/r2", "regex"),
    case("GET", "r.example.com", "/r", "wild-root"),
    case("GET", "b.example.com", "/x", "wild-root"),
];

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server that answers every request with `name`, then closes.
fn answering_server(name: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || answer(stream, name));
        }
    });
    port
}

fn answer(mut stream: TcpStream, name: &str) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{name}",
        name.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

/// One request; returns (status, body).
fn request(
    port: u16,
    method: &str,
    host: &str,
    path: &str,
    header: Option<(&str, &str)>,
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let extra = header.map_or(String::new(), |(n, v)| format!("{n}: {v}\r\n"));
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(text.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = reply
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string());
    (status, body)
}

struct Envoy(Child);

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_ready(admin: u16, envoy: &mut Envoy, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = envoy.0.try_wait() {
            panic!(
                "Envoy exited ({status}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", admin)) {
            let _ = s.write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut reply = String::new();
            if s.read_to_string(&mut reply).is_ok() && reply.starts_with("HTTP/1.1 200") {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "Envoy not ready:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn envoy_routes_requests_the_way_gateway_api_ranks_the_rules() {
    let Some((envoy_bin, wasm)) = envoy_and_wasm("routing in Envoy not checked") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("attache-render-routing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input.yaml");
    std::fs::write(&input, MANIFESTS).unwrap();
    let (ecds, bootstrap, log) = (
        dir.join("attache-ecds.json"),
        dir.join("envoy.yaml"),
        dir.join("envoy.log"),
    );
    let (listener, admin) = (free_port(), free_port());

    let run = |args: Vec<String>| {
        let output = Command::new(env!("CARGO_BIN_EXE_attache"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "attache {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    run(vec![
        "render".into(),
        "ecds".into(),
        "-f".into(),
        path(&input),
        "--wasm".into(),
        path(&wasm),
        "-o".into(),
        path(&ecds),
    ]);
    let mut args: Vec<String> = [
        "render",
        "envoy",
        "-f",
        &path(&input),
        "--ecds",
        &path(&ecds),
        "--wasm",
        &path(&wasm),
    ]
    .map(String::from)
    .to_vec();
    for name in SERVICES {
        args.push("--backend".into());
        args.push(format!("t/{name}=127.0.0.1:{}", answering_server(name)));
    }
    args.extend([
        "--listener-port".into(),
        format!("http={listener}"),
        "--admin-port".into(),
        admin.to_string(),
        "--listen-address".into(),
        "127.0.0.1".into(),
        "-o".into(),
        path(&bootstrap),
    ]);
    run(args);

    let mut envoy = Envoy(
        Command::new(&envoy_bin)
            .args(["--disable-hot-restart", "--log-level", "warn", "-c"])
            .arg(&bootstrap)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_ready(admin, &mut envoy, &log);

    let mut wrong = Vec::new();
    for c in CASES {
        let (status, body) = request(listener, c.method, c.host, c.path, c.header);
        if (status, body.as_str()) != (200, c.expect) {
            let (method, host, path, header, want) = (c.method, c.host, c.path, c.header, c.expect);
            wrong.push(format!(
                "{method} {host}{path} {header:?}: got {status} {body:?}, want {want}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} requests went elsewhere:\n{}",
        wrong.len(),
        CASES.len(),
        wrong.join("\n")
    );

    assert_eq!(
        request(listener, "GET", "a.example.com", "/gone", None).0,
        500,
        "a rule without backends answers 500"
    );
    assert_eq!(
        request(listener, "GET", "other.test", "/x", None).0,
        404,
        "no rule for the host"
    );
    drop(envoy);
    let _ = std::fs::remove_dir_all(&dir);
}
