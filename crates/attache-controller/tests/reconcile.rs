//! The pure reconcile, table-driven on a snapshot built from examples/shop
//! as the API server would return it (uid, resourceVersion, generation).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::collections::BTreeSet;
use std::sync::Arc;

use attache_controller::kinds::{named, WatchedKind, WASM_PLUGIN};
use attache_controller::prune::{prune, status_schema};
use attache_controller::reconcile::{reconcile, Config, LivePlugin, Outcome};
use attache_controller::snapshot::Snapshot;
use attache_controller::status::{self, Applied, MAX_ANCESTORS};
use attache_core::topology::ObjectKey;
use serde_json::{json, Value};

mod common;
use common::shop;

const NOW: &str = "2026-11-26T07:00:00Z";
const LATER: &str = "2026-11-26T08:00:00Z";

fn edge() -> ObjectKey {
    ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    }
}

/// The defaults, as deploy/controller runs it: examples/shop's class is
/// Istio's, the default `--controller-name`.
fn config() -> Config {
    Config::default()
}

fn snapshot(objects: &[Value], missing: &[&'static str]) -> Snapshot {
    let rows = objects.iter().map(|v| {
        let kind: &'static WatchedKind = named(v["kind"].as_str().unwrap()).unwrap();
        (kind, v)
    });
    Snapshot::from_objects(rows, missing.iter().copied().collect::<BTreeSet<_>>())
}

/// One reconcile round as the adapter runs it: plan, then (every apply
/// succeeding) the status writes.
fn round(
    objects: &[Value],
    missing: &[&'static str],
    now: &str,
) -> (
    attache_controller::reconcile::Plan,
    Vec<status::StatusPatch>,
) {
    let snap = snapshot(objects, missing);
    let plan = reconcile(&config(), &snap);
    let applied: Applied = plan
        .gateways
        .iter()
        .map(|(k, o)| {
            let r = match o {
                Outcome::Keep(why) => Err(Arc::new(why.clone()) as status::NotApplied),
                _ => Ok(()),
            };
            (k.clone(), r)
        })
        .collect();
    let reach = status::reach(&plan.inputs, plan.gateways.keys().cloned());
    let patches = status::patches(&plan.inputs, &snap, &reach, &applied, now);
    (plan, patches)
}

fn applied_plugin(plan: &attache_controller::reconcile::Plan) -> Value {
    match plan.gateways.get(&edge()) {
        Some(Outcome::Apply(v)) => v.clone(),
        other => panic!("expected an apply for infra/edge, got {other:?}"),
    }
}

/// Writes the plan's WasmPlugin and status into the objects, as the API
/// server would after a successful round.
fn settle(
    objects: &mut Vec<Value>,
    plan: &attache_controller::reconcile::Plan,
    patches: &[status::StatusPatch],
) {
    for outcome in plan.gateways.values() {
        if let Outcome::Apply(p) = outcome {
            objects.retain(|o| {
                !(o["kind"] == "WasmPlugin" && o["metadata"]["name"] == p["metadata"]["name"])
            });
            let mut live = p.clone();
            live["metadata"]["resourceVersion"] = json!("9");
            live["status"] = json!({"observedGeneration": 1});
            objects.push(live);
        }
    }
    for patch in patches {
        let o = objects
            .iter_mut()
            .find(|o| {
                o["kind"] == patch.kind.kind && o["metadata"]["name"] == patch.key.name.as_str()
            })
            .unwrap();
        // What the API server keeps: the status pruned by the CRD's schema.
        let mut stored = patch.status.clone();
        prune(&mut stored, status_schema(patch.kind.kind).unwrap());
        o["status"] = stored;
    }
}

fn policy_status<'a>(patches: &'a [status::StatusPatch], name: &str) -> &'a Value {
    &patches
        .iter()
        .find(|p| p.key.name == name)
        .unwrap_or_else(|| panic!("no status patch for {name}"))
        .status
}

