//! `--filter wasm|dynamic-module` and `--module FILE` on every command
//! that writes the filter's configuration: what each writes, what each
//! refuses, and that `render envoy --xds-dir` accepts the pair it has no
//! use for (one set of flags drives a whole setup).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, attache_ok, scratch, text};

const INPUT: &str = "tests/fixtures/e2e/basics";
const MODULE: &str = "/opt/attache/libattache_module.so";
const MODULE_TYPE: &str =
    "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";

#[test]
fn render_ecds_writes_the_module_filter_with_the_wasms_document() {
    let module: serde_json::Value = serde_yaml_ng::from_str(&text(
        &attache_ok(&[
            "render",
            "ecds",
            "-f",
            INPUT,
            "--filter",
            "dynamic-module",
            "--module",
            MODULE,
        ])
        .stdout,
    ))
    .unwrap();
    let wasm: serde_json::Value = serde_yaml_ng::from_str(&text(
        &attache_ok(&["render", "ecds", "-f", INPUT, "--wasm", "/w.wasm"]).stdout,
    ))
    .unwrap();
    let config = &module["resources"][0]["typed_config"];
    assert_eq!(config["@type"], MODULE_TYPE);
    assert_eq!(
        config["dynamic_module_config"]["module"]["local"]["filename"],
        MODULE
    );
    assert_eq!(
        config["filter_config"],
        wasm["resources"][0]["typed_config"]["config"]["configuration"]
    );
}

#[test]
fn a_pair_that_cannot_be_meant_is_a_usage_error() {
    for (args, says) in [
        (
            &["render", "ecds", "-f", INPUT, "--filter", "dynamic-module"][..],
            "needs --module",
        ),
        (
            &[
                "render", "ecds", "-f", INPUT, "--wasm", "/w.wasm", "--module", MODULE,
            ][..],
            "--filter is wasm",
        ),
        (
            &[
                "watch",
                "-f",
                INPUT,
                "--out",
                "/tmp/x.json",
                "--ecds",
                "/tmp/e.json",
            ][..],
            "needs --wasm",
        ),
    ] {
        let out = attache(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn render_envoy_with_xds_dir_accepts_the_pair_and_render_xds_types_the_listeners() {
    attache_ok(&[
        "render",
        "envoy",
        "-f",
        INPUT,
        "--xds-dir",
        "/run/xds",
        "--filter",
        "dynamic-module",
        "--module",
        MODULE,
    ]);
    let dir = scratch("filter-flags-xds");
    let out = dir.to_string_lossy().into_owned();
    attache_ok(&[
        "render",
        "xds",
        "-f",
        INPUT,
        "--xds-dir",
        "/run/xds",
        "--ecds",
        "/run/xds/ecds/a.json",
        "--backend",
        "*=127.0.0.1:9000",
        "--output-dir",
        &out,
        "--filter",
        "dynamic-module",
        "--module",
        MODULE,
    ]);
    let lds = std::fs::read_to_string(dir.join("lds/listeners.json")).unwrap();
    assert!(lds.contains(MODULE_TYPE), "{lds}");
    assert!(!lds.contains("filters.http.wasm.v3.Wasm"), "{lds}");
}
