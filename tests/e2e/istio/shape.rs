//! An Envoy configuration shaped the way istiod configures a Gateway API
//! Gateway, made from the plain bootstrap `attache render envoy` writes for
//! the same manifests (same matches, clusters and backends), and the filter
//! delivered the way Istio delivers a WasmPlugin.
//!
//! Followed in istio/istio (master, 2026-08), pilot/pkg:
//! - listeners `<bind>_<port>`: networking/core/gateway.go `getListenerName`;
//! - route configurations `http.<port>`: model/gateway.go `gatewayRDSRouteName`;
//! - virtual hosts `<host>:<port>`: networking/core/gateway.go, `util.DomainName`;
//! - route names: config/kube/gateway/conversion.go `convertHTTPRoute` (the
//!   rule's `name`, else `<namespace>.<route>.<rule index>`), kept by
//!   networking/core/route/route.go `translateRoute` (which appends
//!   `.<match name>` only for named matches; Gateway API makes none);
//! - a rule's own header filters, timeout and retry applied on the Envoy
//!   route by istiod (`convertHTTPRoute`: `vs.Headers`, `vs.Timeout`,
//!   `vs.Retries` with retryOn `connect-failure,refused-stream,unavailable,
//!   cancelled` plus the codes, attempts defaulting to 2);
//! - the Envoy retry policy from that: networking/core/route/retry/retry.go
//!   `ConvertPolicy` (see `istiod_retry_policy`).
//! - the WasmPlugin as an ECDS resource named `<namespace>.<name>`, root id
//!   `pluginName`, `pluginConfig` turned into JSON by `protomarshal.ToJSON`
//!   and carried as a `StringValue` (model/extensions.go and wasm.go,
//!   `buildWasmConfig`), failure policy FAIL_CLOSED for `failStrategy:
//!   FAIL_CLOSE`. Istio's agent serves it over ADS with the module rewritten
//!   to a local file; here Envoy reads the same resource from a watched file.

use std::collections::BTreeMap;

use serde_json::{json, Value};

const WASM_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";

/// One rule istiod turns into an Envoy route.
pub struct IstioRule {
    /// The attache entry name (`listener/namespace/route/rule`).
    pub entry: String,
    pub listener: String,
    /// istiod's Envoy route name.
    pub route_name: String,
    /// The rule as written (filters, timeouts, retry).
    pub rule: Value,
}