#[test]
fn a_gateway_gets_the_wasmplugin_render_wasmplugin_writes_owned_by_it() {
    let objects = shop();
    let (plan, _) = round(&objects, &[], NOW);
    let plugin = applied_plugin(&plan);
    // The same object `attache render wasmplugin` writes for the same input.
    let rows = objects
        .iter()
        .map(|v| (named(v["kind"].as_str().unwrap()).unwrap(), v));
    let (docs, unreadable) = attache_controller::snapshot::read_whole(rows);
    assert!(unreadable.is_empty(), "{unreadable:?}");
    let inputs = attache_core::parse_each(&docs);
    let resolved =
        attache_core::resolve_for(&inputs, &edge(), attache_core::DataPlane::Istio).unwrap();
    let rendered =
        attache_render::wasmplugin::wasm_plugin(&resolved.resolution, &Default::default()).unwrap();
    assert_eq!(plugin["spec"], rendered["spec"]);
    assert_eq!(plugin["metadata"]["name"], "attache-edge");
    assert_eq!(
        plugin["metadata"]["ownerReferences"],
        json!([{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "name": "edge", "uid": "uid-edge"}])
    );
    assert!(plan.orphans.is_empty());
}

#[test]
fn status_carries_attache_status_content_plus_programmed() {
    let objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    let report = attache_core::policy_status(&plan.inputs);
    let computed = report
        .policies
        .iter()
        .find(|p| p.metadata.name == "edge-defaults")
        .unwrap();
    let written = policy_status(&patches, "edge-defaults");
    assert_eq!(written["conditions"][0]["reason"], "Accepted");
    assert_eq!(written["conditions"][0]["lastTransitionTime"], NOW);
    assert_eq!(written["conditions"][0]["observedGeneration"], 1);
    let ancestor = &written["ancestors"][0];
    assert_eq!(ancestor["controllerName"], "policy.attache.dev/attache");
    let types: Vec<&str> = ancestor["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Accepted", "Attached", "Programmed"]);
    // GEP-713 (2025) in the core's words: some of its values are in
    // effect (PartiallyProgrammed), and the controller names the Gateway.
    let programmed = &ancestor["conditions"][2];
    assert_eq!(programmed["status"], "True");
    assert_eq!(programmed["reason"], "PartiallyProgrammed");
    let message = programmed["message"].as_str().unwrap();
    assert!(
        message.ends_with("strategy: Custom (field defaults) (applied to Gateway infra/edge)"),
        "{message}"
    );
    // Everything but Programmed and the times is `attache status`'s.
    assert_eq!(
        ancestor["conditions"][0]["message"],
        computed.status.ancestors[0].conditions[0].message.as_str()
    );
    // The peers' policies are never written (none in the example), only ours.
    assert!(patches
        .iter()
        .all(|p| ["RoutePolicy", "ClusterRoutePolicy"].contains(&p.kind.kind)));
}

#[test]
fn a_restart_on_a_settled_cluster_writes_nothing() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    assert!(!patches.is_empty());
    settle(&mut objects, &plan, &patches);
    let (again, patches) = round(&objects, &[], LATER);
    assert_eq!(again.gateways.get(&edge()), Some(&Outcome::Unchanged));
    assert!(patches.is_empty(), "{patches:?}");
}

/// Every status the controller writes survives the API server's pruning
/// unchanged (the CRD declares each field, `lastTransitionTime` included),
/// and a later round carries each condition's time over instead of writing.
#[test]
fn what_is_written_is_what_is_stored_and_a_later_round_writes_nothing() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    assert!(!patches.is_empty());
    for patch in &patches {
        let mut stored = patch.status.clone();
        prune(&mut stored, status_schema(patch.kind.kind).unwrap());
        assert_eq!(stored, patch.status, "{} {}", patch.kind.kind, patch.key);
        let times: Vec<&Value> = patch.status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .chain(
                patch.status["ancestors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|a| a["conditions"].as_array().unwrap()),
            )
            .map(|c| &c["lastTransitionTime"])
            .collect();
        assert!(times.iter().all(|t| *t == NOW), "{times:?}");
    }
    settle(&mut objects, &plan, &patches);
    for later in [LATER, "2026-11-27T00:00:00Z"] {
        let (_, patches) = round(&objects, &[], later);
        assert!(patches.is_empty(), "at {later}: {patches:?}");
    }
}

