//! Envoy's own `--mode validate` accepts every bootstrap the generator
//! renders: each e2e fixture and the shipped example.

use std::path::Path;

use crate::harness::envoy;
use crate::harness::generator::{self, RenderEnvoy};
use crate::harness::paths;
use crate::harness::scratch::Scratch;

fn render_and_validate(
    input: &Path,
    gateway: &str,
    backends: &[&str],
    scratch: &Scratch,
    label: &str,
) {
    let ecds = scratch.join(&format!("{label}.ecds.json"));
    let bootstrap = scratch.join(&format!("{label}.envoy.yaml"));
    let wasm = paths::wasm();
    generator::render_ecds(input, gateway, &wasm, &ecds);
    generator::render_envoy(&RenderEnvoy {
        input,
        gateway,
        ecds: &ecds,
        wasm: &wasm,
        backends: backends
            .iter()
            .map(|b| ((*b).to_owned(), "127.0.0.1:9000".to_owned()))
            .collect(),
        listener_ports: vec![("http".to_owned(), 18080)],
        admin_port: 19901,
        out: &bootstrap,
    });
    let output = envoy::validate(&bootstrap);
    assert!(
        output.status.success(),
        "envoy --mode validate rejected the {label} bootstrap:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn envoy_validates_every_rendered_fixture_bootstrap() {
    let scratch = Scratch::new("validate");
    for name in ["basics", "matching", "precedence", "reload"] {
        render_and_validate(
            &paths::fixture(name),
            "infra/edge",
            &["shop/echo"],
            &scratch,
            name,
        );
    }
}

#[test]
fn envoy_validates_the_rendered_example_bootstrap() {
    let scratch = Scratch::new("validate-example");
    render_and_validate(
        &paths::example("shop"),
        "infra/edge",
        crate::example::EXAMPLE_BACKENDS,
        &scratch,
        "example",
    );
}
