//! The controller's RBAC, derived from the kinds table ([`WATCHED_KINDS`]): a new
//! watched kind gets its rule without anyone writing one. Least privilege:
//! each verb granted is one the adapter ([`crate::kube`]) uses, and
//! [`Rbac::allows`] is the check the mock API tests run on every request the
//! adapter sends (crates/attache-controller/tests/mock_api.rs), so a call
//! the rules do not cover fails a test instead of a cluster.
//!
//! Verbs and resources are Kubernetes' (kubernetes.io/docs/reference/
//! access-authn-authz/rbac/, "Referring to resources": a subresource is
//! `resource/subresource`; "resourceNames" cannot restrict `create`).

use crate::kinds::{Role, WatchedKind, WATCHED_KINDS};

/// The Lease of leader election, in the controller's namespace (the
/// `attache controller --lease` default names it too).
pub const LEASE_NAME: &str = "attache-controller";

/// One PolicyRule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<&'static str>,
    /// Empty: every object of those resources.
    pub resource_names: Vec<String>,
}

/// What the ServiceAccount is granted: a ClusterRole (the watched kinds are
/// read in every namespace, WasmPlugins and Events written next to each
/// Gateway) and a Role in the controller's own namespace (the Lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rbac {
    pub cluster: Vec<Rule>,
    pub namespace: String,
    pub namespaced: Vec<Rule>,
    /// A namespace-scoped install: a Role in each watched namespace with
    /// the namespaced kinds' rules (the ClusterRole then has only the
    /// cluster-scoped kinds'). Empty: every namespace, by the ClusterRole.
    pub watched: Vec<(String, Vec<Rule>)>,
}

/// A request as the API server's authorizer sees it (kubernetes.io/docs/
/// reference/access-authn-authz/authorization/, "Review your request
/// attributes" and "Determine the request verb").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

/// The verbs a kind's row needs, by what the adapter does with it.
pub fn verbs(kind: &WatchedKind) -> Vec<(String, Vec<&'static str>)> {
    // Every watched kind: the reflector lists, then watches (watch.rs).
    let mut out = vec![(kind.plural.to_string(), vec!["list", "watch"])];
    match kind.role {
        Role::Input => {}
        // Status via the subresource as a merge patch; after a 409 the
        // object is read again (api.rs, `write_status`).
        Role::InputWithStatus => {
            out[0].1.insert(0, "get");
            out.push((format!("{}/status", kind.plural), vec!["patch"]));
        }
        // Server-side apply is a PATCH; a plugin whose Gateway left our
        // class, or of the kind no longer written, is deleted (api.rs,
        // plugin_kind.rs).
        Role::Output => out[0].1.extend(["patch", "delete"]),
    }
    out
}

/// The rules for a controller deployed in `namespace` that reads every
/// namespace.
pub fn rules(namespace: &str) -> Rbac {
    rules_scoped(namespace, &[])
}

/// The rules of `kinds`, one per resource the adapter touches.
fn kind_rules<'a>(kinds: impl Iterator<Item = &'a WatchedKind>) -> Vec<Rule> {
    kinds
        .flat_map(|kind| {
            verbs(kind).into_iter().map(|(resource, verbs)| Rule {
                api_groups: vec![kind.group.to_string()],
                resources: vec![resource],
                verbs,
                resource_names: Vec::new(),
            })
        })
        .collect()
}

/// kube-runtime's Recorder creates an events.k8s.io/v1 Event on the
/// Gateway (in its namespace), and patches it when the same event repeats
/// (an event series).
fn events_rule() -> Rule {
    Rule {
        api_groups: vec!["events.k8s.io".into()],
        resources: vec!["events".into()],
        verbs: vec!["create", "patch"],
        resource_names: Vec::new(),
    }
}

/// "Programmed means served" (kube/scrape.rs): the Gateways' proxy pods
/// are listed and watched (by label) to find each ready replica's IP; read
/// only. With `--confirm-served=false` nothing reads them, but the rule is
/// kept so that the flag needs no other install.
fn pods_rule() -> Rule {
    Rule {
        api_groups: vec![String::new()],
        resources: vec!["pods".into()],
        verbs: vec!["list", "watch"],
        resource_names: Vec::new(),
    }
}

/// The rules for a controller deployed in `namespace` that reads only
/// the `watched` namespaces (`attache controller --namespace`): a Role in
/// each with the namespaced kinds' rules and the Events', and a
/// ClusterRole with the cluster-scoped kinds' only. No `watched`: every
/// rule in the ClusterRole.
pub fn rules_scoped(namespace: &str, watched: &[String]) -> Rbac {
    let (cluster, watched) = if watched.is_empty() {
        let mut cluster = kind_rules(WATCHED_KINDS.iter());
        cluster.push(events_rule());
        cluster.push(pods_rule());
        (cluster, Vec::new())
    } else {
        let mut per_namespace = kind_rules(WATCHED_KINDS.iter().filter(|k| k.namespaced));
        per_namespace.push(events_rule());
        per_namespace.push(pods_rule());
        let roles = watched
            .iter()
            .map(|ns| (ns.clone(), per_namespace.clone()))
            .collect();
        (
            kind_rules(WATCHED_KINDS.iter().filter(|k| !k.namespaced)),
            roles,
        )
    };
    let lease = |verbs, names: Vec<String>| Rule {
        api_groups: vec!["coordination.k8s.io".into()],
        resources: vec!["leases".into()],
        verbs,
        resource_names: names,
    };
    // lease.rs: GET, then POST when there is none, PUT to renew, take over
    // or release. `create` cannot be limited to a name.
    let namespaced = vec![
        lease(vec!["create"], Vec::new()),
        lease(vec!["get", "update"], vec![LEASE_NAME.to_string()]),
    ];
    Rbac {
        cluster,
        namespace: namespace.to_string(),
        namespaced,
        watched,
    }
}