/// A status stored by a version whose schema pruned `lastTransitionTime`
/// is written once, with the times, and then never again.
#[test]
fn a_status_stored_without_times_is_written_once_then_left_alone() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    settle(&mut objects, &plan, &patches);
    let strip = |v: &mut Value| {
        for c in v["conditions"].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("lastTransitionTime");
        }
    };
    for o in objects.iter_mut().filter(|o| o["kind"] == "RoutePolicy") {
        let status = &mut o["status"];
        strip(status);
        for a in status["ancestors"].as_array_mut().unwrap() {
            strip(a);
        }
    }
    let (plan, patches) = round(&objects, &[], LATER);
    let written = patches.len();
    assert_eq!(
        written,
        objects
            .iter()
            .filter(|o| o["kind"] == "RoutePolicy")
            .count()
    );
    assert_eq!(
        policy_status(&patches, "edge-defaults")["conditions"][0]["lastTransitionTime"],
        LATER
    );
    settle(&mut objects, &plan, &patches);
    let (_, patches) = round(&objects, &[], "2026-11-27T00:00:00Z");
    assert!(patches.is_empty(), "{patches:?}");
}

#[test]
fn an_invalid_policy_is_ignored_as_resolve_ignores_it_and_status_says_why() {
    let mut objects = shop();
    let clean = applied_plugin(&round(&objects, &[], NOW).0);
    objects.push(json!({
        "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
        "metadata": {"name": "broken", "namespace": "infra", "uid": "u", "generation": 3},
        "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}],
                 "defaults": {"timeouts": {"request": "soon"}}}
    }));
    let (plan, patches) = round(&objects, &[], NOW);
    assert_eq!(
        applied_plugin(&plan)["spec"],
        clean["spec"],
        "one bad policy never poisons others"
    );
    let written = policy_status(&patches, "broken");
    assert_eq!(written["conditions"][0]["reason"], "Invalid");
    assert_eq!(written["conditions"][0]["observedGeneration"], 3);
    assert!(
        written["conditions"][0]["message"]
            .as_str()
            .unwrap()
            .contains("timeouts.request"),
        "{written}"
    );
    assert_eq!(written["ancestors"], json!([]));
}

