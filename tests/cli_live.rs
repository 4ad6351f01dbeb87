//! The read commands against a live cluster: the stand-in API server
//! (crates/attache-apiserver) serving examples/shop, `attache` run as a
//! process with `--kubeconfig` (docs/semantics.md section 13).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/standin.rs"]
mod standin;
mod support;

use std::path::Path;
use std::process::Output;

use attache_apiserver::Verb;
use standin::Cluster;
use support::{attache, scratch, text, workspace};

fn live(cluster: &Cluster, args: &[&str]) -> Output {
    cluster.attache(args)
}

/// The header line every live read prints first on standard error.
fn header(cluster: &Cluster, scope: &str, kinds: &[&str]) -> String {
    let version = cluster.server.resource_version();
    let versions: Vec<String> = kinds.iter().map(|k| format!("{k} {version}")).collect();
    format!(
        "# context attache-standin, server SERVER/, {scope}; resourceVersion: {}\n",
        versions.join(", ")
    )
}

const ALL_KINDS: &[&str] = &[
    "GatewayClass",
    "Namespace",
    "Gateway",
    "XListenerSet",
    "ListenerSet",
    "HTTPRoute",
    "GRPCRoute",
    "RoutePolicy",
    "ClusterRoutePolicy",
    "TrafficPolicy",
    "BackendTrafficPolicy",
];

fn shop() -> String {
    workspace().join("examples/shop").display().to_string()
}

/// Whatever the read command, the cluster gives what the same objects as
/// files give: the same document byte for byte, the same explanation.
#[test]
fn live_reads_answer_as_the_same_files_do() {
    let dir = scratch("live-same");
    let cluster = Cluster::shop(&dir);
    for args in [
        vec!["resolve"],
        vec!["explain", "--route", "shop/orders"],
        vec!["graph", "--route", "shop/storefront"],
        vec!["status", "-o", "yaml"],
    ] {
        let from_cluster = live(&cluster, &args);
        assert_eq!(
            from_cluster.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&from_cluster.stderr)
        );
        let shop = shop();
        let mut with_files = args.clone();
        with_files.extend(["-f", &shop]);
        let from_files = attache(&with_files);
        assert_eq!(from_files.status.code(), Some(0), "{args:?}");
        let mut live_stdout = text(&from_cluster.stdout);
        if args[0] == "status" {
            // Live, observedGeneration is the object's metadata.generation,
            // which files leave out; nothing else differs.
            assert!(live_stdout.contains("observedGeneration: 1\n"));
            live_stdout = live_stdout
                .lines()
                .filter(|l| l.trim() != "observedGeneration: 1")
                .map(|l| format!("{l}\n"))
                .collect();
        }
        assert!(live_stdout == text(&from_files.stdout), "{args:?} differs");
        let mut expected =
            header(&cluster, "all namespaces", ALL_KINDS) + &text(&from_files.stderr);
        if args[0] == "status" {
            // No controller ran: nothing is written, every policy drifts.
            let listed = text(&from_files.stdout);
            let policies = listed.matches("\n  kind: RoutePolicy\n").count()
                + listed.matches("\n  kind: ClusterRoutePolicy\n").count();
            expected += &format!("note: {policies} of the policies shown drift from the status written in the cluster (the DRIFT column of -o table)\n");
        }
        if args[0] == "explain" {
            // No controller ran: what is served is not confirmed.
            expected += "note: Gateway infra/edge: these values are not confirmed by its replicas (no controller wrote what they serve)\n";
        }
        assert_eq!(
            cluster.redact(&text(&from_cluster.stderr)),
            expected,
            "{args:?}"
        );
    }
    // A read writes nothing.
    let writes = cluster
        .server
        .log()
        .records()
        .iter()
        .filter(|r| r.verb.is_write())
        .count();
    assert_eq!(writes, 0);
}

