//! The incremental reconcile equals a round from scratch (issue 30, item 1):
//! random sequences of edits (add, change and delete of every kind the
//! controller reads but XListenerSet, read as ListenerSet is; delegation,
//! selectors and the peers' policies included); after each step
//! the plan the controller's memo gives is the one a fresh reconcile gives,
//! and so are the status writes. The memo's documents are parsed through
//! its parse cache (`attache_core::parse_cached`), the fresh round's by
//! `parse_each`: a stale parsed piece would show as a different plan. The
//! status memo's settled policies (their merge skipped while the digest
//! holds) are checked alike against `round_patches`, which has no memo. The controller's own writes coming back
//! (its WasmPlugins, its policy status) make no Gateway resolve again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::collections::{BTreeMap, BTreeSet};

use attache_controller::kinds::{named, WatchedKind};
use attache_controller::reconcile::{reconcile, reconcile_with, Config, Memo, Outcome, Plan};
use attache_controller::snapshot::{ReadCache, Snapshot};
use attache_controller::status::{self, Applied, StatusMemo, StatusPatch};
use attache_core::topology::ObjectKey;
use attache_render::wasmplugin::ConfigForm;
use proptest::prelude::*;
use serde_json::{json, Value};

const NOW: &str = "2026-11-26T07:00:00Z";
const GW: &str = "gateway.networking.k8s.io";

/// The objects a step may add, change or delete: one slot each, its
/// content chosen by a variant number.
const SLOTS: usize = 22;

fn meta(name: &str, namespace: Option<&str>) -> Value {
    match namespace {
        Some(ns) => json!({"name": name, "namespace": ns}),
        None => json!({"name": name}),
    }
}

/// The namespace of route `i` (even: `a`, odd: `b`).
fn route_ns(i: usize) -> &'static str {
    ["a", "b"][i % 2]
}

/// Slot `slot`'s object in variant `v`: `v % 100` chooses its shape (what
/// it names, how it attaches), `v / 100` a detail (a path, a timeout), so
/// that a tweak changes an object and keeps where it attaches.
fn object(slot: usize, v: usize) -> Value {
    let t = v / 100;
    let v = v % 100;
    match slot {
        0 => {
            json!({"apiVersion": format!("{GW}/v1"), "kind": "GatewayClass", "metadata": meta("istio", None),
            "spec": {"controllerName": if v % 4 == 3 { "example.com/other" } else { "istio.io/gateway-controller" },
                "description": format!("tweak {t}")}})
        }
        1 | 2 => {
            let name = ["a", "b"][slot - 1];
            let mut labels = json!({"team": (["x", "y"][v % 2])});
            if v % 3 != 0 {
                labels["listeners"] = json!("true");
            }
            labels["tweak"] = json!(t.to_string());
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        }
        3..=5 => gateway(slot - 3, v, t),
        6 => {
            json!({"apiVersion": format!("{GW}/v1"), "kind": "ListenerSet", "metadata": meta("ls", Some("b")),
            "spec": {"parentRef": {"name": (["g0", "g1"][v % 2]), "namespace": (["a", "b"][v % 2])},
                "listeners": [{"name": "extra", "port": 80, "protocol": "HTTP",
                    "hostname": format!("ls{}.example.com", t % 3),
                    "allowedRoutes": {"namespaces": {"from": (["Same", "All"][v % 2])}}}]}})
        }
        7..=12 => route(slot - 7, v, t),
        13..=17 => policy(slot - 13, v, t),
        18 => {
            let target = if v % 2 == 0 {
                json!({"group": GW, "kind": "GatewayClass", "name": "istio"})
            } else {
                json!({"group": "", "kind": "Namespace", "name": "a"})
            };
            json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "ClusterRoutePolicy", "metadata": meta("c0", None),
                "spec": {"targetRefs": [target], "overrides": {"retry": {"attempts": 1 + t % 3}}}})
        }
        19 => {
            json!({"apiVersion": "gateway.kgateway.dev/v1alpha1", "kind": "TrafficPolicy", "metadata": meta("t0", Some(["a", "b"][v % 2])),
            "spec": {"targetSelectors": [{"group": GW, "kind": "HTTPRoute", "matchLabels": {"tier": "checkout"}}],
                "timeouts": {"request": format!("{}s", 1 + t % 5)}}})
        }
        // A GRPCRoute of the same name as HTTPRoute r0 (the kinds are kept
        // apart), and an Envoy Gateway policy on it, on a Gateway or on r2.
        20 => {
            let parents = match v % 3 {
                0 => json!([{"name": "g0", "namespace": "a"}]),
                1 => json!([{"kind": "ListenerSet", "name": "ls", "namespace": "b"}]),
                _ => json!([{"name": "g1", "namespace": "b"}]),
            };
            json!({"apiVersion": format!("{GW}/v1"), "kind": "GRPCRoute", "metadata": meta("r0", Some("a")),
                "spec": {"parentRefs": parents, "rules": [{"name": "call",
                    "matches": [{"method": {"service": "shop.v1.Cart", "method": format!("M{t}")}}],
                    "backendRefs": [{"name": "svc", "port": 80}]}]}})
        }
        _ => {
            let target = match v % 3 {
                0 => json!({"group": GW, "kind": "GRPCRoute", "name": "r0"}),
                1 => json!({"group": GW, "kind": "Gateway", "name": "g0"}),
                _ => json!({"group": GW, "kind": "HTTPRoute", "name": "r2"}),
            };
            json!({"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "BackendTrafficPolicy", "metadata": meta("bt", Some("a")),
                "spec": {"targetRefs": [target], "timeout": {"http": {"requestTimeout": format!("{}s", 1 + t % 5)}}}})
        }
    }
}

