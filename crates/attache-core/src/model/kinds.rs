//! The kinds of object around a policy, as tables beside [`super::policy::KINDS`]:
//! the route kinds the resolver reads ([`ROUTE_KINDS`]), the kinds a
//! targetRef may name ([`TARGET_KINDS`]) and the levels above a route rule
//! ([`UPPER_LEVELS`]). The parser, attach, the fold, status and the CRD
//! schemas read these rows instead of testing kind names, so a new kind
//! (GRPCRoute, ListenerSet) is a new row and the code that must handle it
//! is found by the compiler (ARCHITECTURE.md, "Add a route kind", "Add a
//! level").

use super::gateway::{Gateway, Listener};
use super::listener_set::{SetKind, SetRef, X_GATEWAY_GROUP};
use super::policy::{Target, TargetKind};
use super::route::GATEWAY_GROUP;
use crate::topology::ObjectKey;

/// A route kind the resolver reads: one row of [`ROUTE_KINDS`] each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    /// This kind's row.
    pub fn info(self) -> &'static RouteKindInfo {
        match self {
            RouteKind::Http => &HTTP_ROUTE,
            RouteKind::Grpc => &GRPC_ROUTE,
        }
    }

    /// The Gateway API kind name (`HTTPRoute`, `GRPCRoute`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The kind a policy's targetRef names to target a route of this kind.
    pub fn target_kind(self) -> TargetKind {
        match self {
            RouteKind::Http => TargetKind::HttpRoute,
            RouteKind::Grpc => TargetKind::GrpcRoute,
        }
    }
}

/// One route kind the resolver reads.
#[derive(Debug)]
pub struct RouteKindInfo {
    pub kind: RouteKind,
    pub group: &'static str,
    pub name: &'static str,
    /// Versions read.
    pub versions: &'static [&'static str],
    /// Listener protocols that admit the kind when `allowedRoutes.kinds`
    /// is not set (Gateway API's defaults).
    pub protocols: &'static [&'static str],
    /// Whether a rule may delegate to routes of this kind and a route of it
    /// may be delegated to (HTTPRoute only, as in kgateway).
    pub delegates: bool,
}

impl RouteKindInfo {
    /// Whether a (group, kind) reference names this kind.
    pub fn is(&self, group: &str, kind: &str) -> bool {
        group == self.group && kind == self.name
    }
}

/// Every route kind read. An entry is one rule of one of these.
pub const ROUTE_KINDS: &[RouteKindInfo] = &[HTTP_ROUTE, GRPC_ROUTE];

pub const HTTP_ROUTE: RouteKindInfo = RouteKindInfo {
    kind: RouteKind::Http,
    group: GATEWAY_GROUP,
    name: "HTTPRoute",
    versions: &["v1", "v1beta1"],
    protocols: &["HTTP", "HTTPS"],
    delegates: true,
};

/// GRPCRoute (Standard since Gateway API v1.1): read like an HTTPRoute,
/// its method matches as paths (docs/semantics.md, "GRPCRoute").
pub const GRPC_ROUTE: RouteKindInfo = RouteKindInfo {
    kind: RouteKind::Grpc,
    group: GATEWAY_GROUP,
    name: crate::contract::GRPC_ROUTE_KIND,
    versions: &["v1"],
    protocols: &["HTTP", "HTTPS"],
    delegates: false,
};

/// The route kind a document's group, kind and version name, if read.
pub fn route_kind(group: &str, kind: &str, version: &str) -> Option<&'static RouteKindInfo> {
    ROUTE_KINDS
        .iter()
        .find(|r| r.is(group, kind) && r.versions.contains(&version))
}

/// One kind a targetRef may name.
#[derive(Debug)]
pub struct TargetKindInfo {
    pub kind: TargetKind,
    pub group: &'static str,
    pub name: &'static str,
    /// Lives in a namespace: a policy may target it only in its own.
    pub namespaced: bool,
    /// A `sectionName` may name a part of it (a listener, a rule).
    pub sections: bool,
}

