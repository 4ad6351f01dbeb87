//! The objects that install the controller (deploy/controller/, written by
//! `attache deploy`): a Namespace, a ServiceAccount, its RBAC
//! ([`crate::rbac`], from the kinds table), a Deployment and a metrics
//! Service, and the kustomization listing them. Pure: the CLI encodes and
//! writes them.
//!
//! Field rules cited are Kubernetes' (kubernetes.io/docs): "Configure a
//! Security Context for a Pod or Container", the Pod Security Standards'
//! "restricted" profile (runAsNonRoot, allowPrivilegeEscalation false,
//! capabilities drop ALL, seccomp RuntimeDefault), "Configure Liveness,
//! Readiness and Startup Probes", and "Resource Management for Pods and
//! Containers".

use serde_json::{json, Value};

use crate::rbac::{rules_scoped, Rbac, Rule, LEASE_NAME};

/// The controller's own namespace (and the Lease's) by default.
pub const DEFAULT_NAMESPACE: &str = "attache-system";
/// `attache controller --lease`'s default: [`LEASE_NAME`] in
/// [`DEFAULT_NAMESPACE`] (a test checks the two agree).
pub const DEFAULT_LEASE: &str = "attache-system/attache-controller";
/// The name of the ServiceAccount, roles, Deployment and Service.
pub const NAME: &str = "attache-controller";
/// Where `/healthz`, `/readyz` and `/metrics` are served (the default of
/// `attache controller --probe-address`).
pub const PROBE_PORT: u16 = 8080;
/// The image's user (numeric, so that the kubelet can check runAsNonRoot
/// without an /etc/passwd; 65532 is distroless's "nonroot").
pub const USER: u32 = 65532;
/// The image's entry point: `attache controller`, the Deployment's args
/// follow it.
pub const ENTRYPOINT: [&str; 2] = ["/usr/local/bin/attache", "controller"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployOptions {
    pub namespace: String,
    /// The controller's image (`attache package controller` builds it).
    pub image: String,
    pub replicas: u32,
    /// More `attache controller` flags, after the Lease and probe port
    /// (`--controller-name`, the WasmPlugin's `--url`, `--sha256`, ...).
    pub extra_args: Vec<String>,
    /// A namespace-scoped install: the namespaces the controller watches
    /// (its `--namespace` flags, and a Role in each); empty: every one.
    pub watched: Vec<String>,
}

/// One file of deploy/controller/ and the objects in it.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub name: &'static str,
    pub objects: Vec<Value>,
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "attache"})
}

fn meta(name: &str, namespace: Option<&str>) -> Value {
    let mut m = json!({"name": name, "labels": labels()});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The flags the Deployment passes after [`ENTRYPOINT`]: the Lease in the
/// controller's namespace and the probe port (tests/deploy_controller.rs
/// parses them with the real `attache controller`).
pub fn args(options: &DeployOptions) -> Vec<String> {
    let mut args = vec![
        format!("--lease={}/{LEASE_NAME}", options.namespace),
        format!("--probe-address=0.0.0.0:{PROBE_PORT}"),
    ];
    args.extend(options.watched.iter().map(|ns| format!("--namespace={ns}")));
    args.extend(options.extra_args.iter().cloned());
    args
}

fn rule(r: &Rule) -> Value {
    let mut v = json!({"apiGroups": r.api_groups, "resources": r.resources, "verbs": r.verbs});
    if !r.resource_names.is_empty() {
        v["resourceNames"] = json!(r.resource_names);
    }
    v
}

fn rbac_objects(rbac: &Rbac) -> Vec<Value> {
    let subject = json!([{"kind": "ServiceAccount", "name": NAME, "namespace": rbac.namespace}]);
    let role_ref =
        |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": NAME});
    let api = "rbac.authorization.k8s.io/v1";
    vec![
        json!({"apiVersion": api, "kind": "ClusterRole", "metadata": meta(NAME, None),
               "rules": rbac.cluster.iter().map(rule).collect::<Vec<_>>()}),
        json!({"apiVersion": api, "kind": "ClusterRoleBinding", "metadata": meta(NAME, None),
               "roleRef": role_ref("ClusterRole"), "subjects": subject}),
        json!({"apiVersion": api, "kind": "Role", "metadata": meta(NAME, Some(&rbac.namespace)),
               "rules": rbac.namespaced.iter().map(rule).collect::<Vec<_>>()}),
        json!({"apiVersion": api, "kind": "RoleBinding", "metadata": meta(NAME, Some(&rbac.namespace)),
               "roleRef": role_ref("Role"), "subjects": subject}),
    ]
    .into_iter()
    .chain(rbac.watched.iter().flat_map(|(ns, rules)| {
        // A namespace-scoped install: what the controller reads and
        // writes in each namespace it watches.
        let name = format!("{NAME}-watched");
        let role_ref =
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name});
        [
            json!({"apiVersion": api, "kind": "Role", "metadata": meta(&name, Some(ns)),
                   "rules": rules.iter().map(rule).collect::<Vec<_>>()}),
            json!({"apiVersion": api, "kind": "RoleBinding", "metadata": meta(&name, Some(ns)),
                   "roleRef": role_ref, "subjects": subject}),
        ]
    }))
    .collect()
}

