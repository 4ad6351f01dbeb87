//! The filter inside an Envoy configured the way istiod configures a
//! Gateway (shape.rs says which Istio sources each name and setting follows),
//! fed the WasmPlugin `attache render wasmplugin` writes, side by side with
//! the plain bootstrap `attache render envoy` writes for the same manifests
//! (examples/shop plus tests/fixtures/istio). The WasmPlugin is the
//! controller's (controller.rs), which must equal render's, delivered in its
//! compressed form; controller.rs also runs a 10,000-route Gateway.
//!
//! Every request the two can both serve gets the same answer and the same
//! headers at the backend; under Istio each is matched by route name (the
//! filter's by-name counter grows by one per request, the fallback counter
//! stays at zero); a rule's own `add`, which istiod applies on the route,
//! arrives once; and a policy's timeout beats the rule's own, which istiod
//! also sets on the route.

mod controller;
pub mod shape;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use attache_contract::{Document, RouteEntry};
use attache_core::topology::ObjectKey;
use attache_render::wasmplugin::ConfigForm;
use serde::Deserialize;
use serde_json::Value;

use crate::harness::backend::unique_key;
use crate::harness::client::{self, Reply};
use crate::harness::envoy::Envoy;
use crate::harness::generator::{self, copy_dir};
use crate::harness::paths;
use crate::harness::probe::Probe;
use crate::harness::scratch::Scratch;
use crate::harness::stack::{Fixture, Stack};
use crate::timeouts::SLACK;
use shape::{istio_bootstrap, istio_ecds, istiod_rules, protojson};

const GATEWAY: &str = "infra/edge";
/// `<namespace>.<name>` of the WasmPlugin `render wasmplugin` writes.
const PLUGIN: &str = "infra.attache-edge";

/// istiod's route names of the rules compared (examples/shop and
/// tests/fixtures/istio), sorted: `istiod_rules` reads the files in
/// directory order.
const COMPARED: &[&str] = &[
    "beta",
    "checkout",
    // The deals team's routes, through its ListenerSet's listener
    // (coupons: the policy that opts in to a 2025 merge strategy).
    "deals.coupons.0",
    "deals.offers.0",
    "health",
    "health",
    "infra.ops.0",
    "pages",
    "shop.gifts.0",
];

/// Both data planes, and how to reach each Gateway listener on them.
struct Pair {
    plain: Stack,
    istio: Envoy,
    plain_ports: BTreeMap<String, u16>,
    istio_ports: BTreeMap<String, u16>,
    _scratch: Scratch,
}

impl Pair {
    fn get(&self, istio: bool, listener: &str, probe: &Probe, extra: &[(&str, &str)]) -> Reply {
        self.send(istio, Method::Get, listener, probe, extra)
    }

    fn send(
        &self,
        istio: bool,
        method: Method,
        listener: &str,
        probe: &Probe,
        extra: &[(&str, &str)],
    ) -> Reply {
        let port = if istio {
            &self.istio_ports
        } else {
            &self.plain_ports
        }[listener];
        let url = format!("http://127.0.0.1:{port}{}", probe.path);
        match method {
            Method::Get => client::get(&url, &probe.headers_with(extra)),
            Method::Post => client::post(&url, &probe.headers_with(extra)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
}

/// The request that reaches an entry: `Probe::for_route` makes GETs; a rule
/// whose first match asks for POST (the example's checkout) gets the same
/// probe sent as a POST. None for what neither covers, which the caller
/// treats as a failure: no rule goes unsent.
fn request_for(entry: &RouteEntry) -> Option<(Method, Probe)> {
    if let Some(probe) = Probe::for_route(entry) {
        return Some((Method::Get, probe));
    }
    let first = entry.matches.first()?;
    if first.method.as_deref() != Some("POST") {
        return None;
    }
    let mut as_get = entry.clone();
    as_get.matches[0].method = None;
    Probe::for_route(&as_get).map(|probe| (Method::Post, probe))
}

fn manifests(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for file in std::fs::read_dir(dir).expect("read input dir") {
        let path = file.expect("dir entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read manifest");
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = Value::deserialize(doc).expect("YAML manifest");
            if !value.is_null() {
                out.push(value);
            }
        }
    }
    out
}

fn yaml_file(path: &Path) -> Value {
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).expect("read YAML")).expect("YAML")
}

