//! Fake proxies: each a stats endpoint on its own loopback address that
//! answers what the test makes it serve, as istiod and the filter would
//! (tests/served.rs, tests/served_writes.rs), and their pods.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use attache_apiserver::Handle;
use attache_controller::served::document::of_plugin;

use super::standin::free_port;

/// What a fake proxy answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The exposition of a filter serving `id` that refused `invalid`
    /// documents.
    Serves { id: u64, invalid: u64 },
    /// Accepts the connection and never answers.
    Hang,
    /// Bytes that are not HTTP.
    Garbage,
    /// An endless body.
    Huge,
}

pub type Shared = Arc<Mutex<Answer>>;

async fn answer(mut socket: tokio::net::TcpStream, answer: Answer) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    assert!(
        !String::from_utf8_lossy(&request)
            .to_ascii_lowercase()
            .contains("authorization"),
        "no credentials are sent"
    );
    match answer {
        Answer::Serves { id, invalid } => {
            let body = format!(
                "# TYPE attache_config_document_id gauge\nattache_config_document_id{{}} {id}\nattache_configs_rejected_invalid{{}} {invalid}\n"
            );
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
        }
        Answer::Hang => tokio::time::sleep(Duration::from_secs(3600)).await,
        Answer::Garbage => {
            let _ = socket.write_all(b"\x00\xffnot http at all\r\n\r\n").await;
        }
        Answer::Huge => {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await;
            let line = "envoy_padding{} 1\n".repeat(4096);
            let chunk = format!("{:x}\r\n{line}\r\n", line.len());
            while socket.write_all(chunk.as_bytes()).await.is_ok() {}
        }
    }
}

/// Fake proxies on 127.0.0.N for each N of `last_octets`, one port.
pub async fn proxies(last_octets: &[u8]) -> (u16, Vec<(IpAddr, Shared)>) {
    'port: loop {
        let port = free_port();
        let mut out = Vec::new();
        for &n in last_octets {
            let ip = IpAddr::from([127, 0, 0, n]);
            let Ok(listener) = TcpListener::bind(SocketAddr::new(ip, port)).await else {
                continue 'port;
            };
            let shared: Shared = Arc::new(Mutex::new(Answer::Serves { id: 0, invalid: 0 }));
            let state = shared.clone();
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let now = state.lock().unwrap().clone();
                    tokio::spawn(answer(socket, now));
                }
            });
            out.push((ip, shared));
        }
        return (port, out);
    }
}

pub fn pod_of(gateway: &str, i: usize, ip: IpAddr) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{gateway}-{i}"), "namespace": "infra",
                     "labels": {"gateway.networking.k8s.io/gateway-name": gateway}},
        "spec": {"containers": [{"name": "istio-proxy", "image": "proxyv2"}]},
        "status": {"podIP": ip.to_string(),
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

pub fn set(proxy: &Shared, to: Answer) {
    *proxy.lock().unwrap() = to;
}

/// The document id of the WasmPlugin the controller applied for
/// examples/shop's `edge` Gateway: what the fake proxies are made to serve.
pub fn applied_id(server: &Handle) -> u64 {
    let plugin = server
        .object(
            "extensions.istio.io",
            "wasmplugins",
            "infra",
            "attache-edge",
        )
        .unwrap();
    of_plugin(&plugin).unwrap()
}
