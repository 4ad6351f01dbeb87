//! The dynamic module's delivery objects, `render envoyextensionpolicy`
//! (Envoy Gateway) and `render envoyfilter` (Istio), against the schemas of
//! the projects that read them and against Envoy itself.
//!
//! The schemas are the part of each project's CRD these renders write,
//! transcribed into tests/fixtures/schemas/ (each file names the source
//! file and commit it was read from) and checked as tests/crds.rs checks
//! ours: OpenAPI to JSON Schema with unknown fields refused, and the CEL
//! rules evaluated (tests/support/crds.rs). Every golden case's input is
//! rendered and checked; a mutated object is refused, so the check can fail.
//!
//! Envoy: the filter each object puts into the HTTP connection manager
//! (the EnvoyFilter's patch value as it is; the filter Envoy Gateway builds
//! from the policy and the EnvoyProxy's registration, as its translator
//! does) passes `envoy --mode validate` with the real module, which loads
//! it and reads the document; a path that holds no module, and a document
//! the module cannot read, are refused.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
#[path = "support/crds.rs"]
mod crds;
mod support;

use std::path::Path;
use std::process::Command;

use crds::{mutated, Checker};
use serde_json::{json, Value};
use support::{attache_ok, envoy_and_wasm, scratch, workspace};

const MODULE_TYPE_URL: &str =
    "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";
const STRING_VALUE: &str = "type.googleapis.com/google.protobuf.StringValue";