/// The rules of HTTPRoutes attached to Gateway `ns/name` directly. Rules
/// that delegate (kgateway-style: a backendRef to an HTTPRoute) and the
/// routes they reach are left out: istiod does not implement delegation.
pub fn istiod_rules(manifests: &[Value], gateway_ns: &str, gateway: &str) -> Vec<IstioRule> {
    let mut rules = Vec::new();
    for route in manifests.iter().filter(|m| m["kind"] == "HTTPRoute") {
        let ns = route["metadata"]["namespace"].as_str().unwrap_or("default");
        let name = route["metadata"]["name"].as_str().unwrap_or_default();
        let parents = route["spec"]["parentRefs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for parent in parents {
            let parent_ns = parent["namespace"].as_str().unwrap_or(ns);
            if parent["name"] != gateway || parent_ns != gateway_ns {
                continue;
            }
            let Some(listener) = parent["sectionName"].as_str() else {
                panic!("HTTPRoute {ns}/{name}: the test expects a sectionName per parentRef");
            };
            let spec_rules = route["spec"]["rules"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for (index, rule) in spec_rules.into_iter().enumerate() {
                let delegates = rule["backendRefs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|b| b["kind"] == "HTTPRoute");
                if delegates {
                    continue;
                }
                let rule_name = rule["name"].as_str().map(str::to_owned);
                let label = rule_name.clone().unwrap_or_else(|| index.to_string());
                rules.push(IstioRule {
                    entry: format!("{listener}/{ns}/{name}/{label}"),
                    listener: listener.to_owned(),
                    route_name: rule_name.unwrap_or_else(|| format!("{ns}.{name}.{index}")),
                    rule,
                });
            }
        }
    }
    rules
}

/// The plain bootstrap turned into istiod's shape: listener ports from
/// `ports` (Gateway listener name -> port), the admin on `admin_port`, the
/// filter read from `ecds` as the ECDS resource `plugin`.
pub fn istio_bootstrap(
    plain: &Value,
    rules: &[IstioRule],
    ports: &BTreeMap<String, u16>,
    admin_port: u16,
    ecds: &std::path::Path,
    plugin: &str,
) -> Value {
    let mut out = plain.clone();
    out["admin"]["address"]["socket_address"]["port_value"] = json!(admin_port);
    let by_entry: BTreeMap<&str, &IstioRule> =
        rules.iter().map(|r| (r.entry.as_str(), r)).collect();
    let listeners = out["static_resources"]["listeners"]
        .as_array_mut()
        .expect("the plain bootstrap has static listeners");
    for listener in listeners {
        let gateway_listener = listener["name"].as_str().unwrap_or_default().to_owned();
        let port = ports[&gateway_listener];
        listener["name"] = json!(format!("0.0.0.0_{port}"));
        listener["address"]["socket_address"]["port_value"] = json!(port);
        let hcm = &mut listener["filter_chains"][0]["filters"][0]["typed_config"];
        for filter in hcm["http_filters"].as_array_mut().expect("http_filters") {
            if filter["name"] == "attache" {
                *filter = ecds_filter(plugin, ecds);
            }
        }
        let routes = &mut hcm["route_config"];
        routes["name"] = json!(format!("http.{port}"));
        for vhost in routes["virtual_hosts"]
            .as_array_mut()
            .expect("virtual_hosts")
        {
            let domain = vhost["domains"][0].as_str().unwrap_or("*").to_owned();
            vhost["name"] = json!(format!("{domain}:{port}"));
            let kept: Vec<Value> = vhost["routes"]
                .as_array()
                .expect("routes")
                .iter()
                .filter_map(|route| {
                    let rule = by_entry.get(route["name"].as_str()?)?;
                    Some(istiod_route(route, rule))
                })
                .collect();
            vhost["routes"] = json!(kept);
        }
    }
    out
}

fn ecds_filter(plugin: &str, ecds: &std::path::Path) -> Value {
    let dir = ecds.parent().expect("the ECDS file sits in a directory");
    json!({
        "name": plugin,
        "config_discovery": {
            "config_source": {
                "path_config_source": {
                    "path": ecds,
                    "watched_directory": {"path": dir},
                },
                "resource_api_version": "V3",
            },
            "type_urls": [WASM_TYPE],
        },
    })
}

/// The Envoy route istiod writes for one rule: its name, and the rule's own
/// header filters, timeout and retry as native route settings.
fn istiod_route(plain: &Value, rule: &IstioRule) -> Value {
    let mut route = plain.clone();
    route["name"] = json!(rule.route_name);
    for filter in rule.rule["filters"].as_array().into_iter().flatten() {
        let (modifier, prefix) = match filter["type"].as_str() {
            Some("RequestHeaderModifier") => (&filter["requestHeaderModifier"], "request"),
            Some("ResponseHeaderModifier") => (&filter["responseHeaderModifier"], "response"),
            other => panic!("the test does not shape filter {other:?}"),
        };
        let mut to_add = Vec::new();
        for (list, action) in [
            ("set", "OVERWRITE_IF_EXISTS_OR_ADD"),
            ("add", "APPEND_IF_EXISTS_OR_ADD"),
        ] {
            for header in modifier[list].as_array().into_iter().flatten() {
                to_add.push(json!({
                    "header": {"key": header["name"], "value": header["value"]},
                    "append_action": action,
                }));
            }
        }
        route[format!("{prefix}_headers_to_add")] = json!(to_add);
        if let Some(remove) = modifier["remove"].as_array() {
            route[format!("{prefix}_headers_to_remove")] = json!(remove);
        }
    }
    let action = &mut route["route"];
    if let Some(request) = rule.rule["timeouts"]["request"].as_str() {
        action["timeout"] = json!(proto_duration(request));
    }
    match istiod_retry_policy(&rule.rule) {
        Some(policy) => action["retry_policy"] = policy,
        None => {
            if let Some(fields) = action.as_object_mut() {
                fields.remove("retry_policy");
            }
        }
    }
    route
}

/// The retry policy istiod writes on a rule's Envoy route, as
/// pilot/pkg/networking/core/route/retry/retry.go (istio/istio master)
/// builds it:
/// - `DefaultPolicy` when the rule has no `retry`: 2 retries on
///   `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes`
///   with `retriable_status_codes: [503]` (unless istiod runs with
///   `EXCLUDE_503_FROM_DEFAULT_RETRIES`), the `previous_hosts` host predicate
///   and `host_selection_retry_max_attempts: 5`;
/// - `ConvertPolicy` for a rule's `retry` (which config/kube/gateway
///   conversion.go turns into retryOn `connect-failure,refused-stream,
///   unavailable,cancelled,<codes>` and attempts, 2 when unset): none at 0
///   attempts; else the default with `num_retries` from attempts, the codes
///   moved by `parseRetryOn` from `retry_on` into `retriable_status_codes`
///   (replacing the default's 503) with `retriable-status-codes` added to
///   `retry_on` when there are any, and `retry_back_off` from `backoff`.
fn istiod_retry_policy(rule: &Value) -> Option<Value> {
    let mut policy = json!({
        "retry_on": "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
        "num_retries": 2,
        "retriable_status_codes": [503],
        "retry_host_predicate": [{
            "name": "envoy.retry_host_predicates.previous_hosts",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate",
            },
        }],
        "host_selection_retry_max_attempts": 5,
    });
    let Some(retry) = rule.get("retry") else {
        return Some(policy);
    };
    let attempts = retry["attempts"].as_u64().unwrap_or(2);
    if attempts == 0 {
        return None;
    }
    let codes: Vec<u64> = retry["codes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c.as_u64().expect("a status code"))
        .collect();
    let mut retry_on = String::from("connect-failure,refused-stream,unavailable,cancelled");
    if !codes.is_empty() {
        retry_on.push_str(",retriable-status-codes");
    }
    policy["num_retries"] = json!(attempts);
    policy["retry_on"] = json!(retry_on);
    policy["retriable_status_codes"] = json!(codes);
    if let Some(backoff) = retry["backoff"].as_str() {
        policy["retry_back_off"] = json!({"base_interval": proto_duration(backoff)});
    }
    Some(policy)
}

/// A Gateway API duration (`8s`, `500ms`, `1m`) as protobuf JSON (`8s`).
fn proto_duration(text: &str) -> String {
    let (number, unit) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0));
    let n: f64 = number.parse().expect("a Gateway API duration");
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        other => panic!("unit {other} in {text}"),
    };
    format!("{seconds}s")
}

