//! A data plane in the file-based xDS layout: `attache watch --xds-dir`
//! writing the ECDS, LDS, RDS and CDS files (ordered against Envoy's
//! admin), and Envoy on `attache render envoy --xds-dir`'s bootstrap.
//!
//! Field order matters: Envoy is dropped (killed) first, then the watch,
//! the backends, and the scratch directory last, so a failing test keeps
//! its logs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::backend::Backend;
use super::client::{self, Reply};
use super::envoy::Envoy;
use super::generator::{render_envoy_xds, Watch, XdsWatchSpec};
use super::paths;
use super::scratch::Scratch;

/// The first generation: resolving, rendering and writing five files.
const FIRST_WRITE_WITHIN: Duration = Duration::from_secs(30);

pub struct XdsStack {
    pub envoy: Envoy,
    pub watch: Watch,
    pub backends: Vec<Backend>,
    /// The manifests `watch` reads (the test edits them).
    pub input: PathBuf,
    pub xds_dir: PathBuf,
    pub scratch: Scratch,
}

impl XdsStack {
    /// Starts `attache watch` on `input` (Gateway `gateway`, its listener
    /// `listener` on a free port), then Envoy on the rendered bootstrap.
    pub fn start(
        scratch: Scratch,
        input: PathBuf,
        gateway: &str,
        listener: &str,
        backends: Vec<Backend>,
    ) -> XdsStack {
        let xds_dir = scratch.join("xds");
        let listener_port = paths::free_port();
        let admin_port = paths::free_port();
        let watch = Watch::start_xds(&XdsWatchSpec {
            input: &input,
            gateway,
            out: &scratch.join("attache.json"),
            ecds: &xds_dir.join("ecds/attache-ecds.json"),
            wasm: &paths::wasm(),
            xds_dir: &xds_dir,
            listener_ports: vec![(listener.to_owned(), listener_port)],
            envoy_admin: format!("127.0.0.1:{admin_port}"),
            log_dir: scratch.path(),
        });
        assert_eq!(watch.next_generation(FIRST_WRITE_WITHIN), 1);
        let bootstrap = scratch.join("envoy.yaml");
        render_envoy_xds(&input, gateway, &xds_dir, admin_port, &bootstrap);
        let envoy = Envoy::try_start(&bootstrap, admin_port, listener_port, scratch.path())
            .unwrap_or_else(|log| panic!("envoy exited during start-up:\n{log}"));
        XdsStack {
            envoy,
            watch,
            backends,
            input,
            xds_dir,
            scratch,
        }
    }

    /// `GET http://HOST<path>` through Envoy's listener.
    pub fn get(&self, host: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut all = vec![("host", host)];
        all.extend_from_slice(headers);
        client::get(&format!("{}{path}", self.envoy.listener), &all)
    }

    /// Replaces `name` in the input in one rename (the temporary name does
    /// not end in .yaml, so the watch never reads it half-written).
    pub fn put_manifest(&self, name: &str, text: &str) {
        let tmp = self.input.join(format!("{name}.tmp"));
        std::fs::write(&tmp, text).expect("write manifest");
        std::fs::rename(&tmp, self.input.join(name)).expect("rename manifest");
    }

    pub fn dir(&self) -> &Path {
        self.scratch.path()
    }
}
