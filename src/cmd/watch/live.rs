//! What Envoy has when `attache watch` starts: read back from the files a
//! previous watch (or `render xds`) left, so that the first generation is
//! ordered against them like any other (a route removed while watch was
//! stopped still goes before its cluster and its policy entry). A file that
//! is missing or unreadable counts as empty: it is written in full.

use std::path::Path;

use attache_contract::DataPlaneDocument;
use attache_render::xds::{XdsLayout, XdsState};
use serde_json::Value;

pub fn read_live(layout: Option<&XdsLayout>, ecds: Option<&Path>) -> XdsState {
    let mut has = XdsState::default();
    if let Some(document) = ecds.and_then(read_ecds_document) {
        has.document = document;
    }
    let Some(layout) = layout else {
        return has;
    };
    has.clusters = resources(&layout.cds_file());
    has.listeners = resources(&layout.lds_file());
    let names: Vec<String> = has
        .listeners
        .values()
        .flat_map(route_config_names)
        .collect();
    for name in names {
        // A name that is no safe file name (an LDS file written by someone
        // else) is not followed: its routes count as unknown.
        let Ok(path) = layout.rds_file(&name) else {
            continue;
        };
        if let Some(config) = resources(&path).remove(&name) {
            has.route_configs.insert(name, config);
        }
    }
    has
}

/// The route configurations a listener's filter chains read through RDS
/// (one for an HTTP port, one per HTTPS listener).
fn route_config_names(listener: &Value) -> Vec<String> {
    listener["filter_chains"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|chain| chain["filters"].as_array().into_iter().flatten())
        .filter_map(|f| f["typed_config"]["rds"]["route_config_name"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The resources of a `DiscoveryResponse` file, by name, without `@type`
/// (as the renderer holds them).
fn resources(path: &str) -> std::collections::BTreeMap<String, Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Default::default();
    };
    let Ok(response) = serde_json::from_str::<Value>(&text) else {
        return Default::default();
    };
    let mut by_name = std::collections::BTreeMap::new();
    for resource in response["resources"].as_array().into_iter().flatten() {
        let mut resource = resource.clone();
        if let (Some(name), Some(fields)) = (
            resource["name"].as_str().map(str::to_owned),
            resource.as_object_mut(),
        ) {
            fields.remove("@type");
            by_name.insert(name, resource);
        }
    }
    by_name
}

/// The schema-1 document inside an ECDS file (YAML or JSON).
fn read_ecds_document(path: &Path) -> Option<attache_contract::Document> {
    let text = std::fs::read_to_string(path).ok()?;
    let ecds: Value = serde_yaml_ng::from_str(&text).ok()?;
    let carried =
        ecds["resources"][0]["typed_config"]["config"]["configuration"]["value"].as_str()?;
    serde_json::from_str::<DataPlaneDocument>(carried)
        .ok()?
        .decode()
        .ok()
}