/// The ECDS file istiod's WasmPlugin becomes: `plugin` is
/// `<namespace>.<name>` of the WasmPlugin, `plugin_config` its
/// `pluginConfig` as protojson writes it.
pub fn istio_ecds(
    plugin: &str,
    root_id: &str,
    wasm: &std::path::Path,
    plugin_config: &str,
) -> Value {
    json!({
        "version_info": "1",
        "resources": [{
            "@type": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig",
            "name": plugin,
            "typed_config": {
                "@type": WASM_TYPE,
                "config": {
                    "name": plugin,
                    "root_id": root_id,
                    "vm_config": {
                        "runtime": "envoy.wasm.runtime.v8",
                        "code": {"local": {"filename": wasm}},
                        "environment_variables": {
                            "key_values": {"ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION": "1"},
                        },
                    },
                    "configuration": {
                        "@type": "type.googleapis.com/google.protobuf.StringValue",
                        "value": plugin_config,
                    },
                    "failure_policy": "FAIL_CLOSED",
                },
            },
        }],
    })
}

/// JSON as Go's protojson writes a `google.protobuf.Struct`: every number is
/// a double, printed the ECMAScript way (`10000`, `1e+21`; protobuf-go
/// internal/encoding/json `appendFloat`).
pub fn protojson(value: &Value) -> String {
    match value {
        Value::Number(n) => {
            let f = n.as_f64().expect("a JSON number is a double");
            if f != 0.0 && (f.abs() < 1e-6 || f.abs() >= 1e21) {
                let text = format!("{f:e}");
                let (mantissa, exp) = text.split_once('e').expect("exponent form");
                match exp.strip_prefix('-') {
                    Some(neg) => format!("{mantissa}e-{neg}"),
                    None => format!("{mantissa}e+{exp}"),
                }
            } else {
                format!("{f}")
            }
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(protojson).collect();
            format!("[{}]", inner.join(","))
        }
        Value::Object(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), protojson(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        other => other.to_string(),
    }
}

#[test]
fn istiod_retry_policy_follows_convert_policy() {
    let default = istiod_retry_policy(&json!({})).expect("the default policy");
    assert_eq!(default["retriable_status_codes"], json!([503]));
    assert_eq!(default["num_retries"], 2);
    assert!(default["retry_on"]
        .as_str()
        .is_some_and(|on| on.ends_with(",retriable-status-codes")));

    let own = istiod_retry_policy(&json!({"retry": {"codes": [502, 504], "backoff": "100ms"}}))
        .expect("a policy");
    assert_eq!(own["num_retries"], 2, "attempts default to 2");
    assert_eq!(
        own["retry_on"],
        "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
    );
    assert_eq!(own["retriable_status_codes"], json!([502, 504]));
    assert_eq!(own["retry_back_off"]["base_interval"], "0.1s");
    assert_eq!(own["retry_host_predicate"], default["retry_host_predicate"]);

    let no_codes = istiod_retry_policy(&json!({"retry": {"attempts": 3}})).expect("a policy");
    assert_eq!(
        (&no_codes["retry_on"], &no_codes["retriable_status_codes"]),
        (
            &json!("connect-failure,refused-stream,unavailable,cancelled"),
            &json!([])
        )
    );
    assert!(istiod_retry_policy(&json!({"retry": {"attempts": 0}})).is_none());
}
