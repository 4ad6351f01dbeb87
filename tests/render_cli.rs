//! `attache render ...` as a user runs it: exit codes, messages, files. No
//! Envoy needed (tests/render_envoy.rs and the e2e tests run it);
//! `attache watch` is in tests/cli_watch.rs.

// A test crate: its helpers fail the test by panicking, like its #[test]s.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::Value;

mod support;
use support::{attache, attache_ok as ok, copy_dir, scratch, text, workspace};

fn resolved_example() -> Value {
    serde_json::from_slice(&ok(&["resolve", "-f", "examples/shop"]).stdout).unwrap()
}

/// What the data plane receives: the resolved document in the data-plane
/// encoding, without the `sources` provenance `attache resolve` keeps.
/// The plain-Envoy filter's document of examples/shop.
fn data_plane_example() -> Value {
    encoded(without_own_request_headers(resolved_example()))
}

/// A schema-1 document in the data-plane encoding.
fn encoded(resolved: Value) -> Value {
    let resolved: attache_contract::Document = serde_json::from_value(resolved).unwrap();
    let encoded =
        serde_json::to_value(attache_contract::DataPlaneDocument::encode(&resolved)).unwrap();
    assert!(!encoded.to_string().contains("sources"));
    encoded
}

/// The resolved document less each request header change that only a
/// rule's own filter supplies (its `sources` say `(inline...)` alone): the
/// plain-Envoy routes carry those (docs/semantics.md, "Who applies what").
fn without_own_request_headers(mut resolved: Value) -> Value {
    let own = |sources: &Value, key: &str| {
        sources[key]
            .as_str()
            .is_some_and(|s| s.split(" + ").all(|part| part.contains("(inline")))
    };
    for entry in resolved["routes"].as_array_mut().unwrap() {
        let sources = entry["sources"].clone();
        let Some(changes) = entry.get_mut("requestHeaders") else {
            continue;
        };
        for list in ["set", "add"] {
            if let Some(headers) = changes.get_mut(list).and_then(Value::as_array_mut) {
                headers.retain(|h| {
                    let name = h["name"].as_str().unwrap();
                    !own(&sources, &format!("requestHeaders.{list}.{name}"))
                });
            }
        }
        if own(&sources, "requestHeaders.remove") {
            changes["remove"] = Value::Array(Vec::new());
        }
        let map = changes.as_object_mut().unwrap();
        map.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
        if map.is_empty() {
            entry.as_object_mut().unwrap().remove("requestHeaders");
        }
    }
    resolved
}

#[test]
fn a_backend_without_address_fails_naming_it_and_its_route() {
    // The basics fixture's Service shop/echo has no manifest in the input.
    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "tests/fixtures/e2e/basics",
        "--ecds",
        "/tmp/e.yaml",
        "--wasm",
        "/tmp/f.wasm",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: backend shop/echo/9000 (used by route http/shop/"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no Service shop/echo in the input"),
        "{stderr}"
    );
    assert!(stderr.contains("--backend shop/echo=HOST:PORT"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing is printed on failure");
}

#[test]
fn bad_flags_say_what_is_valid() {
    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e.yaml",
        "--wasm",
        "f.wasm",
        "--listener-port",
        "public=80",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no such listener; valid: http, admin"),
        "{stderr}"
    );

    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e",
        "--wasm",
        "w",
        "--backend",
        "orders=1.2.3.4:80",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("expected NAMESPACE/NAME=HOST:PORT"),
        "{stderr}"
    );

    let output = attache(&[
        "render",
        "envoy",
        "-f",
        "examples/shop",
        "--ecds",
        "e",
        "--wasm",
        "w",
        "--listener-port",
        "http",
    ]);
    assert_eq!(output.status.code(), Some(2), "clap usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("LISTENER=PORT"));
}

