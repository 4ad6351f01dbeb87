//! `attache status`: the table, YAML and JSON outputs, the filters and
//! `--strict`, on real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{attache, fixture, text};

fn both() -> Vec<String> {
    vec![
        "-f".into(),
        fixture("shop.yaml").display().to_string(),
        "-f".into(),
        fixture("bad-policies.yaml").display().to_string(),
    ]
}

fn run(extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = vec!["status".into()];
    args.extend(both());
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    attache(&refs)
}

#[test]
fn the_table_has_one_line_per_policy_then_one_per_route_parent_in_kubectl_columns() {
    let out = run(&["-o", "table"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "\
KIND                 NAMESPACE   NAME             ACCEPTED   REASON           TARGETS                    IN EFFECT   PROGRAMMED
RoutePolicy          infra       edge-limits      True       Accepted         Gateway/edge               Attached    Programmed
RoutePolicy          shop        api-retries      True       Accepted         HTTPRoute/storefront:api   Attached    Programmed
RoutePolicy          shop        checkout-fast    True       Accepted         HTTPRoute/api:checkout     Attached    Programmed
RoutePolicy          shop        codes            False      Invalid          -                          -           -
RoutePolicy          shop        fast             False      Invalid          -                          -           -
RoutePolicy          shop        ghost            False      TargetNotFound   HTTPRoute/nope             -           -
RoutePolicy          shop        header           False      Invalid          -                          -           -
RoutePolicy          shop        mixed            False      Invalid          -                          -           -
RoutePolicy          shop        reach            False      Invalid          -                          -           -
RoutePolicy          shop        still-good       True       Accepted         HTTPRoute/api              Attached    Programmed
RoutePolicy          shop        typo             False      Invalid          -                          -           -
ClusterRoutePolicy   -           class-defaults   True       Accepted         GatewayClass/attache       Merged      PartiallyProgrammed

ROUTE       NAMESPACE   NAME         PARENT              ACCEPTED   REASON
HTTPRoute   shop        api          -                   -          -
HTTPRoute   shop        storefront   Gateway/edge:http   True       Accepted
"
    );
}

#[test]
fn yaml_is_the_default_off_a_terminal_and_json_is_the_same_list() {
    let yaml = run(&[]);
    assert_eq!(yaml.status.code(), Some(0));
    let from_yaml: serde_json::Value = serde_yaml_ng::from_slice(&yaml.stdout).unwrap();
    let json = run(&["-o", "json"]);
    let from_json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(from_yaml, from_json);
    assert_eq!(from_json["kind"], "List");
    // 12 policies, then the 2 HTTPRoutes.
    assert_eq!(from_json["items"].as_array().unwrap().len(), 14);
}

/// What a controller writes to the status subresource, per policy: the
/// conditions and GEP-713 PolicyAncestorStatus entries, with the 2025 GEP's
/// Programmed after Attached, no lastTransitionTime (docs/status.md says why).
#[test]
fn json_items_carry_the_status_subresource_content_exactly() {
    let out = run(&["-o", "json", "--name", "checkout-fast"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        list["items"],
        serde_json::json!([{
            "apiVersion": "policy.attache.dev/v1alpha1",
            "kind": "RoutePolicy",
            "metadata": {"name": "checkout-fast", "namespace": "shop"},
            "status": {
                "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                                "message": "attached to 1 target(s)"}],
                "ancestors": [{
                    "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                                    "name": "api", "namespace": "shop", "sectionName": "checkout"},
                    "controllerName": "policy.attache.dev/attache",
                    "conditions": [
                        {"type": "Accepted", "status": "True", "reason": "Accepted",
                         "message": "attached to HTTPRoute shop/api rule checkout"},
                        {"type": "Attached", "status": "True", "reason": "Attached",
                         "message": "supplies every field it sets on 1 route rule(s)"},
                        {"type": "Programmed", "status": "True", "reason": "Programmed",
                         "message": "supplies every field it sets on 1 route rule(s); strategy: Custom (field defaults)"}
                    ]
                }]
            }
        }])
    );
}

#[test]
fn filters_by_name_namespace_and_gateway() {
    let names = |out: std::process::Output| -> Vec<String> {
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(run(&["-o", "json", "--name", "ghost"])), ["ghost"]);
    assert_eq!(names(run(&["-o", "json", "-n", "infra"])), ["edge-limits"]);
    // Through the Gateway: its own policy, the class's, and the route
    // policies of the routes it serves; invalid ones that name no
    // Gateway target are not its own; then the routes whose parentRefs
    // name it.
    assert_eq!(
        names(run(&["-o", "json", "--gateway", "infra/edge"])),
        [
            "edge-limits",
            "api-retries",
            "checkout-fast",
            "still-good",
            "class-defaults",
            "storefront"
        ]
    );
    let missing = run(&["--gateway", "infra/nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("error: Gateway infra/nope is not in the input"));
}

#[test]
fn strict_fails_when_a_shown_policy_is_not_accepted() {
    let out = run(&["-o", "table", "--strict"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).ends_with(
        "error: --strict: 8 problem(s) reported above; 7 of the policies shown are not Accepted\n"
    ));
    // examples/shop is clean: --strict passes.
    let clean = attache(&["status", "-f", "examples/shop", "--strict", "-o", "table"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stderr));
}

/// A route's status per parentRef, as Gateway API's `RouteParentStatus`:
/// one that reaches a listener, one that names no listener of the Gateway,
/// one whose Gateway is not in the input.
#[test]
fn route_items_carry_route_parent_status_per_parent_ref() {
    let dir = support::scratch("status-routes");
    let shop = std::fs::read_to_string(fixture("shop.yaml")).unwrap();
    let broken = shop.replacen(
        "sectionName: http",
        "sectionName: http\n  - {name: edge, namespace: infra, sectionName: htpp}\n  - {name: edg, namespace: infra}",
        1,
    );
    assert_ne!(
        broken, shop,
        "the fixture's storefront names sectionName http"
    );
    let file = dir.join("shop.yaml");
    std::fs::write(&file, broken).unwrap();
    let out = attache(&[
        "status",
        "-f",
        file.to_str().unwrap(),
        "-o",
        "json",
        "--name",
        "storefront",
    ]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let condition = |status: &str, reason: &str, message: &str| serde_json::json!([{"type": "Accepted", "status": status, "reason": reason, "message": message}]);
    assert_eq!(
        list["items"],
        serde_json::json!([{
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "storefront", "namespace": "shop"},
            "status": {"parents": [
                {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "infra",
                               "name": "edge", "sectionName": "http"},
                 "controllerName": "policy.attache.dev/attache",
                 "conditions": condition("True", "Accepted", "attached to Gateway infra/edge through 1 listener(s)")},
                {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "infra",
                               "name": "edge", "sectionName": "htpp"},
                 "controllerName": "policy.attache.dev/attache",
                 "conditions": condition("False", "NoMatchingParent",
                    "attaches to no listener of Gateway infra/edge (sectionName htpp): NoMatchingParent: no listener is named htpp")},
                {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "infra",
                               "name": "edg"},
                 "controllerName": "policy.attache.dev/attache",
                 "conditions": condition("Unknown", "Pending", "names Gateway infra/edg, which the input does not have")}
            ]}
        }])
    );
    let table = attache(&[
        "status",
        "-f",
        file.to_str().unwrap(),
        "-o",
        "table",
        "--name",
        "storefront",
    ]);
    assert_eq!(
        text(&table.stdout),
        "No policies found.\n\n\
ROUTE       NAMESPACE   NAME         PARENT              ACCEPTED   REASON
HTTPRoute   shop        storefront   Gateway/edge:http   True       Accepted
HTTPRoute   shop        storefront   Gateway/edge:htpp   False      NoMatchingParent
HTTPRoute   shop        storefront   Gateway/edg         Unknown    Pending
"
    );
}
