//! The shapes Envoy would refuse, found before a file is written: a route
//! to a cluster the CDS file does not hold, two virtual hosts of one route
//! configuration claiming one domain, a regex that does not parse. Envoy
//! refuses a whole RDS file for one bad route, so one bad HTTPRoute would
//! otherwise freeze every route of its listener at the last good table.
//!
//! Regexes are checked with `regex-syntax`, whose syntax is close to RE2's
//! (both leave out backreferences and look-around), and against Envoy's
//! RE2 program-size limit with the resolver's model
//! (`attache_core::re2_program`), which refuses such a route before it gets
//! here: this is the second line, for whatever slips past the first.

use attache_core::re2_program;
use serde_json::Value;

use super::XdsState;
use crate::error::XdsCheckError;

/// Every route configuration of `state` against its clusters.
pub fn check(state: &XdsState) -> Result<(), XdsCheckError> {
    // Every listener and route configuration name becomes an RDS file's
    // directory; refuse a bad one before anything is written.
    for name in state.listeners.keys().chain(state.route_configs.keys()) {
        super::file_component(name)?;
    }
    for (listener, config) in &state.route_configs {
        let mut domains = std::collections::BTreeSet::new();
        for vhost in array(&config["virtual_hosts"]) {
            for domain in array(&vhost["domains"]).iter().filter_map(Value::as_str) {
                if !domains.insert(domain) {
                    return Err(XdsCheckError::DuplicateDomain {
                        listener: listener.clone(),
                        domain: domain.to_string(),
                    });
                }
            }
            for route in array(&vhost["routes"]) {
                check_route(state, listener, route)?;
            }
        }
    }
    Ok(())
}

fn check_route(state: &XdsState, listener: &str, route: &Value) -> Result<(), XdsCheckError> {
    let name = route["name"].as_str().unwrap_or_default();
    let action = &route["route"];
    let single = action["cluster"].as_str();
    let weighted = array(&action["weighted_clusters"]["clusters"])
        .iter()
        .filter_map(|c| c["name"].as_str());
    for cluster in single.into_iter().chain(weighted) {
        if !state.clusters.contains_key(cluster) {
            return Err(XdsCheckError::DanglingCluster {
                listener: listener.to_string(),
                route: name.to_string(),
                cluster: cluster.to_string(),
            });
        }
    }
    // The resolver refuses a zero back-off (settings/mod.rs); behind it, a
    // zero that got through anyway is named with the policy that set it.
    let back_off = &action["retry_policy"]["retry_back_off"]["base_interval"];
    if let Some(text) = back_off.as_str().filter(|t| is_zero_duration(t)) {
        let supplier = state
            .document
            .routes
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.sources.get("retry.backoffMs"))
            .cloned()
            .unwrap_or_else(|| "an unknown source".into());
        return Err(XdsCheckError::ZeroBackOff {
            listener: listener.to_string(),
            route: name.to_string(),
            base_interval: text.to_string(),
            supplier,
        });
    }
    let mut regexes = Vec::new();
    collect_regexes(&route["match"], &mut regexes);
    for regex in regexes {
        if let Ok(size) = re2_program::program_size(regex) {
            if size > re2_program::ENVOY_MAX_PROGRAM_SIZE {
                return Err(XdsCheckError::RegexTooLarge {
                    listener: listener.to_string(),
                    route: name.to_string(),
                    regex: regex.to_string(),
                    size,
                    limit: re2_program::ENVOY_MAX_PROGRAM_SIZE,
                });
            }
        }
        if let Err(err) = regex_syntax::Parser::new().parse(regex) {
            return Err(XdsCheckError::BadRegex {
                listener: listener.to_string(),
                route: name.to_string(),
                regex: regex.to_string(),
                reason: err
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or_default()
                    .to_string(),
            });
        }
    }
    Ok(())
}

/// A protobuf JSON duration (`0s`, `0.000s`) of zero.
fn is_zero_duration(text: &str) -> bool {
    text.strip_suffix('s')
        .is_some_and(|n| n.chars().all(|c| c == '0' || c == '.'))
}

/// Every `safe_regex.regex` under `value`.
fn collect_regexes<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(regex) = map.get("safe_regex").and_then(|r| r["regex"].as_str()) {
                out.push(regex);
            }
            for child in map.values() {
                collect_regexes(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_regexes(i, out)),
        _ => {}
    }
}

fn array(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}