/// The `pluginConfig` of the WasmPlugin the generator writes, as Istio hands
/// it to the filter.
fn plugin_config(input: &Path) -> String {
    let out = generator::run_ok(
        ["render", "wasmplugin", "-f"]
            .map(String::from)
            .into_iter()
            .chain([
                input.display().to_string(),
                "--gateway".into(),
                GATEWAY.into(),
            ]),
    );
    let plugin: Value = serde_yaml_ng::from_slice(&out.stdout).expect("WasmPlugin YAML");
    assert_eq!(plugin["spec"]["pluginName"], "attache");
    protojson(&plugin["spec"]["pluginConfig"])
}

fn start_pair() -> Pair {
    let scratch = Scratch::new("istio");
    let input = copy_dir(&paths::example("shop"), &scratch.join("input"));
    // An addition to the example, not a fixture of its own (so not under
    // tests/fixtures/e2e, which holds complete inputs).
    let gifts = paths::fixture("basics").join("../../istio/60-gifts.yaml");
    std::fs::copy(gifts, input.join("60-gifts.yaml")).expect("copy the Istio fixture");
    // The Gateway's listeners on the ports the Istio-shaped Envoy binds, as
    // in a cluster (the document's listener ports are the request's
    // destination ports; the plain stack maps listeners to ports itself).
    let istio_ports: BTreeMap<String, u16> = ["http", "admin"]
        .map(|l| (l.to_owned(), paths::free_port()))
        .into_iter()
        .collect();
    let gateway = input.join("10-gateway.yaml");
    let text = std::fs::read_to_string(&gateway).expect("read the Gateway");
    let text = text
        .replacen(
            "      port: 80\n",
            &format!("      port: {}\n", istio_ports["http"]),
            1,
        )
        .replacen(
            "      port: 8081\n",
            &format!("      port: {}\n", istio_ports["admin"]),
            1,
        );
    assert_eq!(
        text.matches(&format!("port: {}\n", istio_ports["admin"]))
            .count(),
        1
    );
    std::fs::write(&gateway, text).expect("write the Gateway");
    // The deals team's ListenerSet listener shares the Gateway's `http` port.
    let deals = input.join("60-deals.yaml");
    let text = std::fs::read_to_string(&deals).expect("read the ListenerSet");
    assert_eq!(text.matches("      port: 80\n").count(), 1);
    let text = text.replacen(
        "      port: 80\n",
        &format!("      port: {}\n", istio_ports["http"]),
        1,
    );
    std::fs::write(&deals, text).expect("write the ListenerSet");
    let plain = Stack::start(&Fixture {
        input: input.clone(),
        gateway: GATEWAY,
        listeners: &["http", "admin"],
        backends: &["*"],
    });
    let plain_bootstrap = yaml_file(&plain.scratch.join("envoy.yaml"));
    let plain_ports = listener_ports(&plain_bootstrap);
    let rules = istiod_rules(&manifests(&input), "infra", "edge");
    let ecds_dir = scratch.join("istio-ecds");
    std::fs::create_dir_all(&ecds_dir).expect("ECDS dir");
    let ecds = ecds_dir.join("wasmplugin.json");
    // The controller's WasmPlugin (its pure reconcile) is render's; here
    // it goes to Envoy compressed (attache_contract::envelope), which a
    // Gateway this small gets only when asked, so that the compressed path
    // is held to everything below.
    let objects = manifests(&input);
    let edge = ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    };
    let controller_name = attache_controller::reconcile::ISTIO_CONTROLLER;
    let auto = controller::controller_plugin(&objects, controller_name, &edge, ConfigForm::Auto);
    assert_eq!(
        protojson(&auto["spec"]["pluginConfig"]),
        plugin_config(&input),
        "the controller's pluginConfig is render wasmplugin's"
    );
    let sealed =
        controller::controller_plugin(&objects, controller_name, &edge, ConfigForm::Compressed);
    assert_eq!(
        sealed["spec"]["pluginConfig"]["encoding"],
        "zlib+base64-chunks"
    );
    let sealed_config = protojson(&sealed["spec"]["pluginConfig"]);
    let ecds_value = istio_ecds(PLUGIN, "attache", &paths::wasm(), &sealed_config);
    std::fs::write(&ecds, ecds_value.to_string()).expect("write ECDS");
    let log_dir = scratch.join("istio-envoy");
    std::fs::create_dir_all(&log_dir).expect("log dir");
    let admin = paths::free_port();
    let bootstrap = istio_bootstrap(&plain_bootstrap, &rules, &istio_ports, admin, &ecds, PLUGIN);
    let path = log_dir.join("envoy.json");
    std::fs::write(&path, bootstrap.to_string()).expect("write bootstrap");
    match Envoy::try_start(&path, admin, istio_ports["http"], &log_dir) {
        Ok(istio) => Pair {
            plain,
            istio,
            plain_ports,
            istio_ports,
            _scratch: scratch,
        },
        Err(log) => panic!("the Istio-shaped Envoy did not start; log:\n{log}"),
    }
}

