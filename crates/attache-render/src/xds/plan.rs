//! In which order one generation's files are written, so that no request
//! is served by a route whose policy entry Envoy does not have yet, and no
//! route points at a cluster Envoy does not have (docs/envoy.md, "Order of
//! the writes"):
//!
//! 1. ECDS: the document with the entries of both generations;
//! 2. CDS: the clusters of both generations, then SDS: each changed
//!    certificate (HTTPS listeners);
//! 3. RDS: each listener's new route table (routes switch here);
//! 4. LDS: the new listeners (after their RDS files exist);
//! 5. CDS: only the new clusters (the old ones are unused now);
//! 6. ECDS: only the new document;
//! 7. the RDS files of listeners that are gone.
//!
//! Additions are thus loaded before the routes that use them, and removals
//! happen after the routes stopped using them. A step equal to an earlier
//! one is left out; the writer also skips a step whose file already says
//! the same (Envoy compares content, but still re-reads a rewritten file).

use std::collections::BTreeMap;

use attache_contract::Document;
use serde_json::Value;

use super::XdsState;

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The ECDS file, carrying this document.
    Ecds(Document),
    /// The CDS file, holding these clusters.
    Clusters(BTreeMap<String, Value>),
    /// The SDS file of one Secret (a certificate and its private key).
    Secret { name: String, resource: Value },
    /// The RDS file of listener `name`. `listener_live`: the listener was
    /// in the previous generation, so Envoy has an RDS subscription whose
    /// progress can be awaited; a new listener reads the file when it is
    /// created.
    Routes {
        name: String,
        config: Value,
        listener_live: bool,
    },
    /// The LDS file, holding these listeners.
    Listeners(BTreeMap<String, Value>),
    /// The RDS file of a listener that is gone (after the LDS step).
    RemoveRoutes(String),
}

/// The steps from `previous` (what Envoy has; `None` when unknown) to
/// `next`.
pub fn transition(previous: Option<&XdsState>, next: &XdsState) -> Vec<Step> {
    let empty = XdsState::default();
    let previous = previous.unwrap_or(&empty);
    let both_documents = union_document(&previous.document, &next.document);
    let mut both_clusters = previous.clusters.clone();
    both_clusters.extend(next.clusters.clone());

    let mut steps = vec![
        Step::Ecds(both_documents.clone()),
        Step::Clusters(both_clusters.clone()),
    ];
    // Certificates before the listeners that name them; a rotated one is
    // this step alone (the listener does not change).
    for (name, resource) in &next.secrets {
        if previous.secrets.get(name) != Some(resource) {
            steps.push(Step::Secret {
                name: name.clone(),
                resource: resource.clone(),
            });
        }
    }
    for (name, config) in &next.route_configs {
        steps.push(Step::Routes {
            name: name.clone(),
            config: config.clone(),
            // A route configuration Envoy had came with its listener, so
            // its RDS subscription exists.
            listener_live: previous.route_configs.contains_key(name),
        });
    }
    steps.push(Step::Listeners(next.listeners.clone()));
    if both_clusters != next.clusters {
        steps.push(Step::Clusters(next.clusters.clone()));
    }
    if both_documents != next.document {
        steps.push(Step::Ecds(next.document.clone()));
    }
    for name in previous.route_configs.keys() {
        if !next.route_configs.contains_key(name) {
            steps.push(Step::RemoveRoutes(name.clone()));
        }
    }
    steps
}