#[test]
fn conflicting_policies_the_loser_is_conflicted() {
    let mut objects = shop();
    for (name, value) in [("a-first", "5s"), ("b-second", "7s")] {
        objects.push(json!({
            "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
            "metadata": {"name": name, "namespace": "shop", "uid": name, "generation": 1,
                         "creationTimestamp": if name == "a-first" {"2026-01-01T00:00:00Z"} else {"2026-02-01T00:00:00Z"}},
            "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "storefront"}],
                     "defaults": {"timeouts": {"backendRequest": value}}}
        }));
    }
    let (_, patches) = round(&objects, &[], NOW);
    let reasons: Vec<(&str, &str)> = ["a-first", "b-second"]
        .iter()
        .map(|n| {
            (
                *n,
                policy_status(&patches, n)["conditions"][0]["reason"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    // Same level, same field, other values: the older wins (GEP-713
    // precedence), the newer is Conflicted and its status names the winner.
    assert_eq!(
        reasons,
        [("a-first", "Accepted"), ("b-second", "Conflicted")]
    );
    let message = policy_status(&patches, "b-second")["ancestors"][0]["conditions"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("a-first"), "{message}");
}

#[test]
fn a_deleted_gateway_is_left_to_garbage_collection_and_its_policies_are_pending() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    settle(&mut objects, &plan, &patches);
    objects.retain(|o| o["kind"] != "Gateway");
    let (plan, patches) = round(&objects, &[], LATER);
    assert!(plan.gateways.is_empty());
    assert!(
        plan.orphans.is_empty(),
        "the ownerReference removes it, not us"
    );
    let guard = policy_status(&patches, "platform-guardrails");
    let programmed = guard["ancestors"][0]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Programmed")
        .unwrap()
        .clone();
    assert_eq!(
        (programmed["status"].as_str(), programmed["reason"].as_str()),
        (Some("False"), Some("Reconciling"))
    );
    assert_eq!(programmed["lastTransitionTime"], LATER);
    // Accepted did not change status: its time is kept.
    assert_eq!(guard["conditions"][0]["lastTransitionTime"], NOW);
}

#[test]
fn a_gateway_that_changes_class_loses_its_wasmplugin() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    settle(&mut objects, &plan, &patches);
    for o in objects.iter_mut().filter(|o| o["kind"] == "Gateway") {
        o["spec"]["gatewayClassName"] = json!("someone-else");
    }
    let (plan, _) = round(&objects, &[], LATER);
    assert!(plan.gateways.is_empty());
    assert_eq!(
        plan.orphans,
        [LivePlugin {
            kind: &WASM_PLUGIN,
            key: ObjectKey {
                namespace: "infra".into(),
                name: "attache-edge".into()
            }
        }]
    );
}

#[test]
fn a_policy_that_moves_targets_changes_the_plugin_and_its_ancestors() {
    let mut objects = shop();
    let (plan, patches) = round(&objects, &[], NOW);
    settle(&mut objects, &plan, &patches);
    let before = applied_plugin(&plan);
    let policy = objects
        .iter_mut()
        .find(|o| o["metadata"]["name"] == "checkout-retries")
        .unwrap();
    assert_eq!(policy["spec"]["targetRefs"][0]["sectionName"], "checkout");
    policy["spec"]["targetRefs"][0]
        .as_object_mut()
        .unwrap()
        .remove("sectionName");
    policy["metadata"]["generation"] = json!(2);
    let (plan, patches) = round(&objects, &[], LATER);
    let after = applied_plugin(&plan);
    assert_ne!(
        before["spec"]["pluginConfig"],
        after["spec"]["pluginConfig"]
    );
    let written = policy_status(&patches, "checkout-retries");
    assert_eq!(
        written["ancestors"][0]["ancestorRef"],
        json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "storefront", "namespace": "shop"})
    );
    // A new ancestor: its conditions are new, so stamped now.
    assert_eq!(
        written["ancestors"][0]["conditions"][0]["lastTransitionTime"],
        LATER
    );
    assert_eq!(written["conditions"][0]["observedGeneration"], 2);
}

#[test]
fn a_missing_crd_the_wasmplugin_keeps_nothing_written_and_peers_are_optional() {
    let objects = shop();
    let (plan, patches) = round(&objects, &[WASM_PLUGIN.kind], NOW);
    match plan.gateways.get(&edge()) {
        Some(Outcome::Keep(why)) => assert!(why.to_string().contains("WasmPlugin CRD"), "{why}"),
        other => panic!("{other:?}"),
    }
    let guard = policy_status(&patches, "platform-guardrails");
    let programmed = &guard["ancestors"][0]["conditions"][2];
    assert_eq!(programmed["status"], "False");
    assert!(programmed["message"]
        .as_str()
        .unwrap()
        .contains("WasmPlugin CRD"));
    // A peer's CRD missing (kgateway not installed) changes nothing.
    let (plan, _) = round(&objects, &["TrafficPolicy", "BackendTrafficPolicy"], NOW);
    assert!(matches!(
        plan.gateways.get(&edge()),
        Some(Outcome::Apply(_))
    ));
}