impl Rule {
    fn allows(&self, request: &Request) -> bool {
        let resource = match &request.subresource {
            Some(sub) => format!("{}/{sub}", request.resource),
            None => request.resource.clone(),
        };
        self.api_groups.contains(&request.group)
            && self.resources.contains(&resource)
            && self.verbs.contains(&request.verb.as_str())
            && (self.resource_names.is_empty()
                || request
                    .name
                    .as_ref()
                    .is_some_and(|n| self.resource_names.contains(n)))
    }
}

impl Rbac {
    /// Whether the ClusterRole (any namespace) or the Role (its namespace
    /// only) grants `request`.
    pub fn allows(&self, request: &Request) -> bool {
        let in_namespace = |ns: &str| request.namespace.as_deref() == Some(ns);
        self.cluster.iter().any(|r| r.allows(request))
            || (in_namespace(&self.namespace) && self.namespaced.iter().any(|r| r.allows(request)))
            || self
                .watched
                .iter()
                .any(|(ns, rules)| in_namespace(ns) && rules.iter().any(|r| r.allows(request)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> Request {
        Request {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: None,
            name: None,
            namespace: namespace.map(str::to_string),
        }
    }

    #[test]
    fn every_kind_is_read_and_only_ours_and_the_plugin_kinds_are_written() {
        let rbac = rules("attache-system");
        for kind in WATCHED_KINDS {
            for verb in ["list", "watch"] {
                let r = request(verb, kind.group, kind.plural, None);
                assert!(rbac.allows(&r), "{verb} {}", kind.plural);
            }
            let written = ["create", "update", "patch", "delete"]
                .into_iter()
                .filter(|verb| rbac.allows(&request(verb, kind.group, kind.plural, None)))
                .collect::<Vec<_>>();
            let status = Request {
                subresource: Some("status".into()),
                ..request("patch", kind.group, kind.plural, Some("shop"))
            };
            match kind.role {
                Role::Input => assert!(written.is_empty() && !rbac.allows(&status)),
                Role::InputWithStatus => assert!(written.is_empty() && rbac.allows(&status)),
                Role::Output => assert_eq!(written, ["patch", "delete"]),
            }
        }
    }

    /// A namespace-scoped install reads namespaced kinds in the watched
    /// namespaces only, cluster-scoped kinds cluster-wide, and writes
    /// statuses, WasmPlugins and Events only in the watched namespaces.
    #[test]
    fn a_scoped_install_is_granted_its_namespaces_only() {
        let rbac = rules_scoped("attache-system", &["shop".into(), "infra".into()]);
        for kind in WATCHED_KINDS {
            for verb in ["list", "watch"] {
                let everywhere = request(verb, kind.group, kind.plural, None);
                assert_eq!(
                    rbac.allows(&everywhere),
                    !kind.namespaced,
                    "{verb} {}",
                    kind.plural
                );
                if kind.namespaced {
                    for (ns, granted) in [("shop", true), ("infra", true), ("kube-system", false)] {
                        let one = request(verb, kind.group, kind.plural, Some(ns));
                        assert_eq!(rbac.allows(&one), granted, "{verb} {} in {ns}", kind.plural);
                    }
                }
            }
        }
        let event = |ns| request("create", "events.k8s.io", "events", Some(ns));
        assert!(rbac.allows(&event("infra")));
        assert!(!rbac.allows(&event("kube-system")));
        assert!(rbac
            .cluster
            .iter()
            .all(|r| r.api_groups != ["events.k8s.io"]));
        let pods = |verb, ns| request(verb, "", "pods", ns);
        assert!(rbac.allows(&pods("watch", Some("infra"))));
        assert!(!rbac.allows(&pods("list", Some("kube-system"))));
        assert!(!rbac.allows(&pods("list", None)));
    }

    /// The proxy pods are read (listed and watched for their IPs), never
    /// written, and no other core kind is granted.
    #[test]
    fn proxy_pods_are_read_only() {
        let rbac = rules("attache-system");
        for verb in ["list", "watch"] {
            assert!(rbac.allows(&request(verb, "", "pods", None)), "{verb}");
        }
        for verb in ["create", "update", "patch", "delete"] {
            assert!(
                !rbac.allows(&request(verb, "", "pods", Some("infra"))),
                "{verb}"
            );
        }
        assert!(!rbac.allows(&request("list", "", "secrets", None)));
    }

    #[test]
    fn the_lease_is_ours_only_in_our_namespace_and_only_by_its_name() {
        let rbac = rules("attache-system");
        let named = |verb: &str, ns: &str, name: &str| Request {
            name: Some(name.into()),
            ..request(verb, "coordination.k8s.io", "leases", Some(ns))
        };
        assert!(rbac.allows(&named("get", "attache-system", LEASE_NAME)));
        assert!(rbac.allows(&named("update", "attache-system", LEASE_NAME)));
        assert!(rbac.allows(&named("create", "attache-system", LEASE_NAME)));
        assert!(!rbac.allows(&named("update", "attache-system", "kube-scheduler")));
        assert!(!rbac.allows(&named("get", "kube-system", LEASE_NAME)));
        assert!(!rbac.allows(&named("delete", "attache-system", LEASE_NAME)));
    }
}
