//! Every route accounted for, in status: each HTTPRoute's attachment per
//! parentRef in the shape of Gateway API's `RouteParentStatus`
//! (apis/v1/shared_types.go: `parentRef`, `controllerName`, `conditions`),
//! and, for a policy whose target exists but reaches no rule, why
//! (docs/status.md). The reasons are `crate::route_parents`' (one home):
//! the attachment walk skipped the route for exactly that reason.

use schemars::JsonSchema;
use serde::Serialize;

use super::{condition, Condition, StatusMeta, CONTROLLER_NAME};
use crate::model::route::ParentRef;
use crate::model::{Gateway, HttpRoute, Inputs, SetState, Target};
use crate::route_parents::{refusal, refusal_text, Parent};
use crate::topology::ObjectKey;

/// An HTTPRoute with the status a controller would write for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteStatus {
    pub api_version: String,
    pub kind: String,
    pub metadata: StatusMeta,
    pub status: RouteStatusBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RouteStatusBody {
    /// One per parentRef, in `spec.parentRefs` order.
    pub parents: Vec<RouteParentStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    pub parent_ref: ParentReference,
    pub controller_name: String,
    pub conditions: Vec<Condition>,
}

/// Gateway API's `ParentReference`, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// Each route's status: HTTPRoutes, then GRPCRoutes, each in
/// `namespace/name` order.
pub fn route_status(inputs: &Inputs) -> Vec<RouteStatus> {
    inputs
        .all_routes()
        .map(|route| RouteStatus {
            api_version: "gateway.networking.k8s.io/v1".into(),
            kind: route.kind.name().into(),
            metadata: StatusMeta {
                name: route.key.name.clone(),
                namespace: Some(route.key.namespace.clone()),
            },
            status: RouteStatusBody {
                parents: route
                    .parent_refs
                    .iter()
                    .map(|p| RouteParentStatus {
                        parent_ref: ParentReference {
                            group: p.group.clone(),
                            kind: p.kind.clone(),
                            namespace: p.namespace.clone(),
                            name: p.name.clone(),
                            section_name: p.section_name.clone(),
                            port: p.port,
                        },
                        controller_name: CONTROLLER_NAME.into(),
                        conditions: vec![accepted(inputs, route, p, route.meta.generation)],
                    })
                    .collect(),
            },
        })
        .collect()
}