#[test]
fn namespaces_scope_what_is_served() {
    let objects = shop();
    let snap = snapshot(&objects, &[]);
    let mut cfg = config();
    cfg.namespaces = ["shop".to_string()].into();
    assert!(reconcile(&cfg, &snap).gateways.is_empty());
    cfg.namespaces = ["infra".to_string(), "shop".to_string()].into();
    assert_eq!(reconcile(&cfg, &snap).gateways.len(), 1);
    cfg.controller_name = "example.com/other".into();
    assert!(
        reconcile(&cfg, &snap).gateways.is_empty(),
        "a class of another controller"
    );
}

#[test]
fn at_most_16_ancestors_and_other_controllers_entries_are_kept() {
    let mut objects = shop();
    let refs: Vec<Value> = (0..20)
        .map(|i| json!({"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": format!("r{i}")}))
        .collect();
    objects.push(json!({
        "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
        "metadata": {"name": "wide", "namespace": "shop", "uid": "w", "generation": 1},
        "spec": {"targetRefs": refs, "defaults": {"timeouts": {"request": "3s"}}},
        "status": {"ancestors": [{"ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "x"},
                                  "controllerName": "example.com/other", "conditions": []}]}
    }));
    let (_, patches) = round(&objects, &[], NOW);
    let ancestors = policy_status(&patches, "wide")["ancestors"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(ancestors.len(), MAX_ANCESTORS);
    assert_eq!(ancestors[0]["controllerName"], "example.com/other");
    assert!(ancestors[1..]
        .iter()
        .all(|a| a["controllerName"] == "policy.attache.dev/attache"));
}

/// Two served Gateways (edge, internal) and one of another class (foreign),
/// routes on one or both, and policies whose targetRefs reach one, both or
/// none of the served ones.
const PER_ANCESTOR: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: attache}
spec: {controllerName: istio.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: other}
spec: {controllerName: example.com/other}
---
apiVersion: v1
kind: Namespace
metadata: {name: infra}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: infra}
spec:
  gatewayClassName: attache
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: internal, namespace: infra}
spec:
  gatewayClassName: attache
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: foreign, namespace: infra}
spec:
  gatewayClassName: other
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both, namespace: infra}
spec:
  parentRefs: [{name: edge}, {name: internal}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: only-edge, namespace: infra}
spec:
  parentRefs: [{name: edge}]
  hostnames: [edge.example.com]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: on-foreign, namespace: infra}
spec:
  parentRefs: [{name: foreign}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: two-gateways, namespace: infra}
spec:
  targetRefs:
    - {group: gateway.networking.k8s.io, kind: Gateway, name: edge}
    - {group: gateway.networking.k8s.io, kind: Gateway, name: internal}
  defaults: {timeouts: {request: 5s}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: route-on-both, namespace: infra}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: both}]
  defaults: {requestHeaderModifier: {set: [{name: x-a, value: "1"}]}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: route-on-edge, namespace: infra}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: only-edge}]
  defaults: {requestHeaderModifier: {set: [{name: x-b, value: "1"}]}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: listener, namespace: infra}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: internal, sectionName: http}]
  defaults: {requestHeaderModifier: {set: [{name: x-c, value: "1"}]}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: RoutePolicy
metadata: {name: foreign-gateway, namespace: infra}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: foreign}]
  defaults: {requestHeaderModifier: {set: [{name: x-d, value: "1"}]}}
---
apiVersion: policy.attache.dev/v1alpha1
kind: ClusterRoutePolicy
metadata: {name: class-wide}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GatewayClass, name: attache}]
  defaults: {requestHeaderModifier: {set: [{name: x-e, value: "1"}]}}
"#;

fn per_ancestor_objects() -> Vec<Value> {
    let mut docs = Vec::new();
    attache_input::parse_text("per-ancestor.yaml", PER_ANCESTOR, &mut docs).unwrap();
    docs.into_iter()
        .map(|d| {
            let mut v = d.value;
            let name = v["metadata"]["name"].as_str().unwrap().to_string();
            v["metadata"]["uid"] = json!(format!("uid-{name}"));
            v["metadata"]["resourceVersion"] = json!("1");
            v["metadata"]["generation"] = json!(1);
            v
        })
        .collect()
}