/// Listener key -> local port of the plain bootstrap: an Envoy listener
/// is named by the keys on its port joined with `+`, a key's `/` written
/// `~` (`http+deals~deals-edge~http`).
fn listener_ports(bootstrap: &Value) -> BTreeMap<String, u16> {
    let mut out = BTreeMap::new();
    for l in bootstrap["static_resources"]["listeners"]
        .as_array()
        .expect("listeners")
    {
        let port = l["address"]["socket_address"]["port_value"]
            .as_u64()
            .expect("port");
        for key in l["name"].as_str().expect("name").split('+') {
            out.insert(key.replace('~', "/"), port as u16);
        }
    }
    out
}

/// What a request shows of the settings it got: the status, every request
/// header the entry or the rule's own filters name as the backend saw it,
/// the router's expected timeout, and the response headers the entry names.
fn observed(reply: &Reply, entry: &RouteEntry) -> Vec<(String, String)> {
    let mut names: Vec<String> = Vec::new();
    if let Some(c) = &entry.settings.request_headers {
        names.extend(c.set.iter().chain(&c.add).map(|h| h.name.clone()));
        names.extend(c.remove.iter().cloned());
    }
    names.push("x-envoy-expected-rq-timeout-ms".into());
    let mut seen = vec![("status".to_owned(), reply.status.to_string())];
    for name in names {
        seen.push((
            format!("> {name}"),
            format!("{:?}", reply.echoed_header(&name)),
        ));
    }
    if let Some(c) = &entry.settings.response_headers {
        for h in c.set.iter().chain(&c.add) {
            seen.push((
                format!("< {}", h.name),
                format!("{:?}", reply.header_values(&h.name)),
            ));
        }
    }
    seen
}

