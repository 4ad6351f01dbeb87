//! Each policy's part in a Gateway's document, as the status memo gives it
//! to "Programmed means served" (docs/status.md, "Which policies go
//! Pending"), over examples/shop: an edit changes the edited policy's part
//! only, even where another policy sets other fields on the same entries;
//! an edit that changes what another policy wins changes its part too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail by panicking

use std::collections::{BTreeSet, HashMap};

use attache_controller::kinds::{named, WatchedKind};
use attache_controller::reconcile::{reconcile, Config};
use attache_controller::served::policy_key;
use attache_controller::snapshot::Snapshot;
use attache_controller::status::StatusMemo;
use attache_core::topology::ObjectKey;
use serde_json::{json, Value};

mod common;
use common::shop;

/// Each policy's part in infra/edge's document, by policy name.
fn parts(objects: &[Value]) -> HashMap<String, u64> {
    let rows = objects.iter().map(|v| {
        let kind: &'static WatchedKind = named(v["kind"].as_str().unwrap()).unwrap();
        (kind, v)
    });
    let snapshot = Snapshot::from_objects(rows, BTreeSet::new());
    let plan = reconcile(&Config::default(), &snapshot);
    let mut memo = StatusMemo::default();
    memo.refresh(&plan);
    let edge = ObjectKey {
        namespace: "infra".into(),
        name: "edge".into(),
    };
    let parts = memo.contributions(&edge, &plan).unwrap();
    plan.inputs
        .policies
        .iter()
        .filter_map(|p| {
            let key = policy_key(&(p.kind, p.meta.namespace.clone(), p.meta.name.clone()));
            Some((p.meta.name.clone(), *parts.get(&key)?))
        })
        .collect()
}

/// The policies whose part differs (or that come or go).
fn changed(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> BTreeSet<String> {
    let names = before.keys().chain(after.keys());
    names
        .filter(|n| before.get(*n) != after.get(*n))
        .cloned()
        .collect()
}

fn edited(objects: &[Value], name: &str, edit: impl FnOnce(&mut Value)) -> Vec<Value> {
    let mut objects = objects.to_vec();
    let policy = objects
        .iter_mut()
        .find(|o| o["kind"] == "RoutePolicy" && o["metadata"]["name"] == name)
        .unwrap();
    edit(&mut policy["spec"]);
    objects
}

#[test]
fn an_edit_changes_the_edited_policys_part_only() {
    let shop = shop();
    let before = parts(&shop);
    assert!(before.len() > 5, "{before:?}");
    assert!(before.contains_key("checkout-retries"));
    // storefront (the route) and checkout-retries (its checkout rule)
    // share entries; only storefront's timeout changes.
    let after = parts(&edited(&shop, "storefront", |spec| {
        spec["defaults"]["timeouts"]["request"] = json!("7s");
    }));
    assert_eq!(
        changed(&before, &after),
        BTreeSet::from(["storefront".into()])
    );
}

#[test]
fn an_edit_that_changes_what_another_wins_changes_both_parts() {
    let shop = shop();
    let before = parts(&shop);
    // The checkout rule now sets the header storefront sets on the route:
    // the rule's value wins there, and storefront loses a field.
    let after = parts(&edited(&shop, "checkout-retries", |spec| {
        spec["defaults"]["requestHeaderModifier"] =
            json!({"set": [{"name": "x-shop-tier", "value": "checkout"}]});
    }));
    let both = BTreeSet::from(["checkout-retries".into(), "storefront".into()]);
    assert_eq!(changed(&before, &after), both);
}