#[test]
fn ecds_file_carries_the_resolved_document_in_the_format_its_name_asks_for() {
    let dir = scratch("ecds");
    let json_path = dir.join("attache-ecds.json");
    ok(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--wasm",
        "/w/f.wasm",
        "-o",
        json_path.to_str().unwrap(),
    ]);
    let response: Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).expect(".json gets JSON");
    let config = &response["resources"][0]["typed_config"]["config"];
    let value = config["configuration"]["value"].as_str().unwrap();
    assert!(!value.contains('\n'), "compact JSON: {value}");
    let carried: Value = serde_json::from_str(value).unwrap();
    assert_eq!(carried, data_plane_example());
    assert_eq!(
        config["vm_config"]["code"]["local"]["filename"],
        "/w/f.wasm"
    );

    let yaml_path = dir.join("attache-ecds.yaml");
    let written = ok(&[
        "render",
        "ecds",
        "-f",
        "examples/shop",
        "--wasm",
        "/w/f.wasm",
        "-o",
        yaml_path.to_str().unwrap(),
    ]);
    let from_yaml: Value = serde_yaml_ng::from_slice(&std::fs::read(&yaml_path).unwrap()).unwrap();
    assert_eq!(from_yaml, response);
    assert!(
        written.stderr.is_empty(),
        "a small YAML file is not worth a notice: {}",
        text(&written.stderr)
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "no temp files left behind: {leftovers:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_large_ecds_file_named_for_yaml_gets_one_notice_naming_it_and_the_json_name() {
    let dir = scratch("ecds-large");
    let input = dir.join("routes.yaml");
    std::fs::write(&input, support::routes_with_policies(500)).unwrap();
    let render_to = |name: &str| {
        let path = dir.join(name);
        let output = ok(&[
            "render",
            "ecds",
            "-f",
            input.to_str().unwrap(),
            "--wasm",
            "/w/f.wasm",
            "-o",
            path.to_str().unwrap(),
        ]);
        (std::fs::read(&path).unwrap().len(), text(&output.stderr))
    };
    let (bytes, said) = render_to("attache-ecds.yaml");
    let yaml_path = dir.join("attache-ecds.yaml");
    let json_path = dir.join("attache-ecds.json");
    assert_eq!(
        said,
        format!(
            "note: the ECDS file {} is {} KB of YAML, which Envoy parses again on every policy change; \
             Envoy reads a large document about 6x cheaper from JSON: name it {} and attache writes JSON \
             (docs/envoy.md, \"ECDS: new policies without a restart\")\n",
            yaml_path.display(),
            bytes / 1000,
            json_path.display()
        )
    );
    assert!(bytes > 32_000, "large enough for the notice: {bytes}");
    let (_, said) = render_to("attache-ecds.json");
    assert!(said.is_empty(), "JSON needs no notice: {said}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wasmplugin_targets_the_gateway_with_the_document() {
    let output = ok(&[
        "render",
        "wasmplugin",
        "-f",
        "examples/shop",
        "--url",
        "oci://r.example/attache:1",
    ]);
    let plugin: Value = serde_yaml_ng::from_slice(&output.stdout).unwrap();
    assert_eq!(plugin["kind"], "WasmPlugin");
    assert_eq!(plugin["metadata"]["namespace"], "infra");
    assert_eq!(plugin["spec"]["targetRefs"][0]["name"], "edge");
    assert_eq!(plugin["spec"]["url"], "oci://r.example/attache:1");
    // The example's directly attached rules have no header filters of their
    // own (its delegating parents' stay with the filter under Istio), so the
    // Istio document is the resolved one, keyed by istiod's route names,
    // with the listeners' ports (docs/contract.md).
    let mut expected = encoded(resolved_example());
    expected["options"] = serde_json::json!({
        "trustClientControlHeaders": false,
        "istioRouteNames": true,
        "listenerPorts": {"http": 80, "admin": 8081, "deals/deals-edge/http": 80},
    });
    assert_eq!(plugin["spec"]["pluginConfig"], expected);
}

#[test]
fn backends_get_their_addresses_from_services_and_endpoint_slices_in_the_input() {
    let dir = scratch("slices");
    copy_dir(&workspace().join("tests/fixtures/e2e/basics"), &dir);
    // shop/echo port 9000 (the Service port, named http) is served by two
    // ready pods on 8080; the third is not ready.
    std::fs::write(
        dir.join("echo.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata: {name: echo, namespace: shop}\n\
         spec: {clusterIP: 10.96.0.10, ports: [{name: http, port: 9000, targetPort: 8080}]}\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata: {name: echo-x1, namespace: shop, labels: {kubernetes.io/service-name: echo}}\n\
         addressType: IPv4\nports: [{name: http, port: 8080}]\n\
         endpoints:\n- addresses: [10.1.0.2]\n- addresses: [10.1.0.1]\n- addresses: [10.1.0.3]\n  conditions: {ready: false}\n",
    )
    .unwrap();
    let output = ok(&[
        "render",
        "envoy",
        "-f",
        dir.to_str().unwrap(),
        "--ecds",
        "/e/ecds.yaml",
        "--wasm",
        "/w/f.wasm",
    ]);
    let bootstrap: Value = serde_yaml_ng::from_slice(&output.stdout).unwrap();
    let clusters = bootstrap["static_resources"]["clusters"]
        .as_array()
        .unwrap();
    assert_eq!(clusters.len(), 1, "one Service and port, one cluster");
    assert_eq!(clusters[0]["name"], "shop/echo/9000");
    assert_eq!(clusters[0]["type"], "STATIC");
    let endpoints: Vec<String> = clusters[0]["load_assignment"]["endpoints"][0]["lb_endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = &e["endpoint"]["address"]["socket_address"];
            format!("{}:{}", a["address"].as_str().unwrap(), a["port_value"])
        })
        .collect();
    assert_eq!(endpoints, ["10.1.0.1:8080", "10.1.0.2:8080"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wasmplugin_flags_set_checksum_pull_secret_and_fail_strategy() {
    // `--url` is given once: the test's own, else this one.
    let args_with = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["render", "wasmplugin", "-f", "examples/shop"]
            .iter()
            .chain(extra)
            .map(|a| a.to_string())
            .collect();
        if !extra.contains(&"--url") {
            args.extend(["--url".to_string(), "oci://r.example/a:1".to_string()]);
        }
        args
    };
    let spec = |extra: &[&str]| -> Value {
        let args = args_with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let plugin: Value = serde_yaml_ng::from_slice(&ok(&args).stdout).unwrap();
        plugin["spec"].clone()
    };
    // The defaults: fail closed, no checksum, no secret, a small document
    // inline (docs/plugin-delivery.md).
    let plain = spec(&[]);
    assert_eq!(plain["failStrategy"], "FAIL_CLOSE");
    assert_eq!(plain["pluginConfig"]["schemaVersion"], 2);
    let sealed = spec(&["--plugin-config", "compressed"])["pluginConfig"].clone();
    assert_eq!(sealed["encoding"], "zlib+base64-chunks");
    assert!(sealed["length"].as_u64() > Some(1000), "{sealed}");
    assert_eq!(
        spec(&["--plugin-config", "inline"])["pluginConfig"],
        plain["pluginConfig"]
    );
    assert!(plain.get("sha256").is_none() && plain.get("imagePullSecret").is_none());

    let hex = "AB".repeat(32);
    let set = spec(&[
        "--sha256",
        &format!("sha256:{hex}"),
        "--image-pull-secret",
        "regcred",
        "--fail-strategy",
        "fail-open",
    ]);
    // Istio's pattern is ^[a-f0-9]{64}$: lower-cased, prefix dropped.
    assert_eq!(set["sha256"], "ab".repeat(32));
    assert_eq!(set["imagePullSecret"], "regcred");
    assert_eq!(set["failStrategy"], "FAIL_OPEN");
    assert_eq!(
        spec(&["--fail-strategy", "fail-reload"])["failStrategy"],
        "FAIL_RELOAD"
    );
    assert_eq!(
        spec(&["--image-pull-secret", "reg.cred-1.example"])["imagePullSecret"],
        "reg.cred-1.example"
    );
    for url in [
        "oci://r.example:5000/a/b@sha256:00",
        "https://r.example/f.wasm?x=1",
        "file:///etc/attache/attache_filter.wasm",
    ] {
        assert_eq!(spec(&["--url", url])["url"], url);
    }
    // Plain http:// only with a checksum Istio verifies after fetching.
    let sha = "ab".repeat(32);
    assert_eq!(
        spec(&["--url", "http://10.0.0.1/f.wasm", "--sha256", &sha])["url"],
        "http://10.0.0.1/f.wasm"
    );
    let args = args_with(&["--url", "http://10.0.0.1/f.wasm"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = attache(&args);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("is plain http:// and --sha256 is not given"),
        "{}",
        text(&output.stderr)
    );

    for (flag, value, says) in [
        ("--sha256", "abc", "is not a sha256"),
        ("--sha256", &"g".repeat(64), "is not a sha256"),
        ("--image-pull-secret", "Reg_Cred", "is not a Secret name"),
        // RFC 1123 subdomains: no empty label, none ending in '-'.
        ("--image-pull-secret", "a..b", "is not a Secret name"),
        ("--image-pull-secret", "a-.b", "is not a Secret name"),
        ("--image-pull-secret", ".a", "is not a Secret name"),
        ("--image-pull-secret", "", "is not a Secret name"),
        // Schemes Istio fetches (istio/api wasm.proto `url`), a host, no
        // control characters or whitespace.
        ("--url", "ftp://r.example/a", "Istio does not fetch ftp://"),
        ("--url", "r.example/a:1", "has no scheme"),
        ("--url", "oci:///a:1", "needs a host"),
        ("--url", "file://relative.wasm", "absolute path"),
        ("--url", "oci://r.example/a\n:1", "control characters"),
        ("--url", "https://r.example/a b.wasm", "control characters"),
        ("--url", "", "has no scheme"),
        ("--fail-strategy", "fail-later", "invalid value"),
    ] {
        let args = args_with(&[flag, value]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = attache(&args);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(
            text(&output.stderr).contains(says),
            "{}",
            text(&output.stderr)
        );
    }
}

/// An all-digit rule `name` would take another rule's index in the entry
/// name and in istiod's route name (`shop.r.1`), and so its policies: the
/// route is refused, naming the field, and nothing of it reaches the plugin.
#[test]
fn an_all_digit_rule_name_is_an_error_naming_its_field() {
    let dir = scratch("digit-rule");
    let file = dir.join("in.yaml");
    std::fs::write(
        &file,
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: edge, namespace: shop}\n\
         spec:\n  gatewayClassName: istio\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: shop}\n\
         spec:\n  parentRefs: [{name: edge}]\n  rules:\n\
         \x20 - {name: \"1\", matches: [{path: {value: /a}}], backendRefs: [{name: svc, port: 80}]}\n\
         \x20 - {matches: [{path: {value: /b}}], backendRefs: [{name: svc, port: 80}]}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let output = attache(&["render", "wasmplugin", "-f", path]);
    let stderr = text(&output.stderr);
    let expected = format!(
        "error: {path} (document 2) HTTPRoute shop/r: spec.rules[0].name: rule name \"1\" is all digits, \
         which entry names and istiod's route names use for rule indexes; \
         give the rule a name with a letter in it (e.g. \"rule-1\"), or no name\n"
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!stderr.contains("reachable"), "{stderr}");
    let plugin: Value = serde_yaml_ng::from_slice(&output.stdout).unwrap();
    assert!(
        !plugin["spec"]["pluginConfig"]
            .to_string()
            .contains("http/shop/r/"),
        "{}",
        plugin["spec"]["pluginConfig"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `render trafficextension` carries exactly what `render wasmplugin`
/// does, under `spec.wasm`, last before the router (docs/istio.md).
#[test]
fn trafficextension_carries_the_wasmplugins_module_and_document() {
    let render = |kind: &str| -> serde_json::Value {
        let out = support::attache_ok(&[
            "render",
            kind,
            "-f",
            "examples/shop",
            "--url",
            "oci://r.example/attache:1",
        ]);
        serde_yaml_ng::from_slice(&out.stdout).unwrap()
    };
    let (plugin, extension) = (render("wasmplugin"), render("trafficextension"));
    assert_eq!(extension["kind"], "TrafficExtension");
    assert_eq!(extension["metadata"], plugin["metadata"]);
    assert_eq!(
        extension["spec"]["targetRefs"],
        plugin["spec"]["targetRefs"]
    );
    assert_eq!(extension["spec"]["priority"], serde_json::json!(i32::MIN));
    for (field, value) in extension["spec"]["wasm"].as_object().unwrap() {
        assert_eq!(value, &plugin["spec"][field], "{field}");
    }
    assert_eq!(
        extension["spec"]["wasm"]["url"],
        "oci://r.example/attache:1"
    );
}
