//! The thin shell of "Programmed means served" (docs/controller.md): a
//! kube-runtime reflector of the Gateways' proxy pods, and one HTTP GET of
//! each ready pod's stats (`http://<podIP>:<port><path>`) with a short
//! timeout, a bound on the bytes read and nothing but a `Host` header
//! sent. The decisions are `crate::served`'s.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use attache_core::topology::ObjectKey;
use futures::StreamExt;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::served::stats::Reader;
use crate::served::Scrape;

/// Istio's label on a Gateway's proxy pods: the Gateway's name.
pub const DEFAULT_LABEL: &str = "gateway.networking.k8s.io/gateway-name";
/// Istio's merged stats endpoint (the proxy's own and the application's).
pub const DEFAULT_PORT: u16 = 15020;
pub const DEFAULT_PATH: &str = "/stats/prometheus";

/// How the proxies are found and read (`attache controller
/// --proxy-selector-label`, `--proxy-stats-port`, `--proxy-stats-path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeOptions {
    pub label: String,
    pub port: u16,
    pub path: String,
    /// The whole GET: connect, request, body.
    pub timeout: Duration,
    /// Bytes of body read at most; the lines are read as they come, one
    /// held at a time (`crate::served::stats::Reader`).
    pub max_bytes: u64,
    /// Pods read at once, over all Gateways (`Semaphore` permits).
    pub concurrency: usize,
}

impl Default for ScrapeOptions {
    fn default() -> Self {
        ScrapeOptions {
            label: DEFAULT_LABEL.into(),
            port: DEFAULT_PORT,
            path: DEFAULT_PATH.into(),
            timeout: Duration::from_secs(2),
            // Istio's merged endpoint of a large gateway: a few MiB.
            max_bytes: 32 * 1024 * 1024,
            concurrency: 16,
        }
    }
}

/// Why a pod's stats were not read.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("cannot connect: {0}")]
    Connect(#[source] std::io::Error),
    #[error("not an HTTP answer: {0}")]
    Http(#[source] hyper::Error),
    #[error("cannot build the request: {0}")]
    Request(#[source] hyper::http::Error),
    #[error("answered {0}")]
    Status(hyper::StatusCode),
    #[error("answered more than {0} bytes")]
    TooLarge(u64),
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("the answer has no {}", crate::served::stats::DOCUMENT_ID)]
    NoFilter,
}

/// Pods with the selector label, cluster-wide or in each of `namespaces`,
/// kept current by kube-runtime's watchers, whose tasks go to `tasks`
/// (aborted with the loop's).
pub fn watch_pods(
    client: &Client,
    label: &str,
    namespaces: &std::collections::BTreeSet<String>,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Vec<Store<Pod>> {
    let apis: Vec<Api<Pod>> = if namespaces.is_empty() {
        vec![Api::all(client.clone())]
    } else {
        namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect()
    };
    apis.into_iter()
        .map(|api| {
            let (reader, writer) = reflector::store();
            let config = watcher::Config::default().labels(label);
            tasks.push(tokio::spawn(async move {
                let stream = watcher(api, config)
                    .default_backoff()
                    .modify(|pod: &mut Pod| pod.metadata.managed_fields = None);
                let events = reflector::reflector(writer, stream);
                futures::pin_mut!(events);
                while let Some(event) = events.next().await {
                    if let Err(e) = event {
                        tracing::warn!(error = %e, "cannot watch the Gateways' proxy pods; their stats are not read until it recovers");
                    }
                }
            }));
            reader
        })
        .collect()
}

/// The ready pods of each Gateway: in its namespace, labelled with its
/// name, Ready, with an IP, not being deleted. By pod name.
pub fn ready_pods(
    stores: &[Store<Pod>],
    label: &str,
    gateways: impl IntoIterator<Item = ObjectKey>,
) -> BTreeMap<ObjectKey, BTreeMap<String, IpAddr>> {
    let mut out: BTreeMap<ObjectKey, BTreeMap<String, IpAddr>> =
        gateways.into_iter().map(|g| (g, BTreeMap::new())).collect();
    for pod in stores.iter().flat_map(Store::state) {
        let meta = &pod.metadata;
        let (Some(namespace), Some(name), Some(gateway)) = (
            meta.namespace.as_ref(),
            meta.name.as_ref(),
            meta.labels.as_ref().and_then(|l| l.get(label)),
        ) else {
            continue;
        };
        let key = ObjectKey {
            namespace: namespace.clone(),
            name: gateway.clone(),
        };
        let Some(pods) = out.get_mut(&key) else {
            continue;
        };
        if let Some(ip) = ready_ip(&pod) {
            pods.insert(name.clone(), ip);
        }
    }
    out
}

fn ready_ip(pod: &Pod) -> Option<IpAddr> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    ready.then(|| status.pod_ip.as_ref()?.parse().ok())?
}

/// One pod's figures, or why none: never longer than the timeout.
pub async fn scrape(ip: IpAddr, options: &ScrapeOptions) -> Scrape {
    let address = SocketAddr::new(ip, options.port);
    let read = tokio::time::timeout(options.timeout, get(address, options)).await;
    match read {
        Ok(Ok(stats)) if stats.document.is_some() => Scrape::Read(stats),
        Ok(Ok(_)) => Scrape::Failed(ScrapeError::NoFilter.to_string()),
        Ok(Err(e)) => Scrape::Failed(e.to_string()),
        Err(_) => Scrape::Failed(ScrapeError::Timeout(options.timeout).to_string()),
    }
}

async fn get(
    address: SocketAddr,
    options: &ScrapeOptions,
) -> Result<crate::served::ProxyStats, ScrapeError> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(ScrapeError::Connect)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(ScrapeError::Http)?;
    // The connection is driven beside the request, and dropped with it.
    let connection = tokio::spawn(connection);
    let _abort = AbortOnDrop(connection);
    let request = hyper::Request::get(&options.path)
        .header(hyper::header::HOST, address.to_string())
        .body(Empty::<Bytes>::new())
        .map_err(ScrapeError::Request)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(ScrapeError::Http)?;
    if !response.status().is_success() {
        return Err(ScrapeError::Status(response.status()));
    }
    let mut body = response.into_body();
    let (mut reader, mut read) = (Reader::default(), 0u64);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(ScrapeError::Http)?;
        if let Some(data) = frame.data_ref() {
            read += data.len() as u64;
            if read > options.max_bytes {
                return Err(ScrapeError::TooLarge(options.max_bytes));
            }
            reader.feed(data);
        }
    }
    Ok(reader.finish())
}

struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every ready pod of one Gateway, each holding one of `permits` (shared
/// by all Gateways: at most `concurrency` pods are read at once) while it
/// is read. A pod that hangs holds its permit for the timeout only.
pub async fn scrape_gateway(
    pods: BTreeMap<String, IpAddr>,
    options: &ScrapeOptions,
    permits: &Semaphore,
) -> BTreeMap<String, Scrape> {
    let reads = pods.into_iter().map(|(pod, ip)| async move {
        let scrape = match permits.acquire().await {
            Ok(_permit) => scrape(ip, options).await,
            Err(e) => Scrape::Failed(e.to_string()),
        };
        (pod, scrape)
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use attache_core::topology::ObjectKey;
    use k8s_openapi::api::core::v1::Pod;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    use super::{ready_pods, DEFAULT_LABEL};

    fn pod(name: &str, gateway: &str, ip: Option<&str>, ready: &str, deleting: bool) -> Pod {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "infra",
                         "labels": {DEFAULT_LABEL: gateway}},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}
        });
        if let Some(ip) = ip {
            pod["status"]["podIP"] = json!(ip);
        }
        if deleting {
            pod["metadata"]["deletionTimestamp"] = json!("2026-11-28T14:00:00Z");
        }
        serde_json::from_value(pod).unwrap()
    }

    #[test]
    fn only_ready_pods_of_the_gateway_with_an_ip_and_not_deleting_are_read() {
        let (reader, mut writer) = reflector::store();
        for p in [
            pod("edge-0", "edge", Some("10.0.0.1"), "True", false),
            pod("edge-1", "edge", Some("10.0.0.2"), "False", false),
            pod("edge-2", "edge", None, "True", false),
            pod("edge-3", "edge", Some("10.0.0.4"), "True", true),
            pod("other-0", "other", Some("10.0.0.5"), "True", false),
        ] {
            writer.apply_watcher_event(&Event::Apply(p));
        }
        let edge = ObjectKey {
            namespace: "infra".into(),
            name: "edge".into(),
        };
        let found = ready_pods(&[reader], DEFAULT_LABEL, [edge.clone()]);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(
            found[&edge].iter().collect::<Vec<_>>(),
            [(&"edge-0".to_string(), &ip)]
        );
        assert_eq!(found.len(), 1, "only the Gateways asked for");
    }
}