/// `next`, plus the entries of `previous` that `next` no longer has: while
/// the old routes still serve, their policies stay loaded.
fn union_document(previous: &Document, next: &Document) -> Document {
    let mut both = next.clone();
    let kept = previous
        .routes
        .iter()
        .filter(|old| !next.routes.iter().any(|new| new.name == old.name));
    both.routes.extend(kept.cloned());
    both
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_contract::RouteEntry;
    use serde_json::json;

    fn state(routes: &[&str], clusters: &[&str], listeners: &[&str]) -> XdsState {
        XdsState {
            document: Document {
                routes: routes
                    .iter()
                    .map(|r| RouteEntry {
                        name: (*r).into(),
                        ..RouteEntry::default()
                    })
                    .collect(),
                ..XdsState::default().document
            },
            clusters: clusters
                .iter()
                .map(|c| ((*c).to_string(), json!({"name": c})))
                .collect(),
            route_configs: listeners
                .iter()
                .map(|l| ((*l).to_string(), json!({"name": l, "routes": routes})))
                .collect(),
            listeners: listeners
                .iter()
                .map(|l| ((*l).to_string(), json!({"name": l})))
                .collect(),
            secrets: BTreeMap::new(),
        }
    }

    fn names(document: &Document) -> Vec<&str> {
        document.routes.iter().map(|r| r.name.as_str()).collect()
    }

    fn kinds(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                Step::Ecds(d) => format!("ecds{:?}", names(d)),
                Step::Clusters(c) => format!("cds{:?}", c.keys().collect::<Vec<_>>()),
                Step::Routes {
                    name,
                    listener_live,
                    ..
                } => format!("rds {name} live={listener_live}"),
                Step::Listeners(l) => format!("lds{:?}", l.keys().collect::<Vec<_>>()),
                Step::RemoveRoutes(name) => format!("rm rds {name}"),
                Step::Secret { name, .. } => format!("sds {name}"),
            })
            .collect()
    }

    #[test]
    fn additions_load_policy_and_clusters_before_the_routes_that_use_them() {
        let before = state(&["a"], &["c1"], &["http"]);
        let after = state(&["a", "b"], &["c1", "c2"], &["http"]);
        assert_eq!(
            kinds(&transition(Some(&before), &after)),
            [
                r#"ecds["a", "b"]"#,
                r#"cds["c1", "c2"]"#,
                "rds http live=true",
                r#"lds["http"]"#
            ]
        );
    }

    #[test]
    fn removals_take_the_routes_away_before_their_clusters_and_policies() {
        let before = state(&["a", "b"], &["c1", "c2"], &["http", "ops"]);
        let after = state(&["a"], &["c1"], &["http"]);
        assert_eq!(
            kinds(&transition(Some(&before), &after)),
            [
                r#"ecds["a", "b"]"#,
                r#"cds["c1", "c2"]"#,
                "rds http live=true",
                r#"lds["http"]"#,
                r#"cds["c1"]"#,
                r#"ecds["a"]"#,
                "rm rds ops"
            ]
        );
    }

    #[test]
    fn a_changed_cluster_name_is_added_before_and_removed_after_the_switch() {
        let before = state(&["a"], &["shop/echo/80"], &["http"]);
        let after = state(&["a"], &["shop/echo/81"], &["http"]);
        let steps = transition(Some(&before), &after);
        assert_eq!(
            kinds(&steps)[1..],
            [
                r#"cds["shop/echo/80", "shop/echo/81"]"#,
                "rds http live=true",
                r#"lds["http"]"#,
                r#"cds["shop/echo/81"]"#
            ]
        );
    }

    #[test]
    fn a_changed_policy_takes_the_new_value_at_once() {
        let before = state(&["a"], &["c1"], &["http"]);
        let mut after = before.clone();
        after.document.routes[0].listener = "changed".into();
        let steps = transition(Some(&before), &after);
        assert_eq!(steps[0], Step::Ecds(after.document.clone()));
        assert_eq!(steps.len(), 4, "{:?}", kinds(&steps));
    }

    #[test]
    fn a_new_listener_reads_its_routes_when_created() {
        let after = state(&["a"], &["c1"], &["http"]);
        let steps = transition(None, &after);
        assert_eq!(
            kinds(&steps),
            [
                r#"ecds["a"]"#,
                r#"cds["c1"]"#,
                "rds http live=false",
                r#"lds["http"]"#
            ]
        );
    }
}
