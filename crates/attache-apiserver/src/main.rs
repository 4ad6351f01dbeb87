//! `attache-apiserver`: the stand-in API server out of process. It listens
//! on 127.0.0.1:<port>, seeds the given manifests (CRDs register their
//! kinds), optionally writes a kubeconfig, prints its URL and serves until
//! interrupted.

#![forbid(unsafe_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use attache_apiserver::{Config, KindSpec, RequestRecord, StandIn};
use clap::Parser;
use tokio::sync::broadcast::Receiver;

/// A Kubernetes API server stand-in for tests (docs/apiserver-standin.md).
#[derive(Debug, Parser)]
#[command(name = "attache-apiserver", version)]
struct Args {
    /// The port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Write a kubeconfig naming the server here.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Also serve the Gateway API kinds, Istio's WasmPlugin and the peers'
    /// policy kinds (without schemas).
    #[arg(long)]
    gateway_api: bool,
    /// Change events kept for watches to resume from.
    #[arg(long, default_value_t = 10_000)]
    history: usize,
    /// Also serve core/v1 Pods with a status subresource (for proxy pods
    /// whose stats the controller reads; bench/edit_to_programmed.py).
    #[arg(long)]
    pods: bool,
    /// Append one JSON line per write served to FILE (create, update,
    /// patch, apply, delete; RequestRecord::json_line), and the total
    /// writes on Ctrl-C: how a harness in another process counts writes.
    #[arg(long, value_name = "FILE")]
    write_log: Option<PathBuf>,
    /// YAML files or directories to load at start (CRDs first is not
    /// required within one run: give the CRDs' directory first).
    manifests: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("attache-apiserver: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("attache-apiserver: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Load(#[from] attache_apiserver::LoadError),
    #[error(transparent)]
    Start(#[from] attache_apiserver::StartError),
    #[error("cannot write the kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write the write log: {0}")]
    WriteLog(std::io::Error),
    #[error("cannot wait for Ctrl-C: {0}")]
    Signal(std::io::Error),
}

async fn run(args: Args) -> Result<(), RunError> {
    let mut config = Config {
        address: std::net::SocketAddr::from(([127, 0, 0, 1], args.port)),
        history: args.history,
        ..Config::default()
    };
    if args.gateway_api {
        config = config.with_gateway_api();
    }
    if args.pods {
        config = config.with_kind(KindSpec::new("", "v1", "Pod", "pods", true).with_status());
    }
    config = config.with_manifests(&args.manifests)?;
    let server = StandIn::start(config).await?;
    let log = match &args.write_log {
        Some(path) => Some(std::sync::Arc::new(std::sync::Mutex::new(
            std::fs::File::create(path).map_err(RunError::WriteLog)?,
        ))),
        None => None,
    };
    if let Some(file) = &log {
        tokio::spawn(write_log(server.log().subscribe(), file.clone()));
    }
    if let Some(path) = &args.kubeconfig {
        server
            .write_kubeconfig(path)
            .map_err(|source| RunError::Kubeconfig {
                path: path.display().to_string(),
                source,
            })?;
    }
    println!("{}", server.url());
    tokio::signal::ctrl_c().await.map_err(RunError::Signal)?;
    if let Some(file) = &log {
        // The counters are never trimmed nor lagged: the exact total, to
        // check the lines against.
        let total = serde_json::json!({"total_writes": server.log().writes()});
        let mut out = file.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(out, "{total}").map_err(RunError::WriteLog)?;
    }
    Ok(())
}

type Shared = std::sync::Arc<std::sync::Mutex<std::fs::File>>;

/// Every write as a line. A receiver that falls behind the broadcast
/// channel loses records: it says how many (`lagged`) rather than
/// undercount silently.
async fn write_log(mut live: Receiver<RequestRecord>, file: Shared) {
    use tokio::sync::broadcast::error::RecvError;
    // The records carry an Instant; the harness needs wall-clock time.
    let (wall, mono) = (std::time::SystemTime::now(), std::time::Instant::now());
    let epoch = wall
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    loop {
        let line = match live.recv().await {
            Ok(r) if r.verb.is_write() => {
                let offset = if r.received >= mono {
                    r.received.duration_since(mono).as_secs_f64()
                } else {
                    -mono.duration_since(r.received).as_secs_f64()
                };
                r.json_line(epoch + offset)
            }
            Ok(_) => continue,
            Err(RecvError::Lagged(n)) => serde_json::json!({"lagged": n}).to_string(),
            Err(RecvError::Closed) => return,
        };
        let mut out = file.lock().unwrap_or_else(|e| e.into_inner());
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}