fn gateway(i: usize, v: usize, t: usize) -> Value {
    let (name, ns) = [("g0", "a"), ("g1", "b"), ("g2", "a")][i];
    let allowed = match v % 3 {
        0 => json!({"namespaces": {"from": "All"}}),
        1 => json!({"namespaces": {"from": "Same"}}),
        _ => {
            json!({"namespaces": {"from": "Selector", "selector": {"matchLabels": {"team": "x"}}}})
        }
    };
    // g2's class is missing in some variants: a Gateway not served.
    let class = if i == 2 && v % 2 == 1 {
        "missing"
    } else {
        "istio"
    };
    json!({"apiVersion": format!("{GW}/v1"), "kind": "Gateway", "metadata": meta(name, Some(ns)),
        "spec": {"gatewayClassName": class,
            "allowedListeners": {"namespaces": {"from": (["All", "Selector"][v % 2]), "selector": {"matchLabels": {"listeners": "true"}}}},
            "listeners": [{"name": "http", "port": 80 + t % 2, "protocol": "HTTP", "allowedRoutes": allowed}]}})
}

/// Route `i`: `r0` (in `a`) delegates to `r2` and `r4` in some variants;
/// the others attach to a Gateway, the ListenerSet, both Gateways, or (as
/// delegation children) to `r0`.
fn route(i: usize, v: usize, t: usize) -> Value {
    let ns = route_ns(i);
    let parents = match v % 5 {
        0 => json!([{"name": "g0", "namespace": "a"}]),
        1 => json!([{"name": "g1", "namespace": "b"}]),
        2 => json!([{"kind": "ListenerSet", "name": "ls", "namespace": "b"}]),
        3 if ns == "a" => json!([{"group": GW, "kind": "HTTPRoute", "name": "r0"}]),
        _ => json!([{"name": "g0", "namespace": "a"}, {"name": "g2", "namespace": "a"}]),
    };
    let delegate = i == 0 && v % 2 == 0;
    let second = if delegate {
        json!([{"group": GW, "kind": "HTTPRoute", "name": "r2"}, {"group": GW, "kind": "HTTPRoute", "name": "r4"}])
    } else {
        json!([{"name": "svc", "port": 80}])
    };
    let labels = if v % 3 == 0 {
        json!({"tier": "checkout"})
    } else {
        json!({})
    };
    json!({"apiVersion": format!("{GW}/v1"), "kind": "HTTPRoute",
        "metadata": {"name": format!("r{i}"), "namespace": ns, "labels": labels},
        "spec": {"parentRefs": parents, "hostnames": [format!("h{}.example.com", v % 3)],
            "rules": [
                {"name": "main", "matches": [{"path": {"type": "PathPrefix", "value": format!("/r{i}/m{t}")}}],
                    "backendRefs": [{"name": "svc", "port": 80}]},
                {"matches": [{"path": {"type": "PathPrefix", "value": format!("/r{i}/d")}}], "backendRefs": second}]}})
}