fn schemas(file: &str) -> Value {
    let path = workspace().join("tests/fixtures/schemas").join(file);
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn checker(file: &str, kind: &'static str) -> Checker {
    let schema = schemas(file)[kind].clone();
    assert!(schema.is_object(), "{file} has no schema for {kind}");
    Checker::from_openapi(kind, schema)
}

/// Every golden case's input and Gateway (tests/golden/*/case.json).
fn cases() -> Vec<(String, String)> {
    let root = workspace().join("tests/golden");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path().join("case.json"))
        .filter(|p| p.is_file())
        .map(|p| {
            let case: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            (
                case["input"].as_str().unwrap().to_string(),
                case["gateway"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() > 5, "{out:?}");
    out
}

fn render(args: &[&str]) -> Value {
    let out = attache_ok(args);
    serde_yaml_ng::from_slice(&out.stdout).unwrap()
}

/// The List `render envoyextensionpolicy --envoy-proxy` writes: the
/// EnvoyProxy's registration and the policy.
fn eg_objects(input: &str, gateway: &str) -> (Value, Value) {
    eg_objects_with(input, gateway, &[])
}

fn eg_objects_with(input: &str, gateway: &str, extra: &[&str]) -> (Value, Value) {
    let args = [
        &[
            "render",
            "envoyextensionpolicy",
            "-f",
            input,
            "--gateway",
            gateway,
            "--envoy-proxy",
            "envoy-gateway-system/proxy",
        ][..],
        extra,
    ]
    .concat();
    let list = render(&args);
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");
    assert_eq!(items[0]["kind"], "EnvoyProxy");
    assert_eq!(items[1]["kind"], "EnvoyExtensionPolicy");
    (items[0].clone(), items[1].clone())
}

fn istio_object(input: &str, gateway: &str) -> Value {
    render(&["render", "envoyfilter", "-f", input, "--gateway", gateway])
}

fn refusals(checker: &Checker, object: &Value) -> Vec<String> {
    let mut all = checker.schema_errors(object);
    all.extend(checker.cel_failures(object));
    all
}

#[test]
fn every_rendered_object_fits_the_schema_read_from_its_project() {
    let policy = checker("envoy-gateway.yaml", "EnvoyExtensionPolicy");
    let proxy = checker("envoy-gateway.yaml", "EnvoyProxy");
    let filter = checker("istio-envoyfilter.yaml", "EnvoyFilter");
    for (input, gateway) in cases() {
        let (registration, extension) = eg_objects(&input, &gateway);
        assert_eq!(
            refusals(&proxy, &registration),
            Vec::<String>::new(),
            "{input}"
        );
        assert_eq!(
            refusals(&policy, &extension),
            Vec::<String>::new(),
            "{input}"
        );
        let envoy_filter = istio_object(&input, &gateway);
        assert_eq!(
            refusals(&filter, &envoy_filter),
            Vec::<String>::new(),
            "{input}"
        );
        // The policy carries what the WasmPlugin carries.
        let plugin = render(&["render", "wasmplugin", "-f", &input, "--gateway", &gateway]);
        assert_eq!(
            extension["spec"]["dynamicModule"][0]["config"], plugin["spec"]["pluginConfig"],
            "{input}"
        );
    }
}

#[test]
fn a_mutated_object_is_refused() {
    let (registration, extension) = eg_objects("examples/shop", "infra/edge");
    let envoy_filter = istio_object("examples/shop", "infra/edge");
    let policy = checker("envoy-gateway.yaml", "EnvoyExtensionPolicy");
    let proxy = checker("envoy-gateway.yaml", "EnvoyProxy");
    let filter = checker("istio-envoyfilter.yaml", "EnvoyFilter");
    let module = "/spec/dynamicModule/0";
    let cases: Vec<(&Checker, Value, &str)> = vec![
        (
            &policy,
            mutated(&extension, &format!("{module}/name"), json!("Attache")),
            "name pattern",
        ),
        (
            &policy,
            mutated(&extension, &format!("{module}/terminalFilter"), json!("no")),
            "type",
        ),
        (
            &policy,
            mutated(&extension, "/spec/targetRefs/0/group", json!("x.io")),
            "CEL group",
        ),
        (
            &policy,
            mutated(&extension, "/spec/wasmModule", json!([])),
            "unknown field",
        ),
        (
            &policy,
            {
                let mut p = extension.clone();
                p["spec"].as_object_mut().unwrap().remove("targetRefs");
                p
            },
            "CEL: a target",
        ),
        (
            &proxy,
            mutated(
                &registration,
                "/spec/dynamicModules/0/source/type",
                json!("Remote"),
            ),
            "CEL remote",
        ),
        (
            &proxy,
            mutated(
                &registration,
                "/spec/dynamicModules/0/doNotClose",
                json!("yes"),
            ),
            "type",
        ),
        (
            &filter,
            mutated(
                &envoy_filter,
                "/spec/configPatches/0/patch/operation",
                json!("INSERT_BEFOR"),
            ),
            "enum",
        ),
        (
            &filter,
            mutated(
                &envoy_filter,
                "/spec/configPatches/0/match/context",
                json!("WAYPOINT"),
            ),
            "CEL waypoint",
        ),
        (
            &filter,
            mutated(
                &envoy_filter,
                "/spec/workloadSelector/labels/gateway.networking.k8s.io~1gateway-name",
                json!("x".repeat(64)),
            ),
            "label length",
        ),
        (
            &filter,
            mutated(
                &envoy_filter,
                "/spec/configPatches/0/match/routeConfiguration",
                json!({}),
            ),
            "one match member",
        ),
    ];
    for (checker, object, what) in cases {
        assert!(!refusals(checker, &object).is_empty(), "{what}: {object}");
    }
}

/// The one HTTP filter `filter` before the router in a static listener,
/// as `envoy --mode validate` reads it.
fn bootstrap_with(filter: &Value) -> Value {
    json!({
        "static_resources": {"listeners": [{
            "name": "gateway",
            "address": {"socket_address": {"address": "127.0.0.1", "port_value": 10080}},
            "filter_chains": [{"filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "stat_prefix": "gateway",
                    "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"],
                        "routes": [{"match": {"prefix": "/"}, "direct_response": {"status": 200}}]}]},
                    "http_filters": [filter, {"name": "envoy.filters.http.router",
                        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]
                }
            }]}]
        }]}
    })
}

