//! Discovery documents (kubernetes.io/docs/concepts/overview/kubernetes-api/,
//! "Discovery API"; the unaggregated form, which kube-rs's `Discovery` and
//! kubectl read when the aggregated one is not offered): `/api`
//! (APIVersions), `/apis` (APIGroupList), `/apis/{group}` (APIGroup) and
//! `/api/v1`, `/apis/{group}/{version}` (APIResourceList), from the kinds
//! served now.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::kinds::Kinds;

const VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

pub fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-attache-standin",
        "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none", "compiler": "none", "platform": "linux/amd64",
    })
}

pub fn core_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    })
}

/// Each non-core group with its versions, preferred first.
fn groups(kinds: &Kinds) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in kinds.all().iter().filter(|s| !s.group.is_empty()) {
        let versions = out.entry(spec.group.clone()).or_default();
        for v in &spec.versions {
            if !versions.contains(&v.name) {
                versions.push(v.name.clone());
            }
        }
    }
    out
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": name,
        "versions": list.clone(),
        "preferredVersion": list.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn group_list(kinds: &Kinds) -> Value {
    let groups: Vec<Value> = groups(kinds)
        .iter()
        .map(|(name, versions)| group_json(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(kinds: &Kinds, name: &str) -> Option<Value> {
    groups(kinds).get(name).map(|v| group_json(name, v))
}

/// The APIResourceList of one group version; `None` when nothing is served
/// there.
pub fn resources(kinds: &Kinds, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for spec in kinds
        .all()
        .iter()
        .filter(|s| s.group == group && s.serves(version))
    {
        resources.push(json!({
            "name": spec.plural, "singularName": spec.singular, "namespaced": spec.namespaced,
            "kind": spec.kind, "verbs": VERBS, "shortNames": spec.short_names,
        }));
        if spec.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", spec.plural), "singularName": "",
                "namespaced": spec.namespaced, "kind": spec.kind, "verbs": ["get", "patch", "update"],
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": group_version, "resources": resources,
    }))
}