#[test]
fn programmed_is_computed_per_ancestor_from_the_gateways_its_target_reaches() {
    let objects = per_ancestor_objects();
    let snap = snapshot(&objects, &[]);
    let plan = reconcile(&config(), &snap);
    let gw = |name: &str| ObjectKey {
        namespace: "infra".into(),
        name: name.into(),
    };
    assert_eq!(
        plan.gateways.keys().cloned().collect::<Vec<_>>(),
        [gw("edge"), gw("internal")],
        "foreign is another controller's"
    );
    let reach = status::reach(&plan.inputs, plan.gateways.keys().cloned());
    // (policy, ancestor = targetRef index, the served Gateways it reaches).
    let reaches: &[(&str, usize, &[&str])] = &[
        ("two-gateways", 0, &["edge"]),
        ("two-gateways", 1, &["internal"]),
        ("route-on-both", 0, &["edge", "internal"]),
        ("route-on-edge", 0, &["edge"]),
        ("listener", 0, &["internal"]),
        ("foreign-gateway", 0, &[]),
        ("class-wide", 0, &["edge", "internal"]),
    ];
    // Each row: which served Gateways failed this round.
    let cases: &[&[&str]] = &[&[], &["internal"], &["edge"], &["edge", "internal"]];
    for failed in cases {
        let applied: Applied = plan
            .gateways
            .keys()
            .map(|k| {
                let outcome = if failed.contains(&k.name.as_str()) {
                    Err(
                        Arc::new(std::io::Error::other(format!("Gateway {k}: boom")))
                            as status::NotApplied,
                    )
                } else {
                    Ok(())
                };
                (k.clone(), outcome)
            })
            .collect();
        let patches = status::patches(&plan.inputs, &snap, &reach, &applied, NOW);
        for (policy, ancestor, gateways) in reaches {
            let entry = &policy_status(&patches, policy)["ancestors"][*ancestor];
            let conditions = entry["conditions"].as_array().unwrap();
            let accepted = conditions.iter().find(|c| c["type"] == "Accepted").unwrap();
            assert_eq!(accepted["status"], "True", "{policy}[{ancestor}]: {entry}");
            let programmed = conditions
                .iter()
                .find(|c| c["type"] == "Programmed")
                .unwrap_or_else(|| panic!("{policy}[{ancestor}] has no Programmed: {entry}"));
            let message = programmed["message"].as_str().unwrap();
            let failing: Vec<&&str> = gateways.iter().filter(|g| failed.contains(g)).collect();
            let why = format!("{policy}[{ancestor}] with {failed:?} failed: {programmed}");
            if gateways.is_empty() {
                assert_eq!(programmed["status"], "False", "{why}");
                assert!(
                    message.contains("no Gateway served by this controller"),
                    "{why}"
                );
            } else if failing.is_empty() {
                assert_eq!(programmed["status"], "True", "{why}");
                for g in gateways.iter() {
                    assert!(message.contains(&format!("infra/{g}")), "{why}");
                }
            } else {
                assert_eq!(programmed["status"], "False", "{why}");
                for g in failing {
                    assert!(
                        message.contains(&format!("Gateway infra/{g}: boom")),
                        "{why}"
                    );
                }
                // A Gateway this ancestor does not reach is not named.
                for g in failed.iter().filter(|g| !gateways.contains(g)) {
                    assert!(!message.contains(&format!("infra/{g}")), "{why}");
                }
            }
        }
    }
}

