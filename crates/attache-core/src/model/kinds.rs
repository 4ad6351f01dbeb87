//! The kinds of object around a policy, as tables beside [`super::policy::KINDS`]:
//! the route kinds the resolver reads ([`ROUTE_KINDS`]), the kinds a
//! targetRef may name ([`TARGET_KINDS`]), the two ListenerSet kinds
//! ([`SetKind`]) and the API groups. The parser, attach, the fold, status
//! and the CRD schemas read these rows instead of testing kind names, so a
//! new kind (GRPCRoute, ListenerSet) is a new row and the code that must
//! handle it is found by the compiler (ARCHITECTURE.md, "Add a route kind",
//! "Add a level"). A leaf of the model: it imports no other model file, so
//! every one of them may read it. The levels above a rule are
//! `super::levels`.

use std::fmt;

use crate::topology::ObjectKey;

pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// The experimental group; only its `XListenerSet` is read.
pub const X_GATEWAY_GROUP: &str = "gateway.networking.x-k8s.io";

/// The two kinds of a ListenerSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetKind {
    ListenerSet,
    XListenerSet,
}

impl SetKind {
    pub const ALL: [SetKind; 2] = [SetKind::ListenerSet, SetKind::XListenerSet];

    pub fn name(self) -> &'static str {
        match self {
            SetKind::ListenerSet => "ListenerSet",
            SetKind::XListenerSet => "XListenerSet",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            SetKind::ListenerSet => GATEWAY_GROUP,
            SetKind::XListenerSet => X_GATEWAY_GROUP,
        }
    }

    /// The version read.
    pub fn version(self) -> &'static str {
        match self {
            SetKind::ListenerSet => "v1",
            SetKind::XListenerSet => "v1alpha1",
        }
    }

    /// The kind a (group, kind) names, when it is one of the two.
    pub fn find(group: &str, kind: &str) -> Option<SetKind> {
        SetKind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.name() == kind)
    }

    /// The kind named `kind` in any group (a parentRef that pairs it with
    /// the wrong group is still recognisable, and warned about).
    pub fn named(kind: &str) -> Option<SetKind> {
        SetKind::ALL.into_iter().find(|k| k.name() == kind)
    }
}

/// Which ListenerSet: its kind and `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetRef {
    pub kind: SetKind,
    pub key: ObjectKey,
}

impl fmt::Display for SetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.name(), self.key)
    }
}

/// The kinds of object a targetRef may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    GatewayClass,
    Namespace,
    Gateway,
    HttpRoute,
    GrpcRoute,
    /// `gateway.networking.k8s.io` ListenerSet (sectionName = its listener).
    ListenerSet,
    /// `gateway.networking.x-k8s.io` XListenerSet, read alike.
    XListenerSet,
}

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Target;

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
