use super::*;
use attache_core::source::{Origin, SourceDoc};
use serde_json::json;

fn target(namespace: &str, name: &str, port: Option<u16>) -> BackendTarget {
    BackendTarget {
        namespace: namespace.into(),
        name: name.into(),
        port,
        weight: 1,
        request_headers: None,
        response_headers: None,
    }
}

fn book(values: Vec<serde_json::Value>) -> AddressBook {
    let docs: Vec<SourceDoc> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| SourceDoc {
            origin: Origin {
                file: "in.yaml".into(),
                document: i + 1,
                item: None,
            },
            value,
        })
        .collect();
    AddressBook {
        overrides: Overrides::default(),
        manifests: Manifests::index(&docs),
    }
}

#[test]
fn overrides_parse_and_bad_ones_say_what_is_valid() {
    let mut overrides = Overrides::default();
    overrides.add("shop/web=127.0.0.1:9000").unwrap();
    overrides.add("*=[::1]:9001").unwrap();
    assert_eq!(
        overrides.by_service[&ObjectKey {
            namespace: "shop".into(),
            name: "web".into()
        }],
        Endpoint {
            host: "127.0.0.1".into(),
            port: 9000
        }
    );
    assert_eq!(
        overrides.every,
        Some(Endpoint {
            host: "::1".into(),
            port: 9001
        })
    );
    for bad in [
        "shop/web",
        "web=1.2.3.4:80",
        "shop/web=1.2.3.4",
        "shop/web=1.2.3.4:0",
        "a/b/c=h:1",
    ] {
        let err = overrides.add(bad).unwrap_err().to_string();
        assert!(err.starts_with(&format!("--backend {bad}: ")), "{err}");
        assert!(err.contains("expected NAMESPACE/NAME=HOST:PORT"), "{err}");
    }
}

#[test]
fn an_override_beats_the_manifests() {
    let mut book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "10.0.0.1"}})]);
    book.overrides.add("shop/web=localhost:9000").unwrap();
    let cluster = book
        .cluster_for(&target("shop", "web", Some(80)), "r")
        .unwrap();
    assert_eq!(cluster.name, "shop/web/80");
    assert_eq!(
        cluster.endpoints,
        [Endpoint {
            host: "localhost".into(),
            port: 9000
        }]
    );
    assert_eq!(cluster.source, AddressSource::Override);
}

#[test]
fn slices_are_matched_through_the_service_port_name() {
    let book = book(vec![
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 81}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
            "ports": [{"name": "admin", "port": 9081}, {"name": "http", "port": 9080}],
            "endpoints": [{"addresses": ["10.1.0.2"]}, {"addresses": ["10.1.0.1"]}]}),
    ]);
    let cluster = book
        .cluster_for(&target("shop", "web", Some(80)), "r")
        .unwrap();
    assert_eq!(cluster.source, AddressSource::EndpointSlice);
    assert_eq!(
        cluster.endpoints,
        [
            Endpoint {
                host: "10.1.0.1".into(),
                port: 9080
            },
            Endpoint {
                host: "10.1.0.2".into(),
                port: 9080
            }
        ]
    );
}

#[test]
fn external_name_and_cluster_ip_use_the_backend_ref_port() {
    let book = book(vec![
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "shop"},
            "spec": {"type": "ExternalName", "externalName": "backend"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ip", "namespace": "shop"},
            "spec": {"clusterIP": "10.0.0.9", "ports": [{"port": 8080}]}}),
    ]);
    let ext = book
        .cluster_for(&target("shop", "ext", Some(9000)), "r")
        .unwrap();
    assert_eq!(
        (ext.endpoints[0].to_string(), ext.source),
        ("backend:9000".into(), AddressSource::ExternalName)
    );
    let ip = book
        .cluster_for(&target("shop", "ip", Some(8080)), "r")
        .unwrap();
    assert_eq!(
        (ip.endpoints[0].to_string(), ip.source),
        ("10.0.0.9:8080".into(), AddressSource::ClusterIp)
    );
}

#[test]
fn a_backend_without_address_is_named_with_its_route() {
    let book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "headless", "namespace": "shop"}, "spec": {"clusterIP": "None"}})]);
    let err = book
        .cluster_for(&target("shop", "missing", Some(80)), "http/shop/web/0")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("backend shop/missing/80 (used by route http/shop/web/0) has no address: no Service shop/missing in the input"), "{err}");
    assert!(err.contains("--backend shop/missing=HOST:PORT"), "{err}");
    let err = book
        .cluster_for(&target("shop", "headless", Some(80)), "r")
        .unwrap_err()
        .to_string();
    assert!(err.contains("is headless"), "{err}");
    let err = book
        .cluster_for(&target("shop", "headless", None), "r")
        .unwrap_err()
        .to_string();
    assert!(err.contains("has no port"), "{err}");
}

#[test]
fn star_sends_every_backend_without_its_own_override_to_one_address() {
    let mut book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ext", "namespace": "a"}, "spec": {"type": "ExternalName", "externalName": "backend"}})]);
    book.overrides.add("*=127.0.0.1:9000").unwrap();
    book.overrides.add("a/own=127.0.0.1:9001").unwrap();
    let endpoint = |name: &str| {
        book.cluster_for(&target("a", name, Some(1)), "r")
            .unwrap()
            .endpoints[0]
            .to_string()
    };
    assert_eq!(endpoint("ext"), "127.0.0.1:9000", "beats the manifest");
    assert_eq!(endpoint("unknown"), "127.0.0.1:9000");
    assert_eq!(
        endpoint("own"),
        "127.0.0.1:9001",
        "a named override beats *"
    );
}

#[test]
fn a_broken_service_manifest_is_reported_for_the_route_that_uses_it() {
    let book = book(vec![json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "ten"}})]);
    let err = book
        .cluster_for(&target("shop", "web", Some(80)), "http/shop/web/0")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "backend shop/web/80 (used by route http/shop/web/0): in.yaml (document 1): Service shop/web: field spec.clusterIP: is 'ten'; expected an IP address or 'None'"
    );
}