fn wait_for_stat(envoy: &Envoy, name: &str, want: u64) -> u64 {
    let started = Instant::now();
    loop {
        let value = envoy.stat(name);
        if value >= want || started.elapsed() > Duration::from_secs(10) {
            return value;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn istio_shaped_gateway_matches_every_request_by_name_and_enforces_what_plain_envoy_does() {
    let pair = start_pair();
    let input = pair._scratch.join("input");
    let document: Document =
        serde_json::from_value(generator::resolve(&input, GATEWAY)).expect("schema-1 document");
    let rules = istiod_rules(&manifests(&input), "infra", "edge");
    let mut sent = 0u64;
    let mut compared = Vec::new();
    for rule in &rules {
        let entry = document
            .routes
            .iter()
            .find(|e| e.name == rule.entry)
            .unwrap_or_else(|| panic!("no entry {} in the document", rule.entry));
        let (method, probe) = request_for(entry)
            .unwrap_or_else(|| panic!("no request reaches {} ({:?})", rule.entry, entry.matches));
        let client = [("x-internal-debug", "from-client")];
        let plain = pair.send(false, method, &rule.listener, &probe, &client);
        let istio = pair.send(true, method, &rule.port_of, &probe, &client);
        sent += 1;
        assert_eq!(
            observed(&istio, entry),
            observed(&plain, entry),
            "{} ({}) differs under Istio",
            rule.entry,
            rule.route_name
        );
        compared.push(rule.route_name.clone());
    }
    eprintln!("istio: compared {} routes: {compared:?}", compared.len());
    compared.sort();
    // Every rule istiod serves, each once (`health` twice: one name, two
    // listeners, picked by destination port), so a rule no request reaches
    // fails here instead of going unchecked.
    assert_eq!(compared, COMPARED, "the rules compared under Istio");

    // The rule's own add (applied by istiod on the route) arrives once, and
    // so does the response's.
    let gifts = Probe {
        path: "/gifts".into(),
        headers: vec![("host".into(), "shop.example.com".into())],
    };
    let reply = pair.get(true, "http", &gifts, &[]);
    sent += 1;
    assert_eq!(
        reply.echoed_header("x-gift-wrap"),
        Some(vec!["yes".to_owned()])
    );
    assert_eq!(
        reply.echoed_header("x-gift-tier"),
        Some(vec!["gold".to_owned()])
    );
    assert_eq!(reply.header_values("x-gift-note"), ["thanks"]);

    // The policy's 2s override beats the rule's own 20s, which istiod put on
    // the Envoy route: the filter's timeout header replaces it.
    let reply = pair.get(true, "http", &gifts, &[("x-backend-delay-ms", "4000")]);
    sent += 1;
    assert_eq!(reply.status, 504, "{}", reply.body);
    assert!(
        reply.elapsed < Duration::from_secs(2) + SLACK,
        "{:?}: the policy's 2s did not win",
        reply.elapsed
    );

    // Retries: the merged attempts (2, on 503) under both.
    let pages = document
        .routes
        .iter()
        .find(|e| e.name == "http/shop/storefront/pages")
        .expect("pages entry");
    let probe = Probe::for_route(pages).expect("pages probe");
    for istio in [false, true] {
        let key = unique_key("istio-retry");
        let reply = pair.get(
            istio,
            "http",
            &probe,
            &[
                ("x-backend-key", &key),
                ("x-backend-fail-times", "2"),
                ("x-backend-status", "503"),
            ],
        );
        sent += u64::from(istio);
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(pair.plain.backend.attempts(&key), 3, "istio: {istio}");
    }

    sent += checkout_retries_as_plain_envoy_does(&pair, &document);

    let stat = crate::harness::filter::stat;
    let by_name = wait_for_stat(&pair.istio, &stat("attache.requests.matched_by_name"), sent);
    assert_eq!(
        (
            by_name,
            pair.istio
                .stat(&stat("attache.requests.matched_by_fallback")),
            pair.istio.stat(&stat("attache.requests.unmatched"))
        ),
        (sent, 0, 0),
        "by name, by fallback, unmatched after {sent} requests under Istio"
    );
    eprintln!("istio: {sent} requests, {by_name} matched by name (100%), 0 by fallback");
}

/// Checkout (POST; its policy's retry: attempts capped at 2 by the class,
/// codes 502 and 503) retries under Istio as under the plain bootstrap.
/// istiod's default policy on the route (2 retries on 503 and connection
/// errors, shape.rs) is joined by Envoy with the filter's headers: their
/// `x-envoy-max-retries` replaces the route's count, their codes add to its
/// 503. Returns how many requests it sent under Istio.
fn checkout_retries_as_plain_envoy_does(pair: &Pair, document: &Document) -> u64 {
    let checkout = document
        .routes
        .iter()
        .find(|e| e.name == "http/shop/storefront/checkout")
        .expect("checkout entry");
    let retry = checkout.settings.retry.as_ref().expect("checkout retries");
    assert_eq!(
        (retry.attempts, retry.codes.as_deref()),
        (Some(2), Some(&[502, 503][..]))
    );
    let (method, probe) = request_for(checkout).expect("checkout request");
    assert_eq!(method, Method::Post);
    let mut sent = 0;
    // (status the backend fails with, times, expected status, attempts)
    for (status, fail, want, attempts) in [
        ("502", "2", 200, 3),
        ("503", "5", 503, 3),
        // Not a code of the policy nor of istiod's default: no retry.
        ("500", "1", 500, 1),
    ] {
        for istio in [false, true] {
            let key = unique_key("istio-checkout");
            let reply = pair.send(
                istio,
                method,
                "http",
                &probe,
                &[
                    ("x-backend-key", &key),
                    ("x-backend-fail-times", fail),
                    ("x-backend-status", status),
                ],
            );
            sent += u64::from(istio);
            assert_eq!(
                (reply.status, pair.plain.backend.attempts(&key)),
                (want, attempts),
                "checkout, backend fails {fail}x {status}, istio: {istio}: {}",
                reply.body
            );
        }
    }
    sent
}
