//! Documents the renderer's unit tests share.

use attache_contract::{Document, RouteEntry, Timeouts, SCHEMA_VERSION};

/// One route with a request timeout and the provenance the data plane must
/// not receive.
pub(crate) fn one_route_document(request_ms: u64) -> Document {
    Document {
        schema_version: SCHEMA_VERSION,
        gateway: "infra/edge".into(),
        options: Default::default(),
        routes: vec![RouteEntry {
            name: "http/shop/a/0".into(),
            listener: "http".into(),
            listener_set: None,
            listener_set_kind: None,
            route_namespace: "shop".into(),
            route_name: "a".into(),
            rule: "0".into(),
            sources: [("timeouts.requestMs".into(), "RoutePolicy shop/slow".into())].into(),
            settings: attache_contract::Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(request_ms),
                    ..Timeouts::default()
                }),
                ..Default::default()
            },
            ..RouteEntry::default()
        }],
    }
}

/// Gateway infra/edge of class attache, without listeners or backends,
/// carrying `document`: what the Istio objects are rendered from.
pub(crate) fn edge_resolution(document: Document) -> attache_core::topology::GatewayResolution {
    attache_core::topology::GatewayResolution {
        gateway: attache_core::topology::ObjectKey {
            namespace: "infra".into(),
            name: "edge".into(),
        },
        gateway_class: "attache".into(),
        listeners: vec![],
        document,
        backends: Default::default(),
        route_request_headers: Default::default(),
    }
}

/// [`edge_resolution`] of one route, `http/shop/a/0`, with no setting: what
/// the renders of the Istio and Envoy Gateway objects are checked on.
pub(crate) fn edge_resolution_of_one_route() -> attache_core::topology::GatewayResolution {
    edge_resolution(Document {
        schema_version: SCHEMA_VERSION,
        gateway: "infra/edge".into(),
        options: Default::default(),
        routes: vec![RouteEntry {
            name: "http/shop/a/0".into(),
            ..RouteEntry::default()
        }],
    })
}
