//! Envoy's own `--mode validate` on what the generator renders, and the
//! xDS files put inline for it (validate mode does not read xDS files).

use std::path::Path;
use std::process::Command;

pub fn validate(envoy: &Path, bootstrap: &Path) {
    let output = Command::new(envoy)
        .args(["--mode", "validate", "--log-level", "warn", "-c"])
        .arg(bootstrap)
        .output()
        .expect("run envoy");
    assert!(
        output.status.success(),
        "envoy --mode validate rejected {}:\n{}{}",
        bootstrap.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON")
}

/// A static bootstrap holding the resources of the xDS files under `dir`,
/// each listener's RDS reference replaced by the route configuration its
/// RDS file holds.
pub fn inline_bootstrap(dir: &Path) -> serde_json::Value {
    let strip = |mut resource: serde_json::Value| {
        resource.as_object_mut().expect("object").remove("@type");
        resource
    };
    let listeners: Vec<serde_json::Value> = json_file(&dir.join("lds/listeners.json"))["resources"]
        .as_array()
        .expect("listeners")
        .iter()
        .map(|listener| {
            let mut listener = strip(listener.clone());
            let hcm = &mut listener["filter_chains"][0]["filters"][0]["typed_config"];
            let rds = hcm
                .as_object_mut()
                .expect("hcm")
                .remove("rds")
                .expect("rds");
            let path = rds["config_source"]["path_config_source"]["path"]
                .as_str()
                .expect("rds path");
            hcm["route_config"] = strip(json_file(Path::new(path))["resources"][0].clone());
            listener
        })
        .collect();
    let clusters: Vec<serde_json::Value> = json_file(&dir.join("cds/clusters.json"))["resources"]
        .as_array()
        .expect("clusters")
        .iter()
        .cloned()
        .map(strip)
        .collect();
    let mut bootstrap: serde_json::Value =
        serde_yaml_ng::from_slice(&std::fs::read(dir.join("envoy.yaml")).expect("read"))
            .expect("YAML");
    let bootstrap_map = bootstrap.as_object_mut().expect("object");
    bootstrap_map.remove("dynamic_resources");
    bootstrap_map.insert(
        "static_resources".into(),
        serde_json::json!({"listeners": listeners, "clusters": clusters}),
    );
    bootstrap
}
