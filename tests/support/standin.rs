//! The stand-in API server (crates/attache-apiserver) for the CLI's live
//! reads: served from a runtime of its own while the test runs `attache`
//! as a process against the kubeconfig it writes.

// Each test crate uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use attache_apiserver::{Config, Handle, StandIn};
use serde_json::Value;

pub struct Cluster {
    /// Keeps the server's tasks running; dropped last.
    pub runtime: tokio::runtime::Runtime,
    pub server: Handle,
    pub kubeconfig: PathBuf,
}

impl Cluster {
    /// Serving the Gateway API kinds, the project's CRDs and `objects`.
    pub fn start(dir: &Path, objects: Vec<Value>) -> Cluster {
        Cluster::start_with(dir, objects, |config| config)
    }

    /// [`Cluster::start`] with the configuration adjusted first.
    pub fn start_with(
        dir: &Path,
        objects: Vec<Value>,
        adjust: impl FnOnce(Config) -> Config,
    ) -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let config = Config::default()
            .with_gateway_api()
            .with_manifests(&[crate::support::workspace().join("deploy/crds")])
            .expect("the CRDs load")
            .with_objects(objects);
        let server = runtime
            .block_on(StandIn::start(adjust(config)))
            .expect("the stand-in starts");
        let kubeconfig = dir.join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Cluster {
            runtime,
            server,
            kubeconfig,
        }
    }

    /// The cluster serving examples/shop.
    pub fn shop(dir: &Path) -> Cluster {
        let shop =
            attache_apiserver::read_manifests(&crate::support::workspace().join("examples/shop"))
                .expect("examples/shop loads");
        Cluster::start(dir, shop)
    }

    /// `attache ARGS --kubeconfig` this cluster's, whatever its exit code.
    pub fn attache(&self, args: &[&str]) -> std::process::Output {
        let kubeconfig = self.kubeconfig.display().to_string();
        let mut all = args.to_vec();
        all.extend(["--kubeconfig", &kubeconfig]);
        crate::support::attache(&all)
    }

    /// Standard error with the server's URL as `SERVER` (its port changes).
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.server.url(), "SERVER")
    }
}
