//! deploy/controller/ (`attache deploy`): the committed files are byte for
//! byte what the generator writes, the Deployment's args are flags the real
//! `attache controller` takes, and the pod is locked down as the "restricted"
//! Pod Security Standard asks. That the RBAC grants every call the adapter
//! makes is checked on each request of the mock API tests
//! (crates/attache-controller/tests/mock_api.rs).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers fail by panicking
mod support;

use serde_json::Value;
use support::{attache, attache_ok, scratch, text, workspace};

fn committed() -> Vec<(String, String)> {
    let dir = workspace().join("deploy/controller");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Every YAML document of a file, as JSON.
fn objects(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn find<'a>(all: &'a [(String, String)], name: &str) -> &'a str {
    &all.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn deploy_controller_is_byte_for_byte_what_attache_deploy_writes() {
    let dir = scratch("deploy-controller");
    attache_ok(&["deploy", "-o", dir.to_str().unwrap()]);
    let committed = committed();
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let names: Vec<&str> = committed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names, written,
        "deploy/controller/ holds other files than `attache deploy -o` writes"
    );
    for (name, text_committed) in &committed {
        let fresh = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(
            *text_committed == fresh,
            "deploy/controller/{name} differs from `attache deploy` output; run `attache deploy -o deploy/controller/`"
        );
    }
    // The kustomization lists every other file; standard output is their
    // objects, in that order.
    let kustomization = &objects(find(&committed, "kustomization.yaml"))[0];
    let listed: Vec<&str> = kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let mut others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| *n != "kustomization.yaml")
        .collect();
    others.sort_unstable();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, others);
    let stream = text(&attache_ok(&["deploy"]).stdout);
    let expected: Vec<&str> = listed.iter().map(|n| find(&committed, n)).collect();
    assert_eq!(stream, expected.join("---\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn deployment() -> Value {
    let all = committed();
    objects(find(&all, "deployment.yaml")).remove(0)
}

/// The args of a Deployment's (only) container.
fn container_args(d: &Value) -> Vec<&str> {
    d["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// The image's entry point is `attache controller` (tests/package_controller.rs)
/// and `args` follow it. With a kubeconfig that does not exist, the command
/// gets past its flags and stops where it looks for the cluster.
fn assert_controller_takes(args: &[&str]) {
    let mut command = vec!["controller"];
    command.extend(args);
    command.extend(["--kubeconfig", "/nonexistent/kubeconfig", "--log-text"]);
    let out = attache(&command);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot find the cluster") && stderr.contains("/nonexistent/kubeconfig"),
        "the flags were not all taken: {stderr}"
    );
}

#[test]
fn the_deployments_args_are_flags_attache_controller_takes() {
    let d = deployment();
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    let args = container_args(&d);
    assert_controller_takes(&args);
    // A flag the command does not have is a clap error instead: the check
    // above could tell.
    let out = attache(&["controller", "--no-such-flag"]);
    assert!(text(&out.stderr).contains("unexpected argument"));
    // The probes and the Service use the port the args serve on.
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert!(args.contains(&format!("--probe-address=0.0.0.0:{port}").as_str()));
    assert_eq!(container["ports"][0]["name"], "metrics");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["port"], "metrics");
    }
    let all = committed();
    let service = &objects(find(&all, "service.yaml"))[0];
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
    assert_eq!(
        service["spec"]["selector"],
        d["spec"]["selector"]["matchLabels"]
    );
    // The Lease the args name is the one the Role grants, in the
    // Deployment's namespace.
    let namespace = d["metadata"]["namespace"].as_str().unwrap();
    let rbac = objects(find(&all, "rbac.yaml"));
    let role = rbac.iter().find(|o| o["kind"] == "Role").unwrap();
    assert_eq!(role["metadata"]["namespace"], namespace);
    let lease_name = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["resourceNames"][0].as_str())
        .unwrap();
    assert!(args.contains(&format!("--lease={namespace}/{lease_name}").as_str()));
    // The identity in the Lease is the pod's name (`--identity` default).
    assert_eq!(container["env"][0]["name"], "POD_NAME");
}

#[test]
fn the_pod_is_locked_down_and_bounded() {
    let d = deployment();
    let pod = &d["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    // Pod Security Standards, "restricted" (kubernetes.io/docs/concepts/
    // security/pod-security-standards/), which the Namespace enforces.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert!(pod["securityContext"]["runAsUser"].as_u64().unwrap() > 0);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let sc = &container["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    for bound in ["requests", "limits"] {
        for resource in ["cpu", "memory"] {
            assert!(
                container["resources"][bound][resource].is_string(),
                "{bound}.{resource}"
            );
        }
    }
    assert_eq!(d["spec"]["replicas"], 2, "two replicas, one leader");
    let all = committed();
    let ns = &objects(find(&all, "namespace.yaml"))[0];
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    assert_eq!(ns["metadata"]["name"], d["metadata"]["namespace"]);
}