/// Every kind a targetRef may name, one row per [`TargetKind`]
/// ([`TargetKind::info`] is a full match over them).
pub const TARGET_KINDS: &[TargetKindInfo] = &[
    GATEWAY_CLASS_TARGET,
    NAMESPACE_TARGET,
    GATEWAY_TARGET,
    LISTENER_SET_TARGET,
    X_LISTENER_SET_TARGET,
    HTTP_ROUTE_TARGET,
    GRPC_ROUTE_TARGET,
];

pub const GATEWAY_CLASS_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::GatewayClass,
    group: GATEWAY_GROUP,
    name: "GatewayClass",
    namespaced: false,
    sections: false,
};

pub const NAMESPACE_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::Namespace,
    group: "",
    name: "Namespace",
    namespaced: false,
    sections: false,
};

pub const GATEWAY_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::Gateway,
    group: GATEWAY_GROUP,
    name: "Gateway",
    namespaced: true,
    sections: true,
};

pub const LISTENER_SET_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::ListenerSet,
    group: GATEWAY_GROUP,
    name: "ListenerSet",
    namespaced: true,
    sections: true,
};

pub const X_LISTENER_SET_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::XListenerSet,
    group: X_GATEWAY_GROUP,
    name: "XListenerSet",
    namespaced: true,
    sections: true,
};

pub const HTTP_ROUTE_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::HttpRoute,
    group: HTTP_ROUTE.group,
    name: HTTP_ROUTE.name,
    namespaced: true,
    sections: true,
};

pub const GRPC_ROUTE_TARGET: TargetKindInfo = TargetKindInfo {
    kind: TargetKind::GrpcRoute,
    group: GRPC_ROUTE.group,
    name: GRPC_ROUTE.name,
    namespaced: true,
    sections: true,
};

impl TargetKind {
    /// This kind's row.
    pub fn info(self) -> &'static TargetKindInfo {
        match self {
            TargetKind::GatewayClass => &GATEWAY_CLASS_TARGET,
            TargetKind::Namespace => &NAMESPACE_TARGET,
            TargetKind::Gateway => &GATEWAY_TARGET,
            TargetKind::ListenerSet => &LISTENER_SET_TARGET,
            TargetKind::XListenerSet => &X_LISTENER_SET_TARGET,
            TargetKind::HttpRoute => &HTTP_ROUTE_TARGET,
            TargetKind::GrpcRoute => &GRPC_ROUTE_TARGET,
        }
    }

    /// The kind a (group, kind) names, if a policy may target it.
    pub fn find(group: &str, name: &str) -> Option<TargetKind> {
        TARGET_KINDS
            .iter()
            .find(|t| t.group == group && t.name == name)
            .map(|t| t.kind)
    }

    /// The kind named `name` in any group (status's ancestor refs carry the
    /// kind's name as written).
    pub fn named(name: &str) -> Option<TargetKind> {
        TARGET_KINDS.iter().find(|t| t.name == name).map(|t| t.kind)
    }

    /// The target a reference of this kind names. A namespaced kind needs
    /// the namespace; None without one.
    pub fn target(
        self,
        namespace: Option<&str>,
        name: &str,
        section: Option<String>,
    ) -> Option<Target> {
        let key = |ns: &str| ObjectKey {
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        Some(match self {
            TargetKind::GatewayClass => Target::GatewayClass(name.to_string()),
            TargetKind::Namespace => Target::Namespace(name.to_string()),
            TargetKind::Gateway => Target::Gateway(key(namespace?), section),
            TargetKind::HttpRoute => Target::Route(RouteKind::Http, key(namespace?), section),
            TargetKind::GrpcRoute => Target::Route(RouteKind::Grpc, key(namespace?), section),
            TargetKind::ListenerSet | TargetKind::XListenerSet => {
                let kind = match self {
                    TargetKind::XListenerSet => SetKind::XListenerSet,
                    _ => SetKind::ListenerSet,
                };
                Target::ListenerSet(
                    SetRef {
                        kind,
                        key: key(namespace?),
                    },
                    section,
                )
            }
        })
    }
}

