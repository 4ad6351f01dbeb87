//! Live `attache status` against the stand-in API server after the
//! controller's real loop wrote every status: no drift; then each kind of
//! drift made by hand and named (docs/semantics.md, "Reading the cluster").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/standin.rs"]
mod standin;
mod support;

use std::process::Output;

use standin::Cluster;
use support::{scratch, text};

fn live(cluster: &Cluster, args: &[&str]) -> Output {
    cluster.attache(args)
}

/// The controller's real loop writes the statuses; `attache status` then
/// finds no drift. Each kind of drift is then made by hand and named.
#[test]
fn status_drift_is_none_after_the_controller_and_named_after_edits() {
    use attache_controller::kube::{run, Options};
    let dir = scratch("live-drift");
    let cluster = Cluster::shop(&dir);
    let options = Options {
        config: attache_controller::reconcile::Config::default(),
        kubeconfig: Some(cluster.kubeconfig.clone()),
        probe_address: "127.0.0.1:0".parse().unwrap(),
        lease: None,
        identity: "cli-live".into(),
        debounce: std::time::Duration::from_millis(50),
        max_delay: std::time::Duration::from_millis(300),
        plugin_kind: Default::default(),
        served: None,
    };
    let controller = cluster.runtime.spawn(async move {
        let _ = run(options).await;
    });
    let policies = || {
        let mut all = cluster
            .server
            .objects("policy.attache.dev", "routepolicies");
        all.extend(
            cluster
                .server
                .objects("policy.attache.dev", "clusterroutepolicies"),
        );
        all
    };
    let written = |p: &serde_json::Value| {
        p["status"]["ancestors"].as_array().is_some_and(|a| {
            a.iter()
                .any(|a| a["controllerName"] == "policy.attache.dev/attache")
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !policies().iter().all(written) {
        assert!(
            std::time::Instant::now() < deadline,
            "the controller wrote no status in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    controller.abort();
    let out = live(&cluster, &["status", "-o", "table", "--strict"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let drift_column = |out: &Output| -> Vec<String> {
        text(&out.stdout)
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                format!("{}/{} {}", cells[1], cells[2], cells[cells.len() - 1])
            })
            .collect()
    };
    assert!(
        drift_column(&out).iter().all(|row| row.ends_with(" -")),
        "{:?}",
        drift_column(&out)
    );
    // SERVED, beside DRIFT: this controller confirmed nothing ("-").
    let served_column = |out: &Output| -> Vec<String> {
        text(&out.stdout)
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                format!("{}/{} {}", cells[1], cells[2], cells[cells.len() - 2])
            })
            .collect()
    };
    let header = text(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let last: Vec<&str> = header.split_whitespace().rev().take(3).collect();
    assert_eq!(last, ["DRIFT", "SERVED", "PROGRAMMED"], "{header}");
    assert!(served_column(&out).iter().all(|row| row.ends_with(" -")));

    let edit = |namespace: &str, name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let mut object = cluster
            .server
            .object("policy.attache.dev", "routepolicies", namespace, name)
            .unwrap();
        change(&mut object);
        cluster.server.seed([object]).unwrap();
    };
    // What a confirming controller writes shows as SERVED; messages are
    // not compared, so no drift.
    let mut confirmed = cluster
        .server
        .object(
            "policy.attache.dev",
            "routepolicies",
            "infra",
            "edge-defaults",
        )
        .unwrap();
    for ancestor in confirmed["status"]["ancestors"].as_array_mut().unwrap() {
        for condition in ancestor["conditions"].as_array_mut().unwrap() {
            if condition["type"] == "Programmed" {
                let message = format!(
                    "{}; served by 3 of 3 replicas",
                    condition["message"].as_str().unwrap()
                );
                condition["message"] = message.into();
            }
        }
    }
    cluster.server.seed([confirmed]).unwrap();
    let out = live(
        &cluster,
        &["status", "-o", "table", "--name", "edge-defaults"],
    );
    assert_eq!(
        served_column(&out),
        ["infra/edge-defaults 3/3"],
        "{}",
        text(&out.stdout)
    );
    assert_eq!(drift_column(&out), ["infra/edge-defaults -"]);
    let explained = live(&cluster, &["explain", "--route", "shop/orders"]);
    assert!(
        text(&explained.stderr).contains(
            "note: Gateway infra/edge: these values are served by every ready replica (3/3)\n"
        ),
        "{}",
        text(&explained.stderr)
    );

    // stale: the spec changed and nothing wrote since.
    edit("shop", "storefront", &|p| {
        p["spec"]["defaults"]["timeouts"]["request"] = "7s".into()
    });
    // differs: a reason the resolver would not give.
    edit("infra", "public-listener", &|p| {
        p["status"]["ancestors"][0]["conditions"][1]["reason"] = "Overridden".into()
    });
    // foreign: another controller's entries only.
    edit("infra", "admin-listener", &|p| {
        p["status"]["ancestors"][0]["controllerName"] = "example.com/gateway".into();
        p["status"]["conditions"] = serde_json::json!([]);
    });
    // unwritten: nothing at all.
    edit("catalog", "reviews", &|p| {
        p["status"] = serde_json::json!({})
    });
    let out = live(&cluster, &["status", "-o", "table", "--strict"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(
        drift_column(&out),
        [
            "catalog/reviews unwritten",
            "deals/coupons-atomic -",
            "deals/deals-listeners -",
            "infra/admin-listener foreign",
            "infra/edge-defaults -",
            "infra/infra-namespace -",
            "infra/public-listener differs",
            "shop/checkout-retries -",
            "shop/storefront stale",
            "-/platform-guardrails -",
        ]
    );
    assert!(
        text(&out.stderr).ends_with("error: --strict: 4 drift from their written status\n"),
        "{}",
        text(&out.stderr)
    );
}