fn deployment(options: &DeployOptions) -> Value {
    let ns = options.namespace.as_str();
    let probe = |path: &str, period: u32| json!({"httpGet": {"path": path, "port": "metrics"}, "periodSeconds": period, "timeoutSeconds": 2, "failureThreshold": 3});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(NAME, Some(ns)),
        "spec": {
            // Two replicas, one writing: the other takes the Lease over when
            // the leader stops renewing it (kube/lease.rs).
            "replicas": options.replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": USER, "runAsGroup": USER,
                        "seccompProfile": {"type": "RuntimeDefault"}
                    },
                    // The replicas on different nodes when there are several.
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 100,
                        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}
                    }]}},
                    // SIGTERM: the controller finishes its round and hands the
                    // Lease over (kube/mod.rs, graceful shutdown).
                    "terminationGracePeriodSeconds": 30,
                    "containers": [{
                        "name": "controller",
                        "image": options.image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": args(options),
                        // The Lease's holder identity (`--identity` default).
                        "env": [
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "RUST_LOG", "value": "info"}
                        ],
                        "ports": [{"name": "metrics", "containerPort": PROBE_PORT, "protocol": "TCP"}],
                        "livenessProbe": probe("/healthz", 10),
                        // Ready once every watched kind is listed (or known
                        // to be missing): kube/serve.rs.
                        "readinessProbe": probe("/readyz", 5),
                        // Requests for a small cluster; the memory limit for
                        // the largest cluster measured: 10,000 routes with one
                        // distinct policy each (the `controller_scale`
                        // example, bench/findings.md, "The controller at
                        // 10,000 routes") peak at 360 MiB RSS on one Gateway
                        // and 529 MiB spread over 100, caches and per-Gateway
                        // memos included, so 720Mi leaves ~35% headroom.
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"cpu": "1", "memory": "720Mi"}
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "runAsNonRoot": true,
                            "capabilities": {"drop": ["ALL"]}
                        }
                    }]
                }
            }
        }
    })
}

/// The Namespace, with Pod Security Admission enforcing the "restricted"
/// profile there (kubernetes.io/docs/concepts/security/pod-security-admission/):
/// the API server itself refuses a controller pod that is not locked down.
fn namespace(ns: &str) -> Value {
    let mut m = meta(ns, None);
    m["labels"]["pod-security.kubernetes.io/enforce"] = json!("restricted");
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": m})
}

/// Every file of deploy/controller/, in the order kustomize applies them.
pub fn files(options: &DeployOptions) -> Vec<File> {
    let ns = options.namespace.as_str();
    let rbac = rules_scoped(ns, &options.watched);
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(&format!("{NAME}-metrics"), Some(ns)),
        "spec": {
            "selector": {"app.kubernetes.io/name": NAME},
            "ports": [{"name": "metrics", "port": PROBE_PORT, "targetPort": "metrics", "protocol": "TCP"}]
        }
    });
    let mut out = vec![
        File {
            name: "namespace.yaml",
            objects: vec![namespace(ns)],
        },
        File {
            name: "serviceaccount.yaml",
            objects: vec![
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME, Some(ns))}),
            ],
        },
        File {
            name: "rbac.yaml",
            objects: rbac_objects(&rbac),
        },
        File {
            name: "deployment.yaml",
            objects: vec![deployment(options)],
        },
        File {
            name: "service.yaml",
            objects: vec![service],
        },
    ];
    let resources: Vec<&str> = out.iter().map(|f| f.name).collect();
    out.push(File {
        name: "kustomization.yaml",
        objects: vec![json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": resources,
        })],
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_lease_is_the_one_the_role_grants() {
        assert_eq!(DEFAULT_LEASE, format!("{DEFAULT_NAMESPACE}/{LEASE_NAME}"));
    }
}
