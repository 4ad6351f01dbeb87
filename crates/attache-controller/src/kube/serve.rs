//! `/healthz`, `/readyz` and `/metrics` over plain HTTP/1.1 on the metrics
//! port. Three fixed GET answers: a minimal responder on tokio's listener
//! rather than an HTTP server framework.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::metrics::Metrics;

/// What the probes ask.
pub trait Probe: Send + Sync + 'static {
    /// The caches are whole (every kind listed once or known missing).
    fn ready(&self) -> bool;
}

/// The answer to one request line: status and body.
pub fn answer(request_line: &str, probe: &dyn Probe, metrics: &Metrics) -> (u16, String) {
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method != "GET" {
        return (405, "only GET\n".into());
    }
    match path {
        // Alive while the process answers: a wedged watcher is not fixed by
        // a restart, and the caches are rebuilt on one anyway.
        "/healthz" => (200, "ok\n".into()),
        "/readyz" if probe.ready() => (200, "ok\n".into()),
        "/readyz" => (503, "caches not synced yet\n".into()),
        "/metrics" => (200, metrics.render()),
        _ => (404, "not found: /healthz, /readyz, /metrics\n".into()),
    }
}

pub async fn serve(listener: TcpListener, probe: Arc<dyn Probe>, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            continue;
        };
        let (probe, metrics) = (probe.clone(), metrics.clone());
        tokio::spawn(async move {
            // Read until the request line is whole: a client may send it in
            // several segments (one read once answered "GET" alone, 404).
            let mut buf = vec![0u8; 2048];
            let mut n = 0;
            while n < buf.len() && !buf[..n].contains(&b'\n') {
                match socket.read(&mut buf[n..]).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => n += read,
                }
            }
            let text = String::from_utf8_lossy(&buf[..n]);
            let line = text.lines().next().unwrap_or("");
            let (code, body) = answer(line, probe.as_ref(), &metrics);
            let reason = match code {
                200 => "OK",
                404 => "Not Found",
                405 => "Method Not Allowed",
                _ => "Service Unavailable",
            };
            let head = format!(
                "HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(bool);
    impl Probe for Fixed {
        fn ready(&self) -> bool {
            self.0
        }
    }

    #[test]
    fn probes_answer_as_kubelet_expects() {
        let m = Metrics::default();
        assert_eq!(answer("GET /healthz HTTP/1.1", &Fixed(false), &m).0, 200);
        assert_eq!(answer("GET /readyz HTTP/1.1", &Fixed(false), &m).0, 503);
        assert_eq!(answer("GET /readyz HTTP/1.1", &Fixed(true), &m).0, 200);
        let (code, body) = answer("GET /metrics HTTP/1.1", &Fixed(true), &m);
        assert_eq!(code, 200);
        assert!(body.contains("attache_reconciles_total 0"));
        assert_eq!(answer("POST /readyz HTTP/1.1", &Fixed(true), &m).0, 405);
    }

    #[tokio::test]
    async fn a_request_line_in_two_segments_is_read_whole() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(
            listener,
            Arc::new(Fixed(false)),
            Arc::new(Metrics::default()),
        ));
        let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
        client.write_all(b"GET ").await.unwrap();
        client.flush().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        client
            .write_all(b"/readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        server.abort();
    }
}