/// Every Gateway in scope is served or has its reason (docs/semantics.md
/// section 11): another controller's class, a missing class, a Gateway
/// its own controller refused. examples/shop under the default
/// `--controller-name` (Istio's) is the "serves nothing" case.
#[test]
fn every_gateway_not_served_has_its_reason() {
    use attache_controller::serving::NotServed;
    let mut objects = shop();
    let gateway = |name: &str, class: &str, status: Value| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": name, "namespace": "infra", "uid": format!("uid-{name}"), "resourceVersion": "1"},
               "spec": {"gatewayClassName": class, "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
               "status": status})
    };
    objects.push(
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": "kgateway", "uid": "uid-kgateway", "resourceVersion": "1"},
        "spec": {"controllerName": "kgateway.dev/kgateway"}}),
    );
    objects.push(gateway("theirs", "kgateway", Value::Null));
    objects.push(gateway("classless", "nowhere", Value::Null));
    objects.push(gateway(
        "refused",
        "attache",
        json!({"conditions": [{"type": "Accepted", "status": "False", "reason": "InvalidParameters", "message": "bad params"}]}),
    ));
    objects.push(gateway(
        "welcome",
        "attache",
        json!({"conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""}]}),
    ));
    let key = |name: &str| ObjectKey {
        namespace: "infra".into(),
        name: name.into(),
    };
    let (plan, _) = round(&objects, &[], NOW);
    let served: Vec<&ObjectKey> = plan.gateways.keys().collect();
    assert_eq!(served, [&edge(), &key("welcome")]);
    let reasons: Vec<(&str, &str)> = plan
        .not_served
        .iter()
        .map(|(k, why)| (k.name.as_str(), why.reason()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("classless", "GatewayClassMissing"),
            ("refused", "NotAccepted"),
            ("theirs", "OtherController"),
        ]
    );
    assert_eq!(
        plan.not_served[&key("theirs")].to_string(),
        "not served by attache: GatewayClass kgateway has controllerName kgateway.dev/kgateway, \
         this controller serves istio.io/gateway-controller (hint: start it with --controller-name \
         kgateway.dev/kgateway to serve this class)"
    );
    assert!(matches!(
        &plan.not_served[&key("refused")],
        NotServed::NotAccepted { reason, message } if reason == "InvalidParameters" && message == "bad params"
    ));

    // Another controller name serves nothing of the example, and says
    // which controllerNames the classes do name.
    let snap = snapshot(&shop(), &[]);
    let other = Config {
        controller_name: "example.com/other".into(),
        ..Config::default()
    };
    let plan = reconcile(&other, &snap);
    assert!(plan.gateways.is_empty());
    assert_eq!(plan.not_served[&edge()].reason(), "OtherController");
    assert_eq!(
        attache_controller::serving::serving_nothing("example.com/other", &snap),
        "serving no Gateway: no GatewayClass names controllerName example.com/other; \
         the cluster's GatewayClasses name [istio.io/gateway-controller] (hint: --controller-name)"
    );
}

/// A round folds each Gateway once for status and reach together
/// (`status::round_patches`); the writes are those of `reach` + `patches`,
/// which fold it twice, on every scenario of this file that has several
/// Gateways, failures and foreign entries.
#[test]
fn one_fold_for_status_and_reach_writes_what_two_did() {
    let objects = per_ancestor_objects();
    let snap = snapshot(&objects, &[]);
    let plan = reconcile(&config(), &snap);
    for failing in [vec![], vec!["edge"], vec!["edge", "internal"]] {
        let applied: Applied = plan
            .gateways
            .keys()
            .map(|k| {
                let r = if failing.contains(&k.name.as_str()) {
                    Err(Arc::new(std::io::Error::other("boom")) as status::NotApplied)
                } else {
                    Ok(())
                };
                (k.clone(), r)
            })
            .collect();
        let reach = status::reach(&plan.inputs, plan.gateways.keys().cloned());
        let twice = status::patches(&plan.inputs, &snap, &reach, &applied, NOW);
        let once = status::round_patches(&plan.inputs, &snap, &applied, NOW);
        assert!(!once.is_empty());
        assert_eq!(once, twice, "with {failing:?} failing");
    }
}