/// A level above a route rule (docs/semantics.md, "The levels of one route
/// rule"). The route levels (rule, route, delegating parents) come from the
/// attachment's chain; these come from the listener and what holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpperLevel {
    /// The listener: a Gateway's (`Gateway g listener l`) or a
    /// ListenerSet's (`ListenerSet s listener l`).
    Listener,
    /// The ListenerSet of a set's listener; absent for a Gateway's own.
    ListenerSet,
    Gateway,
    Namespace,
    GatewayClass,
}

/// The upper levels, most specific first: the order the fold folds them in
/// and status counts them in. A set's listener reaches the Gateway level
/// (a Gateway policy reaches every attached set) but never the Gateway's
/// listeners; the Namespace stays the Gateway's (docs/semantics.md,
/// "ListenerSet").
pub const UPPER_LEVELS: &[UpperLevel] = &[
    UpperLevel::Listener,
    UpperLevel::ListenerSet,
    UpperLevel::Gateway,
    UpperLevel::Namespace,
    UpperLevel::GatewayClass,
];

impl UpperLevel {
    /// This level's target for a rule served by `listener` of `gw`; None
    /// when the listener has no such level (a Gateway's own listener has no
    /// ListenerSet).
    pub fn target(self, gw: &Gateway, listener: &Listener) -> Option<Target> {
        let section = Some(listener.name.clone());
        Some(match (self, &listener.set) {
            (UpperLevel::Listener, None) => Target::Gateway(gw.key.clone(), section),
            (UpperLevel::Listener, Some(set)) => Target::ListenerSet(set.clone(), section),
            (UpperLevel::ListenerSet, None) => return None,
            (UpperLevel::ListenerSet, Some(set)) => Target::ListenerSet(set.clone(), None),
            (UpperLevel::Gateway, _) => Target::Gateway(gw.key.clone(), None),
            (UpperLevel::Namespace, _) => Target::Namespace(gw.key.namespace.clone()),
            (UpperLevel::GatewayClass, _) => Target::GatewayClass(gw.class.clone()),
        })
    }
}

/// The upper levels' targets for one listener, most specific first.
pub fn upper_targets<'a>(
    gw: &'a Gateway,
    listener: &'a Listener,
) -> impl Iterator<Item = Target> + 'a {
    UPPER_LEVELS
        .iter()
        .filter_map(move |level| level.target(gw, listener))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_kind_has_one_row_and_is_found_by_its_name() {
        let every = [
            TargetKind::GatewayClass,
            TargetKind::Namespace,
            TargetKind::Gateway,
            TargetKind::HttpRoute,
            TargetKind::GrpcRoute,
            TargetKind::ListenerSet,
            TargetKind::XListenerSet,
        ];
        for kind in every {
            // Exhaustive: a new variant does not compile here; list it in
            // `every` too, so TARGET_KINDS is checked for its row.
            match kind {
                TargetKind::GatewayClass
                | TargetKind::Namespace
                | TargetKind::Gateway
                | TargetKind::HttpRoute
                | TargetKind::GrpcRoute
                | TargetKind::ListenerSet
                | TargetKind::XListenerSet => {}
            }
            assert_eq!(TARGET_KINDS.iter().filter(|t| t.kind == kind).count(), 1);
            assert_eq!(kind.info().kind, kind);
            let info = kind.info();
            assert_eq!(TargetKind::find(info.group, info.name), Some(kind));
        }
        assert_eq!(TARGET_KINDS.len(), every.len());
        assert_eq!(TargetKind::find("", "HTTPRoute"), None);
    }

    #[test]
    fn a_namespaced_target_needs_its_namespace() {
        assert_eq!(TargetKind::Gateway.target(None, "edge", None), None);
        assert_eq!(
            TargetKind::Namespace.target(None, "shop", None),
            Some(Target::Namespace("shop".into()))
        );
        assert!(route_kind(GATEWAY_GROUP, "HTTPRoute", "v1").is_some());
        assert!(route_kind(GATEWAY_GROUP, "HTTPRoute", "v1alpha2").is_none());
        assert_eq!(
            route_kind(GATEWAY_GROUP, "GRPCRoute", "v1").map(|r| r.kind),
            Some(RouteKind::Grpc)
        );
        for row in ROUTE_KINDS {
            assert_eq!(row.kind.info().name, row.name);
            assert_eq!(row.kind.target_kind().info().name, row.name);
        }
    }
}
