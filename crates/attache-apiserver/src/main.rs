//! `attache-apiserver`: the stand-in API server out of process. It listens
//! on 127.0.0.1:<port>, seeds the given manifests (CRDs register their
//! kinds), optionally writes a kubeconfig, prints its URL and serves until
//! interrupted.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use attache_apiserver::{Config, StandIn};
use clap::Parser;

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
    config = config.with_manifests(&args.manifests)?;
    let server = StandIn::start(config).await?;
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
    Ok(())
}
