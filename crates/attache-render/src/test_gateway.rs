//! A small Gateway for the renderer's unit tests: listeners, routes with a
//! prefix match, backends, and an address book with `--backend` overrides.

use attache_contract::{
    Document, HttpRouteMatch, PathMatch, PathMatchType, RouteEntry, SCHEMA_VERSION,
};
use attache_core::topology::{BackendTarget, GatewayResolution, ListenerInfo, ObjectKey};

use crate::backends::AddressBook;

pub(crate) fn listener(name: &str, port: u16, protocol: &str) -> ListenerInfo {
    ListenerInfo {
        name: name.into(),
        port,
        protocol: protocol.into(),
        hostname: None,
        tls: None,
    }
}

pub(crate) fn entry(listener: &str, route: &str, prefix: &str) -> RouteEntry {
    RouteEntry {
        name: format!("{listener}/shop/{route}/0"),
        listener: listener.into(),
        listener_set: None,
        listener_set_kind: None,
        route_namespace: "shop".into(),
        route_name: route.into(),
        rule: "0".into(),
        matches: vec![HttpRouteMatch {
            path: Some(PathMatch {
                kind: PathMatchType::PathPrefix,
                value: prefix.into(),
            }),
            ..HttpRouteMatch::default()
        }],
        ..RouteEntry::default()
    }
}

pub(crate) fn backend(name: &str, weight: u32) -> BackendTarget {
    BackendTarget {
        namespace: "shop".into(),
        name: name.into(),
        port: Some(80),
        weight,
        request_headers: None,
        response_headers: None,
    }
}

pub(crate) fn resolution(
    listeners: Vec<ListenerInfo>,
    entries: Vec<(RouteEntry, Vec<BackendTarget>)>,
) -> GatewayResolution {
    let backends = entries
        .iter()
        .map(|(e, b)| (e.name.clone(), b.clone()))
        .collect();
    GatewayResolution {
        gateway: ObjectKey {
            namespace: "infra".into(),
            name: "edge".into(),
        },
        gateway_class: "attache".into(),
        listeners,
        document: Document {
            schema_version: SCHEMA_VERSION,
            gateway: "infra/edge".into(),
            options: Default::default(),
            routes: entries.into_iter().map(|(e, _)| e).collect(),
        },
        backends,
        route_request_headers: Default::default(),
    }
}

pub(crate) fn book(overrides: &[&str]) -> AddressBook {
    let mut book = AddressBook::default();
    for o in overrides {
        book.overrides.add(o).unwrap();
    }
    book
}