/// A timeout, or in one detail of five one no duration can be: the
/// policy is then Invalid (ignored, and its status says why).
fn request_timeout(t: usize) -> String {
    if t % 5 == 4 {
        "soon".to_string()
    } else {
        format!("{}ms", 100 + t)
    }
}

/// Policy `i` in namespace `a` or `b`: on a Gateway, a route, a rule, its
/// Namespace or the ListenerSet; sometimes with another controller's
/// ancestor in its status (the 16-ancestor rule counts it).
fn policy(i: usize, v: usize, t: usize) -> Value {
    let ns = ["a", "b"][(i + v) % 2];
    let target = match v % 6 {
        0 => json!({"group": GW, "kind": "Gateway", "name": if ns == "a" { "g0" } else { "g1" }}),
        1 => {
            json!({"group": GW, "kind": "HTTPRoute", "name": format!("r{}", if ns == "a" { i % 3 * 2 } else { i % 3 * 2 + 1 })})
        }
        2 => {
            json!({"group": GW, "kind": "HTTPRoute", "name": format!("r{}", if ns == "a" { 0 } else { 1 }), "sectionName": "main"})
        }
        3 => json!({"group": "", "kind": "Namespace", "name": ns}),
        4 => json!({"group": GW, "kind": "ListenerSet", "name": "ls"}),
        _ => json!({"group": GW, "kind": "HTTPRoute", "name": "r2"}),
    };
    let stanza = if v % 4 == 1 { "overrides" } else { "defaults" };
    let mut object = json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
        "metadata": meta(&format!("p{i}"), Some(ns)),
        "spec": {"targetRefs": [target], stanza: {"timeouts": {"request": request_timeout(t)}}}});
    if v % 7 == 0 {
        object["status"] = json!({"ancestors": [{"ancestorRef": {"group": GW, "kind": "Gateway", "name": "other"},
            "controllerName": "example.com/other", "conditions": []}]});
    }
    object
}

/// The cluster as the API server holds it: objects by slot, with the uid
/// and resourceVersion it gives them, and our WasmPlugins.
#[derive(Default)]
struct Cluster {
    objects: BTreeMap<usize, Value>,
    plugins: BTreeMap<ObjectKey, Value>,
    version: u64,
    uids: u64,
}

impl Cluster {
    /// Every slot filled, each in its variant.
    fn full(variants: &[usize]) -> Self {
        let mut cluster = Cluster::default();
        for (slot, v) in variants.iter().enumerate() {
            cluster.put(slot, *v);
        }
        cluster
    }