/// What one parentRef comes to: attached, refused (with Gateway API's
/// reason and the words of the route's warning), or outside the input.
enum Outcome {
    Attached(String),
    Refused(&'static str, String),
    Pending(String),
}

fn accepted(
    inputs: &Inputs,
    route: &HttpRoute,
    parent: &ParentRef,
    generation: Option<i64>,
) -> Condition {
    match outcome(inputs, route, parent) {
        Outcome::Attached(message) => condition("Accepted", true, "Accepted", message, generation),
        Outcome::Refused(reason, message) => {
            condition("Accepted", false, reason, message, generation)
        }
        // Gateway API's `Pending`: not (yet) reconciled against that parent.
        Outcome::Pending(message) => Condition {
            status: "Unknown".into(),
            ..condition("Accepted", false, "Pending", message, generation)
        },
    }
}

/// The Gateway a parentRef reaches (directly or through a ListenerSet), or
/// why there is none.
fn outcome(inputs: &Inputs, route: &HttpRoute, parent: &ParentRef) -> Outcome {
    let gateway_of = |key: &ObjectKey| inputs.gateways.get(key);
    let gw: &Gateway = if parent.is_gateway() {
        let key = ObjectKey {
            namespace: parent.namespace.clone(),
            name: parent.name.clone(),
        };
        match gateway_of(&key) {
            Some(gw) => gw,
            None => {
                return Outcome::Pending(format!(
                    "names Gateway {key}, which the input does not have"
                ));
            }
        }
    } else if let Some(set_ref) = parent.set() {
        let Some(set) = inputs.listener_sets.get(&set_ref) else {
            return Outcome::Pending(format!("names {set_ref}, which the input does not have"));
        };
        match (&set.state, gateway_of(&set.parent)) {
            (SetState::Attached, Some(gw)) => gw,
            (SetState::Detached(why) | SetState::Dropped(why), _) => {
                return Outcome::Refused(
                    "NoMatchingParent",
                    format!("names {set_ref}, which is not attached: {why}"),
                );
            }
            (SetState::Attached, None) => {
                return Outcome::Pending(format!(
                    "names {set_ref}, whose Gateway {} the input does not have",
                    set.parent
                ));
            }
        }
    } else if crate::model::kinds::HTTP_ROUTE.is(&parent.group, &parent.kind) {
        return delegated(inputs, route, parent);
    } else {
        return Outcome::Pending(format!(
            "names a {} of group {:?}, which Attaché does not read",
            parent.kind, parent.group
        ));
    };
    match refusal(inputs, gw, route, parent) {
        Some(r) => Outcome::Refused(r.reason(), refusal_text(route, parent, gw, &r).0),
        None => {
            let named = Parent::of(inputs, parent, gw).unwrap_or(Parent::Gateway);
            let count = crate::route_parents::serving(inputs, gw, route, parent).len();
            Outcome::Attached(format!(
                "attached to {} through {count} listener(s)",
                named.describe(gw)
            ))
        }
    }
}

/// A parentRef to an HTTPRoute (kgateway delegation): accepted when that
/// route exists and one of its rules delegates here.
fn delegated(inputs: &Inputs, route: &HttpRoute, parent: &ParentRef) -> Outcome {
    let key = ObjectKey {
        namespace: parent.namespace.clone(),
        name: parent.name.clone(),
    };
    let Some(up) = inputs.routes.get(&key) else {
        return Outcome::Pending(format!(
            "names HTTPRoute {key}, which the input does not have"
        ));
    };
    if up.rules.iter().any(|r| r.delegates.contains(&route.key)) {
        Outcome::Attached(format!("delegated to by HTTPRoute {key}"))
    } else {
        Outcome::Refused(
            "NoMatchingParent",
            format!("names HTTPRoute {key}, which has no rule that delegates to it"),
        )
    }
}

/// Why a target that exists reaches no route rule, in the words of the
/// routes' status: what each route does with its parentRefs, or that no
/// route names the Gateway, set or listener at all. Never "not yet".
pub(crate) fn unreached(inputs: &Inputs, target: &Target) -> String {
    match target {
        Target::Route(kind, key, _) => match inputs.routes_of(*kind).get(key) {
            Some(route) => route_unreached(inputs, route),
            None => format!("{} {key} is not in the input", kind.name()),
        },
        Target::Gateway(..) | Target::ListenerSet(..) => {
            let why: Vec<String> = inputs
                .all_routes()
                .flat_map(|route| {
                    route
                        .parent_refs
                        .iter()
                        .filter(|p| names(inputs, p, target))
                        .filter_map(move |p| match outcome(inputs, route, p) {
                            Outcome::Refused(_, message) | Outcome::Pending(message) => {
                                Some(format!("route {} {message}", route.key))
                            }
                            Outcome::Attached(_) => None,
                        })
                })
                .collect();
            if why.is_empty() {
                format!("no route attaches to {target}")
            } else {
                format!(
                    "no route rule is served through {target}: {}",
                    why.join("; ")
                )
            }
        }
        Target::Namespace(ns) => {
            format!("no Gateway in namespace {ns} serves a route rule")
        }
        Target::GatewayClass(class) => {
            format!("no Gateway of GatewayClass {class} serves a route rule")
        }
    }
}

/// Whether a parentRef names the Gateway, set or listener of `target`.
fn names(inputs: &Inputs, parent: &ParentRef, target: &Target) -> bool {
    let section_ok = |section: &Option<String>| {
        section
            .as_ref()
            .is_none_or(|s| parent.section_name.as_ref().is_none_or(|p| p == s))
    };
    match target {
        Target::Gateway(key, section) => {
            parent.is_gateway()
                && parent.namespace == key.namespace
                && parent.name == key.name
                && section_ok(section)
        }
        Target::ListenerSet(set, section) => {
            parent.set().as_ref() == Some(set)
                && inputs.listener_sets.contains_key(set)
                && section_ok(section)
        }
        _ => false,
    }
}

/// Why `route` has no entry, in its parentRefs' own words (`attache
/// explain` on a route nothing serves); None when the input lacks it.
pub fn why_no_entry(inputs: &Inputs, route: &ObjectKey) -> Option<String> {
    inputs.routes.get(route).map(|r| route_unreached(inputs, r))
}

fn route_unreached(inputs: &Inputs, route: &HttpRoute) -> String {
    if route.parent_refs.is_empty() {
        return format!("route {} has no parentRefs", route.key);
    }
    let why: Vec<String> = route
        .parent_refs
        .iter()
        .map(|p| match outcome(inputs, route, p) {
            Outcome::Refused(_, message) | Outcome::Pending(message) => {
                format!("route {} {message}", route.key)
            }
            Outcome::Attached(message) => {
                format!("route {} is {message} but serves no rule there", route.key)
            }
        })
        .collect();
    why.join("; ")
}