/// A kind the API server does not serve is skipped with one note, and the
/// answer is the one without it (deals' ListenerSet is not there).
#[test]
fn a_kind_not_served_is_skipped_with_one_note() {
    let dir = scratch("live-unserved");
    let cluster = Cluster::shop(&dir);
    cluster
        .server
        .unserve_kind("gateway.networking.k8s.io", "listenersets");
    cluster
        .server
        .unserve_kind("gateway.kgateway.dev", "trafficpolicies");
    let out = live(&cluster, &["resolve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let served: Vec<&str> = ALL_KINDS
        .iter()
        .copied()
        .filter(|k| !matches!(*k, "ListenerSet" | "TrafficPolicy"))
        .collect();
    let stderr = cluster.redact(&text(&out.stderr));
    let expected_start = header(&cluster, "all namespaces", &served)
        + "note: not served by the API server, so skipped: ListenerSet (gateway.networking.k8s.io/v1), TrafficPolicy (gateway.kgateway.dev/v1alpha1)\n";
    assert!(stderr.starts_with(&expected_start), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = document["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("deals/")), "{names:?}");
    assert!(names.contains(&"http/shop/orders/0"), "{names:?}");
}

/// `-n` lists namespaced kinds in that namespace only (one request each),
/// cluster-scoped kinds whole; the Gateway of another namespace is then
/// not seen, and the message says so.
#[test]
fn namespace_limits_the_lists_of_namespaced_kinds() {
    let dir = scratch("live-namespace");
    let cluster = Cluster::shop(&dir);
    let out = live(&cluster, &["status", "-n", "shop", "-o", "table"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        cluster.redact(&text(&out.stderr)).starts_with(&header(
            &cluster,
            "namespace shop",
            ALL_KINDS
        )),
        "{}",
        text(&out.stderr)
    );
    let lists: Vec<(String, Option<String>)> = cluster
        .server
        .log()
        .records()
        .iter()
        .filter(|r| r.verb == Verb::List)
        .map(|r| (r.resource.clone(), r.namespace.clone()))
        .collect();
    let shop = Some("shop".to_string());
    for (resource, namespace) in &lists {
        let cluster_scoped = matches!(
            resource.as_str(),
            "gatewayclasses" | "namespaces" | "clusterroutepolicies"
        );
        assert_eq!(
            namespace.is_none(),
            cluster_scoped,
            "{resource} listed in {namespace:?}"
        );
        if !cluster_scoped {
            assert_eq!(namespace, &shop, "{resource}");
        }
    }
    assert_eq!(lists.len(), ALL_KINDS.len(), "{lists:?}");
    // Only shop's policies, and the cluster-scoped one (which has none).
    let table = text(&out.stdout);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.iter()
            .any(|r| r.starts_with(&["RoutePolicy", "shop", "storefront"])),
        "{table}"
    );
    assert!(!table.contains("infra"), "{table}");
    let resolve = live(&cluster, &["resolve", "-n", "shop"]);
    assert_eq!(resolve.status.code(), Some(1));
    assert!(
        text(&resolve.stderr).contains("no Gateway"),
        "{}",
        text(&resolve.stderr)
    );
    // A route whose Gateway the namespace hid: the hint says what to do
    // under a live read too.
    let status = text(&out.stderr);
    assert!(
        status.contains("\nnote: api:httproutes/shop/storefront HTTPRoute shop/storefront: spec.parentRefs[0]: names Gateway infra/edge, which the input does not have; not attached through it here; add that Gateway to what is read (its manifest to -f, or the Gateway to the cluster; a live read with -n sees one namespace), or check the parentRef's name and namespace\n"),
        "{status}"
    );
}

/// Cluster flags with files are refused; a server nobody answers, and a
/// list RBAC forbids, each end with one error that says what to do.
#[test]
fn what_cannot_be_read_is_one_clear_error() {
    let dir = scratch("live-errors");
    let cluster = Cluster::shop(&dir);
    let kubeconfig = cluster.kubeconfig.display().to_string();
    let shop = shop();
    let out = attache(&["resolve", "-f", &shop, "--kubeconfig", &kubeconfig]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: --kubeconfig, --context, -n and -A choose what is read from the cluster, and -f reads files instead\n  hint: leave out -f to read the cluster, or leave out the cluster flags\n"
    );

    cluster.server.faults().fail_for(
        attache_apiserver::Scope::Resource("httproutes".into()),
        403,
        std::time::Duration::from_secs(600),
    );
    let out = live(&cluster, &["resolve"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: HTTPRoute (gateway.networking.k8s.io/v1) in all namespaces: listing is forbidden: "),
        "{stderr}"
    );
    assert!(stderr.contains("\n  hint: `kubectl auth can-i list httproutes` says what your user may read; -n NAMESPACE reads one namespace only\n"), "{stderr}");

    let gone = dir.join("gone.kubeconfig");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text_of = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    std::fs::write(
        &gone,
        text_of.replace(&cluster.server.url(), &format!("http://127.0.0.1:{port}")),
    )
    .unwrap();
    let out = attache(&[
        "explain",
        "--route",
        "shop/orders",
        "--kubeconfig",
        gone.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: GatewayClass (gateway.networking.k8s.io/v1): cannot list from http://127.0.0.1:"), "{stderr}");
    assert!(stderr.contains("hint: is the API server reachable? `kubectl --context attache-standin get gatewayclasses` tries the same read"), "{stderr}");

    let out = attache(&[
        "resolve",
        "--kubeconfig",
        dir.join("none").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: cannot read the kubeconfig "),
        "{}",
        text(&out.stderr)
    );
}

/// `--max-input-bytes` bounds each kind's list as it bounds a file: past
/// it the read stops with one error naming the kind; within it the answer
/// is the unbounded one.
#[test]
fn live_reads_are_bounded_by_max_input_bytes() {
    let dir = scratch("live-bounded");
    let cluster = Cluster::shop(&dir);
    let out = live(&cluster, &["resolve", "--max-input-bytes", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        cluster.redact(&text(&out.stderr)),
        "error: GatewayClass (gateway.networking.k8s.io/v1) in the cluster scope: the list from SERVER/ is larger than 1 bytes; not read\n  hint: raise --max-input-bytes\n"
    );
    // Namespaced kinds are bounded alike, named with their scope.
    let out = live(&cluster, &["resolve", "--max-input-bytes", "4000"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        cluster.redact(&text(&out.stderr)),
        "error: HTTPRoute (gateway.networking.k8s.io/v1) in all namespaces: the list from SERVER/ is larger than 4000 bytes; not read\n  hint: raise --max-input-bytes, or read one namespace with -n NAMESPACE\n"
    );
    // examples/shop's largest list is under 8000 bytes.
    let bounded = live(&cluster, &["resolve", "--max-input-bytes", "8000"]);
    let unbounded = live(&cluster, &["resolve"]);
    assert_eq!(bounded.status.code(), Some(0), "{}", text(&bounded.stderr));
    assert_eq!(bounded.stdout, unbounded.stdout);
}

/// `diff --cluster -f CHANGE` says what `diff` of the same objects as files
/// says, and exits as `diff` does.
#[test]
fn diff_against_the_cluster_is_diff_of_the_overlay() {
    let dir = scratch("live-diff");
    let cluster = Cluster::shop(&dir);
    // The change: storefront's policy deleted, one new policy.
    let change = dir.join("change");
    std::fs::create_dir_all(&change).unwrap();
    let added = "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata:\n  name: orders-fast\n  namespace: shop\nspec:\n  targetRefs:\n  - {group: gateway.networking.k8s.io, kind: HTTPRoute, name: orders}\n  defaults:\n    timeouts: {request: 1s}\n";
    std::fs::write(
        change.join("pr.yaml"),
        format!("apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata:\n  name: storefront\n  namespace: shop\n  annotations: {{attache.dev/delete: \"true\"}}\n---\n{added}"),
    )
    .unwrap();
    // The same change made to a copy of the files.
    let new = dir.join("new");
    support::copy_dir(&workspace().join("examples/shop"), &new);
    strip_policy(&new, "storefront");
    std::fs::write(new.join("99-pr.yaml"), added).unwrap();
    let from_files = attache(&[
        "diff",
        &shop(),
        new.to_str().unwrap(),
        "--fail-on",
        "timeout-shorter",
    ]);
    let from_cluster = live(
        &cluster,
        &[
            "diff",
            "--cluster",
            "-f",
            change.to_str().unwrap(),
            "--fail-on",
            "timeout-shorter",
        ],
    );
    assert_eq!(
        from_files.status.code(),
        Some(4),
        "{}",
        text(&from_files.stderr)
    );
    assert_eq!(
        from_cluster.status.code(),
        Some(4),
        "{}",
        text(&from_cluster.stderr)
    );
    assert_eq!(text(&from_cluster.stdout), text(&from_files.stdout));
    assert!(
        text(&from_cluster.stdout).contains("RoutePolicy shop/storefront: Accepted -> (absent)")
    );

    // A deletion of what the cluster lacks is said, not silently done.
    std::fs::write(
        change.join("pr.yaml"),
        "apiVersion: policy.attache.dev/v1alpha1\nkind: RoutePolicy\nmetadata:\n  name: nothing\n  namespace: shop\n  annotations: {attache.dev/delete: \"true\"}\n",
    )
    .unwrap();
    let out = live(
        &cluster,
        &[
            "diff",
            "--cluster",
            "-f",
            change.to_str().unwrap(),
            "--exit-code",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).ends_with("note: RoutePolicy shop/nothing: attache.dev/delete asks to delete it, but the cluster has no such object; nothing deleted\n"), "{}", text(&out.stderr));
    let out = attache(&["diff", "--cluster"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// Removes the RoutePolicy `name` from the YAML files of `dir`.
fn strip_policy(dir: &Path, name: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: Vec<&str> = text
            .split("\n---\n")
            .filter(|doc| {
                !(doc.contains("kind: RoutePolicy") && doc.contains(&format!("\n  name: {name}\n")))
            })
            .collect();
        std::fs::write(&path, kept.join("\n---\n")).unwrap();
    }
}

/// A policy the cluster holds that the reader refuses is one error naming
/// the object as read from the API (no file, no document number); the
/// other policies still apply, and --strict fails on it.
#[test]
fn an_invalid_policy_in_the_cluster_is_named_by_its_object() {
    let dir = scratch("live-invalid");
    let mut objects =
        attache_apiserver::read_manifests(&workspace().join("examples/shop")).unwrap();
    objects.push(serde_json::json!({
        "apiVersion": "policy.attache.dev/v1alpha1", "kind": "RoutePolicy",
        "metadata": {"name": "broken", "namespace": "shop"},
        "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "orders"}],
                 "defaults": {"timeouts": {"request": "soon"}}}
    }));
    let cluster = Cluster::start(&dir, objects);
    let out = live(&cluster, &["resolve", "--strict"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = text(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(
        errors,
        [
            "error: api:routepolicies/shop/broken RoutePolicy shop/broken: spec.defaults.timeouts.request: \"soon\" is not a Gateway API duration; use e.g. 1500ms, 10s or 1m30s; 0s disables (pattern ^([0-9]{1,5}(h|m|s|ms)){1,4}$)",
            "error: --strict: 1 problem(s) reported above",
        ]
    );
    let without = live(&cluster, &["resolve"]);
    assert_eq!(without.status.code(), Some(0));
    assert_eq!(
        text(&without.stdout),
        text(&attache(&["resolve", "-f", &shop()]).stdout),
        "the other policies apply as before"
    );
}