    /// The variant `slot` was last put in.
    fn variant(&self, slot: usize) -> Option<usize> {
        self.objects.get(&slot).map(|o| {
            o["metadata"]["annotations"]["test/variant"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
    }

    fn next_version(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// Adds or changes the object in `slot` (keeping its uid and our
    /// status, as an update does).
    fn put(&mut self, slot: usize, v: usize) {
        let mut object = object(slot, v);
        object["metadata"]["annotations"] = json!({"test/variant": v.to_string()});
        let rv = self.next_version();
        let (uid, status) = match self.objects.get(&slot) {
            // Same name: an update. A slot whose name changed with the
            // variant is a new object (a delete and a create).
            Some(old) if old["metadata"]["namespace"] == object["metadata"]["namespace"] => {
                (old["metadata"]["uid"].clone(), old.get("status").cloned())
            }
            _ => {
                self.uids += 1;
                (json!(format!("uid-{}", self.uids)), None)
            }
        };
        object["metadata"]["uid"] = uid;
        object["metadata"]["resourceVersion"] = json!(rv);
        object["metadata"]["generation"] = json!(self.version);
        if let (Some(status), None) = (status, object.get("status")) {
            object["status"] = status;
        }
        self.objects.insert(slot, object);
    }

    fn rows(&self) -> Vec<(&'static WatchedKind, &Value)> {
        let kind =
            |o: &Value| -> &'static WatchedKind { named(o["kind"].as_str().unwrap()).unwrap() };
        self.objects
            .values()
            .chain(self.plugins.values())
            .map(|o| (kind(o), o))
            .collect()
    }

    /// What the controller's writes leave: each applied WasmPlugin live,
    /// each status written (a new resourceVersion, as the API server gives).
    fn write(&mut self, plan: &Plan, patches: &[StatusPatch]) {
        for (key, outcome) in &plan.gateways {
            if let Outcome::Apply(plugin) = outcome {
                let mut live = plugin.clone();
                live["metadata"]["resourceVersion"] = json!(self.next_version());
                self.plugins
                    .insert(attache_controller::reconcile::plugin_key(key), live);
            }
        }
        for patch in patches {
            let rv = self.next_version();
            let object = self.objects.values_mut().find(|o| {
                o["kind"] == patch.kind.kind
                    && o["metadata"]["name"] == patch.key.name.as_str()
                    && o["metadata"]["namespace"].as_str().unwrap_or_default()
                        == patch.key.namespace
            });
            let object = object.unwrap();
            object["status"] = patch.status.clone();
            object["metadata"]["resourceVersion"] = json!(rv);
        }
    }
}

fn applied(plan: &Plan) -> Applied {
    plan.gateways
        .iter()
        .map(|(k, o)| {
            let result = match o {
                Outcome::Keep(why) => Err(std::sync::Arc::new(why.clone()) as status::NotApplied),
                _ => Ok(()),
            };
            (k.clone(), result)
        })
        .collect()
}

/// The same plan: every field a round acts on.
fn assert_same_plan(incremental: &Plan, scratch: &Plan) {
    assert_eq!(incremental.gateways, scratch.gateways);
    assert_eq!(incremental.not_served, scratch.not_served);
    assert_eq!(incremental.orphans, scratch.orphans);
    assert_eq!(incremental.diagnostics, scratch.diagnostics);
}

/// The controller's state between rounds.
#[derive(Default)]
struct Controller {
    config: Config,
    cache: ReadCache,
    memo: Memo,
    statuses: StatusMemo,
}

impl Controller {
    /// One round: the plan and status writes from the memo, checked against
    /// a round from scratch over the same objects.
    fn round(&mut self, cluster: &Cluster) -> (Plan, Vec<StatusPatch>) {
        let config = &self.config;
        let snapshot = Snapshot::read(cluster.rows(), BTreeSet::new(), &mut self.cache);
        let plan = reconcile_with(config, &snapshot, &mut self.memo);
        let fresh = Snapshot::from_objects(cluster.rows(), BTreeSet::new());
        let scratch = reconcile(config, &fresh);
        assert_same_plan(&plan, &scratch);
        let patches =
            status::round_patches_with(&plan, &snapshot, &applied(&plan), NOW, &mut self.statuses);
        let from_scratch = status::round_patches(&scratch.inputs, &fresh, &applied(&scratch), NOW);
        assert_eq!(patches, from_scratch);
        (plan, patches)
    }
}

#[derive(Debug, Clone)]
enum Edit {
    /// Add the object, or change its shape.
    Put(usize, usize),
    /// Change a detail, keeping where it attaches.
    Tweak(usize),
    Delete(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (0..SLOTS, 0usize..42).prop_map(|(slot, v)| Edit::Put(slot, v)),
        3 => (0..SLOTS).prop_map(Edit::Tweak),
        1 => (0..SLOTS).prop_map(Edit::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_step_equals_a_round_from_scratch(
        start in prop::collection::vec(0usize..42, SLOTS),
        edits in prop::collection::vec(edit(), 1..24),
        namespaced in any::<bool>(),
        compressed in any::<bool>(),
    ) {
        let mut cluster = Cluster::full(&start);
        let mut controller = Controller::default();
        if compressed {
            // Every document sealed, as a large Gateway's is: the memo's
            // sealed pieces must follow each edit.
            controller.config.plugin.config_form = ConfigForm::Compressed;
        }
        if namespaced {
            // A namespace-scoped install (`--namespace a`).
            controller.config.namespaces = BTreeSet::from(["a".to_string()]);
        }
        let (plan, patches) = controller.round(&cluster);
        cluster.write(&plan, &patches);
        for edit in edits {
            match edit {
                Edit::Put(slot, v) => cluster.put(slot, v),
                Edit::Tweak(slot) => {
                    let v = cluster.variant(slot).unwrap_or(0);
                    cluster.put(slot, v + 100);
                }
                Edit::Delete(slot) => {
                    cluster.objects.remove(&slot);
                }
            }
            let (plan, patches) = controller.round(&cluster);
            cluster.write(&plan, &patches);
            // Our own writes coming back resolve nothing again.
            let (again, _) = controller.round(&cluster);
            prop_assert!(again.resolved.is_empty(), "resolved again: {:?}", again.resolved);
        }
    }
}

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// Issue 30, "Many Gateways": with 100 Gateways (of 10 routes each, one
/// policy per route; 100 routes each make the same point ten times slower
/// in a debug build), an edit of one policy resolves its Gateway only, and
/// writes that Gateway's WasmPlugin and that policy's status only.
#[test]
fn an_edit_under_one_of_a_hundred_gateways_resolves_that_gateway_only() {
    let mut cluster = Cluster::default();
    let class = object(0, 0);
    cluster.objects.insert(0, class);
    let mut slot = 1;
    for g in 0..100 {
        let ns = format!("ns{g}");
        let mut objects = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": format!("{GW}/v1"), "kind": "Gateway", "metadata": meta("gw", Some(&ns)),
                "spec": {"gatewayClassName": "istio", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        ];
        for r in 0..10 {
            objects.push(json!({"apiVersion": format!("{GW}/v1"), "kind": "HTTPRoute", "metadata": meta(&format!("r{r}"), Some(&ns)),
                "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": format!("/r{r}")}}],
                    "backendRefs": [{"name": "svc", "port": 80}]}]}}));
            objects.push(json!({"apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy", "metadata": meta(&format!("p{r}"), Some(&ns)),
                "spec": {"targetRefs": [{"group": GW, "kind": "HTTPRoute", "name": format!("r{r}")}],
                    "defaults": {"timeouts": {"request": format!("{}ms", 1000 + r)}}}}));
        }
        for mut object in objects {
            object["metadata"]["uid"] = json!(format!("uid-{slot}"));
            object["metadata"]["resourceVersion"] = json!("1");
            cluster.objects.insert(slot, object);
            slot += 1;
        }
    }
    let mut controller = Controller::default();
    let (plan, patches) = controller.round(&cluster);
    assert_eq!(plan.resolved.len(), 100);
    cluster.write(&plan, &patches);
    let (plan, _) = controller.round(&cluster);
    assert!(plan.resolved.is_empty(), "{:?}", plan.resolved);

    let (slot, mut policy) = cluster
        .objects
        .iter()
        .find(|(_, o)| {
            o["kind"] == "RoutePolicy"
                && o["metadata"]["namespace"] == "ns42"
                && o["metadata"]["name"] == "p7"
        })
        .map(|(s, o)| (*s, o.clone()))
        .unwrap();
    policy["spec"]["defaults"]["timeouts"]["request"] = json!("3s");
    policy["metadata"]["resourceVersion"] = json!("2");
    policy["metadata"]["generation"] = json!(2);
    cluster.objects.insert(slot, policy);
    let (plan, patches) = controller.round(&cluster);
    assert_eq!(plan.resolved, BTreeSet::from([key("ns42", "gw")]));
    let applies: Vec<&ObjectKey> = plan
        .gateways
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Apply(_)))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(applies, [&key("ns42", "gw")]);
    let written: Vec<String> = patches.iter().map(|p| p.key.to_string()).collect();
    assert_eq!(written, ["ns42/p7"]);
}