fn envoy_accepts(envoy: &Path, dir: &Path, name: &str, filter: &Value) -> Result<(), String> {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, bootstrap_with(filter).to_string()).unwrap();
    let output = Command::new(envoy)
        .args(["--mode", "validate", "--log-level", "warn", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The filter Envoy Gateway puts into the connection manager for the
/// policy's module (internal/xds/translator/dynamicmodule.go at v1.9.0,
/// `dynamicModuleConfig`): the registration's path and doNotClose, the
/// policy's filterName, its config as a StringValue of its JSON text.
fn envoy_gateway_filter(registration: &Value, policy: &Value) -> Value {
    let entry = &registration["spec"]["dynamicModules"][0];
    let module = &policy["spec"]["dynamicModule"][0];
    assert_eq!(entry["name"], module["name"]);
    json!({
        "name": format!("envoy.filters.http.dynamic_modules/{}", module["name"].as_str().unwrap()),
        "typed_config": {
            "@type": MODULE_TYPE_URL,
            "dynamic_module_config": {
                "module": {"local": {"filename": entry["source"]["local"]["path"]}},
                "do_not_close": entry["doNotClose"]
            },
            "filter_name": module["filterName"],
            "filter_config": {"@type": STRING_VALUE, "value": module["config"].to_string()}
        }
    })
}

#[test]
fn envoy_loads_the_module_with_the_filter_each_object_configures() {
    let Some((envoy, _)) = envoy_and_wasm("the delivery objects' filters not validated") else {
        return;
    };
    let module = support::filter_module().to_string_lossy().into_owned();
    let dir = scratch("module-objects");
    let at = |value: &Value| -> Value {
        serde_json::from_str(
            &value
                .to_string()
                .replace("/opt/attache/libattache_module.so", &module),
        )
        .unwrap()
    };
    let (registration, policy) = eg_objects("examples/shop", "infra/edge");
    let eg = at(&envoy_gateway_filter(&registration, &policy));
    let istio = at(
        &istio_object("examples/shop", "infra/edge")["spec"]["configPatches"][0]["patch"]["value"],
    );
    envoy_accepts(&envoy, &dir, "envoy-gateway", &eg).unwrap();
    envoy_accepts(&envoy, &dir, "istio", &istio).unwrap();
    // A large Gateway's config is the compressed envelope: read alike.
    let (registration, sealed) = eg_objects_with(
        "examples/shop",
        "infra/edge",
        &["--plugin-config", "compressed"],
    );
    let config = &sealed["spec"]["dynamicModule"][0]["config"];
    assert_eq!(config["encoding"], "zlib+base64-chunks", "{config}");
    let compressed = at(&envoy_gateway_filter(&registration, &sealed));
    envoy_accepts(&envoy, &dir, "envoy-gateway-compressed", &compressed).unwrap();
    // Validation loads the module: a path that holds none is refused.
    let missing = mutated(
        &istio,
        "/typed_config/dynamic_module_config/module/local/filename",
        json!("/nonexistent/libattache_module.so"),
    );
    let refused = envoy_accepts(&envoy, &dir, "missing", &missing).unwrap_err();
    assert!(refused.contains("libattache_module.so"), "{refused}");
    // And it hands the module the document, which the module reads at
    // load: one it cannot read is refused, so the objects' documents were
    // read and accepted.
    let unreadable = mutated(&eg, "/typed_config/filter_config/value", json!("not json"));
    let refused = envoy_accepts(&envoy, &dir, "unreadable", &unreadable).unwrap_err();
    assert!(refused.contains("attache: configuration"), "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_flags_say_what_is_missing_or_wrong() {
    // The policy alone: the registration it needs is spelled out.
    let out = attache_ok(&[
        "render",
        "envoyextensionpolicy",
        "-f",
        "examples/shop",
        "--gateway",
        "infra/edge",
        "--module",
        "/m/libattache_module.so",
    ]);
    let stderr = support::text(&out.stderr);
    assert!(
        stderr.contains("note: Envoy Gateway loads the module only if")
            && stderr.contains("path: /m/libattache_module.so}}, doNotClose: true"),
        "{stderr}"
    );
    for (args, says) in [
        (
            &["envoyextensionpolicy", "--module-name", "Attache"][..],
            "is not a dynamic module name",
        ),
        (
            &["envoyfilter", "--module", "libattache_module.so"][..],
            "give an absolute path",
        ),
        (
            &["envoyextensionpolicy", "--envoy-proxy", "proxy"][..],
            "is not NAMESPACE/NAME",
        ),
    ] {
        let all = [&["render"][..], args, &["-f", "examples/shop"]].concat();
        let out = support::attache(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(support::text(&out.stderr).contains(says), "{all:?}");
    }
}

#[test]
fn all_gateways_gives_one_object_per_gateway() {
    let input = "tests/fixtures/cli/two-gateways.yaml";
    let policy = checker("envoy-gateway.yaml", "EnvoyExtensionPolicy");
    let filter = checker("istio-envoyfilter.yaml", "EnvoyFilter");
    let eg = render(&[
        "render",
        "envoyextensionpolicy",
        "-f",
        input,
        "--all-gateways",
    ]);
    let istio = render(&["render", "envoyfilter", "-f", input, "--all-gateways"]);
    for (list, checker) in [(&eg, &policy), (&istio, &filter)] {
        assert_eq!(list["kind"], "List");
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                assert_eq!(refusals(checker, item), Vec::<String>::new());
                item["metadata"]["name"].as_str().unwrap()
            })
            .collect();
        assert_eq!(names, ["attache-edge", "attache-internal"]);
    }
    assert_eq!(eg["items"][1]["spec"]["targetRefs"][0]["name"], "internal");
    let both = support::attache(&[
        "render",
        "envoyfilter",
        "-f",
        input,
        "--all-gateways",
        "--gateway",
        "infra/edge",
    ]);
    assert_eq!(both.status.code(), Some(2));
}
