//! One complete data plane for a test: the test backend, the generator's
//! rendered bootstrap and ECDS file, and Envoy running them.
//!
//! Field order matters: Envoy is dropped (killed) before the backend, and
//! the scratch directory last, so a failing test keeps its logs.

use std::path::{Path, PathBuf};

use super::backend::Backend;
use super::client::{self, Reply};
use super::envoy::Envoy;
use super::generator::{self, RenderEnvoy};
use super::paths;
use super::scratch::Scratch;

/// A set of manifests written for the tests (tests/fixtures/e2e/NAME).
pub struct Fixture {
    pub input: PathBuf,
    /// `NS/NAME` of the Gateway.
    pub gateway: &'static str,
    /// Every listener (by key) that gets a local port; the first is the
    /// default. `KEY=OTHER` puts KEY on OTHER's port.
    pub listeners: &'static [&'static str],
    /// Every backendRef (`NS/NAME`); all point at the one test backend, but
    /// `NS/NAME=HOST:PORT` points one elsewhere (a closed port, say).
    pub backends: &'static [&'static str],
}

impl Fixture {
    pub fn named(name: &str, gateway: &'static str, backends: &'static [&'static str]) -> Fixture {
        Fixture {
            input: paths::fixture(name),
            gateway,
            listeners: &["http"],
            backends,
        }
    }

    pub fn label(&self) -> String {
        self.input
            .file_name()
            .map_or_else(|| "stack".to_owned(), |n| n.to_string_lossy().into_owned())
    }
}

/// Envoy start-ups before giving up; only a port taken between picking it
/// and Envoy binding it makes a retry succeed.
const START_TRIES: usize = 3;

pub struct Stack {
    pub envoy: Envoy,
    pub backend: Backend,
    pub ecds: PathBuf,
    pub scratch: Scratch,
}

impl Stack {
    /// Renders the ECDS file and the bootstrap from the fixture and starts
    /// backend and Envoy.
    pub fn start(fixture: &Fixture) -> Stack {
        let scratch = Scratch::new(&fixture.label());
        let ecds = scratch.ecds_file();
        generator::render_ecds(&fixture.input, fixture.gateway, &paths::wasm(), &ecds);
        Stack::launch(fixture, &fixture.input, ecds, scratch)
    }

    /// Starts backend and Envoy on an ECDS file that already exists (written
    /// by `attache watch` from `input`).
    pub fn launch(fixture: &Fixture, input: &Path, ecds: PathBuf, scratch: Scratch) -> Stack {
        Stack::launch_patched(fixture, input, ecds, scratch, &|_| {})
    }

    /// [`Stack::start`] with the rendered bootstrap changed by `patch`
    /// before Envoy starts on it.
    pub fn start_patched(fixture: &Fixture, patch: &dyn Fn(&Path)) -> Stack {
        let scratch = Scratch::new(&fixture.label());
        let ecds = scratch.ecds_file();
        generator::render_ecds(&fixture.input, fixture.gateway, &paths::wasm(), &ecds);
        Stack::launch_patched(fixture, &fixture.input, ecds, scratch, patch)
    }

    fn launch_patched(
        fixture: &Fixture,
        input: &Path,
        ecds: PathBuf,
        scratch: Scratch,
        patch: &dyn Fn(&Path),
    ) -> Stack {
        let backend = Backend::start(scratch.path());
        let mut last_log = String::new();
        for _ in 0..START_TRIES {
            let bootstrap = scratch.join("envoy.yaml");
            // `KEY=OTHER` shares OTHER's port (listeners of a Gateway and
            // its ListenerSets on one port); others get a free port each.
            let mut listener_ports: Vec<(String, u16)> = Vec::new();
            for name in fixture.listeners {
                let port = match name.split_once('=') {
                    Some((_, other)) => listener_ports
                        .iter()
                        .find(|(n, _)| n == other)
                        .map(|(_, p)| *p)
                        .expect("a listener shares the port of one listed before it"),
                    None => paths::free_port(),
                };
                let key = name.split_once('=').map_or(*name, |(key, _)| key);
                listener_ports.push((key.to_owned(), port));
            }
            let admin_port = paths::free_port();
            generator::render_envoy(&RenderEnvoy {
                input,
                gateway: fixture.gateway,
                ecds: &ecds,
                wasm: &paths::wasm(),
                backends: fixture
                    .backends
                    .iter()
                    .map(|b| match b.split_once('=') {
                        Some((name, addr)) => (name.to_owned(), addr.to_owned()),
                        None => ((*b).to_owned(), backend.addr.clone()),
                    })
                    .collect(),
                listener_ports: listener_ports.clone(),
                admin_port,
                out: &bootstrap,
            });
            patch(&bootstrap);
            match Envoy::try_start(&bootstrap, admin_port, listener_ports[0].1, scratch.path()) {
                Ok(envoy) => {
                    return Stack {
                        envoy,
                        backend,
                        ecds,
                        scratch,
                    }
                }
                Err(log) => last_log = log,
            }
        }
        panic!("envoy exited during start-up {START_TRIES} times; last log:\n{last_log}");
    }

    /// `GET` through Envoy's (first) listener.
    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        client::get(&format!("{}{path}", self.envoy.listener), headers)
    }

    pub fn dir(&self) -> &Path {
        self.scratch.path()
    }
}