/// The WasmPlugin flags and `--controller-name` reach the controller's
/// args, which the real `attache controller` takes; the committed files
/// keep the defaults (no extra args).
#[test]
fn the_wasmplugin_flags_are_passed_on_to_the_controller() {
    let sha = "a5a065c7681bbbe0b5da5586507c1d34e4e9933766b78b744d3e6e9b28be816d";
    let url = format!("oci://registry.example.com/attache/filter@sha256:{sha}");
    let out = attache_ok(&[
        "deploy",
        "--url",
        &url,
        "--sha256",
        sha,
        "--image-pull-secret",
        "registry-creds",
        "--fail-strategy",
        "fail-open",
        "--plugin-config",
        "compressed",
        "--controller-name",
        "example.com/gateway",
    ]);
    let stream = objects(&text(&out.stdout));
    let d = stream.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let args = container_args(d);
    let expected = [
        "--controller-name=example.com/gateway".to_string(),
        format!("--url={url}"),
        format!("--sha256={sha}"),
        "--image-pull-secret=registry-creds".to_string(),
        "--fail-strategy=fail-open".to_string(),
        "--plugin-config=compressed".to_string(),
    ];
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(&args[2..], expected.as_slice());
    assert_controller_takes(&args);
    // The controller's own rule: plain http:// needs --sha256.
    let refused = attache(&["deploy", "--url", "http://example.com/f.wasm"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--sha256"));
    // A namespace or image the API server would refuse is refused here,
    // naming the flag, and nothing is written.
    for (flag, value) in [
        ("--namespace", "Bad NS"),
        ("--namespace", "a.b"),
        ("--namespace", &"n".repeat(64)),
        ("--watch-namespace", "Bad NS"),
        ("--watch-namespace", "shop\n--namespace=kube-system"),
        ("--watch-namespace", &"n".repeat(64)),
        ("--image", "x\ny"),
        ("--image", ""),
    ] {
        let refused = attache(&["deploy", flag, value]);
        assert_eq!(refused.status.code(), Some(2), "{flag} {value:?}");
        assert!(
            text(&refused.stderr).contains(flag),
            "{}",
            text(&refused.stderr)
        );
        assert!(
            refused.stdout.is_empty(),
            "{flag} {value:?}: something was written"
        );
    }
    assert_eq!(
        attache(&["deploy", "--namespace", &"n".repeat(63)])
            .status
            .code(),
        Some(0)
    );
    // Defaults add nothing: the committed Deployment has only the Lease
    // and the probe port.
    assert_eq!(
        deployment()["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// `attache deploy -n shop -n infra`: a namespace-scoped install. The
/// controller is told to watch those namespaces (`--namespace`, flags the
/// real `attache controller` takes), each gets a Role with the namespaced
/// kinds' rules, and the ClusterRole keeps only the cluster-scoped kinds.
#[test]
fn a_namespace_scoped_install_has_roles_where_it_watches() {
    let out = attache_ok(&["deploy", "-n", "shop", "--watch-namespace", "infra"]);
    let stream = objects(&text(&out.stdout));
    let d = stream.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let args = container_args(d);
    assert_eq!(&args[2..4], ["--namespace=shop", "--namespace=infra"]);
    let resources = |o: &Value| -> Vec<String> {
        o["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["resources"].as_array().unwrap().clone())
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    let cluster = stream.iter().find(|o| o["kind"] == "ClusterRole").unwrap();
    let cluster = resources(cluster);
    for scoped in ["gatewayclasses", "namespaces", "clusterroutepolicies"] {
        assert!(
            cluster.iter().any(|r| r == scoped),
            "{scoped} in {cluster:?}"
        );
    }
    for namespaced in ["httproutes", "routepolicies", "wasmplugins", "events"] {
        assert!(
            !cluster.iter().any(|r| r == namespaced),
            "{namespaced} in {cluster:?}"
        );
    }
    for ns in ["shop", "infra"] {
        let role = stream
            .iter()
            .find(|o| o["kind"] == "Role" && o["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("no Role in {ns}"));
        let granted = resources(role);
        for namespaced in [
            "httproutes",
            "routepolicies/status",
            "wasmplugins",
            "events",
        ] {
            assert!(
                granted.iter().any(|r| r == namespaced),
                "{namespaced} in {ns}: {granted:?}"
            );
        }
        assert!(stream
            .iter()
            .any(|o| o["kind"] == "RoleBinding" && o["metadata"]["namespace"] == ns));
    }
    assert_controller_takes(&args);
}
