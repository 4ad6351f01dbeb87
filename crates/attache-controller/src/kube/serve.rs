//! `/healthz`, `/readyz` and `/metrics` on the probe port, served by axum
//! (HTTP/1.1 parsing, keep-alive and partial reads are hyper's, not ours).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use super::metrics::Metrics;

/// What the probes ask.
pub trait Probe: Send + Sync + 'static {
    /// The caches are whole (every kind listed once or known missing).
    fn ready(&self) -> bool;
}

#[derive(Clone)]
struct Served {
    probe: Arc<dyn Probe>,
    metrics: Arc<Metrics>,
}

/// OpenMetrics' content type (prometheus-client writes that format).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The three routes; anything else is a 404 naming them, and a method
/// other than GET (or HEAD) a 405.
pub fn router(probe: Arc<dyn Probe>, metrics: Arc<Metrics>) -> Router {
    Router::new()
        // Alive while the process answers: a wedged watcher is not fixed by
        // a restart, and the caches are rebuilt on one anyway.
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "not found: /healthz, /readyz, /metrics\n",
            )
        })
        .with_state(Served { probe, metrics })
}

async fn readyz(State(served): State<Served>) -> impl IntoResponse {
    if served.probe.ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced yet\n")
    }
}

async fn metrics_text(State(served): State<Served>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, OPENMETRICS)],
        served.metrics.render(),
    )
}

/// Serves until the process ends; an error of the server is logged.
pub async fn serve(listener: TcpListener, probe: Arc<dyn Probe>, metrics: Arc<Metrics>) {
    if let Err(e) = axum::serve(listener, router(probe, metrics)).await {
        tracing::error!(error = %e, "the probe server stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct Fixed(bool);
    impl Probe for Fixed {
        fn ready(&self) -> bool {
            self.0
        }
    }

    /// One raw request over TCP, sent in `segments`, and the whole answer.
    async fn ask(ready: bool, segments: &[&str]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(
            listener,
            Arc::new(Fixed(ready)),
            Arc::new(Metrics::default()),
        ));
        let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
        for segment in segments {
            client.write_all(segment.as_bytes()).await.unwrap();
            client.flush().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        server.abort();
        answer
    }

    fn request(method: &str, path: &str) -> String {
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    }

    #[tokio::test]
    async fn probes_answer_as_kubelet_expects() {
        let healthz = request("GET", "/healthz");
        assert!(ask(false, &[&healthz]).await.starts_with("HTTP/1.1 200 "));
        let readyz = request("GET", "/readyz");
        assert!(ask(false, &[&readyz]).await.starts_with("HTTP/1.1 503 "));
        assert!(ask(true, &[&readyz]).await.starts_with("HTTP/1.1 200 "));
        let metrics = ask(true, &[&request("GET", "/metrics")]).await;
        assert!(metrics.starts_with("HTTP/1.1 200 "), "{metrics}");
        assert!(
            metrics.contains("application/openmetrics-text"),
            "{metrics}"
        );
        assert!(metrics.contains("attache_reconciles_total 0"), "{metrics}");
        let post = ask(true, &[&request("POST", "/readyz")]).await;
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        let other = ask(true, &[&request("GET", "/other")]).await;
        assert!(other.starts_with("HTTP/1.1 404 "), "{other}");
    }

    #[tokio::test]
    async fn a_request_line_in_two_segments_is_read_whole() {
        let answer = ask(
            false,
            &[
                "GET ",
                "/readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            ],
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    }
}
