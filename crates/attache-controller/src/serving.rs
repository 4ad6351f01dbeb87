//! Which Gateways the controller serves, and why each other one is not
//! (docs/semantics.md section 11): a Gateway is served when its
//! GatewayClass names our `--controller-name` and its own controller has
//! not refused it. Every Gateway left out has a [`NotServed`] reason, which
//! the adapter reports once in the log, a metric and an Event, so that a
//! controller serving nothing never looks idle and content.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use attache_core::topology::ObjectKey;
use serde_json::Value;

use crate::snapshot::Snapshot;

/// Why a Gateway in scope is not served.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NotServed {
    /// Its GatewayClass names another controller.
    OtherController {
        class: String,
        controller_name: String,
        ours: String,
    },
    /// No GatewayClass of the name it gives.
    ClassMissing { class: String },
    /// Its own controller wrote `Accepted: False` on it.
    NotAccepted { reason: String, message: String },
}

impl NotServed {
    /// The metric's `reason` label and the Event's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            NotServed::OtherController { .. } => "OtherController",
            NotServed::ClassMissing { .. } => "GatewayClassMissing",
            NotServed::NotAccepted { .. } => "NotAccepted",
        }
    }

    /// Every reason, for metrics that report zero as well.
    pub const REASONS: [&'static str; 3] =
        ["OtherController", "GatewayClassMissing", "NotAccepted"];
}

impl fmt::Display for NotServed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotServed::OtherController {
                class,
                controller_name,
                ours,
            } => write!(
                f,
                "not served by attache: GatewayClass {class} has controllerName {controller_name}, \
                 this controller serves {ours} (hint: start it with --controller-name {controller_name} \
                 to serve this class)"
            ),
            NotServed::ClassMissing { class } => write!(
                f,
                "not served by attache: GatewayClass {class} does not exist (hint: create it, or fix \
                 spec.gatewayClassName)"
            ),
            NotServed::NotAccepted { reason, message } => write!(
                f,
                "not served by attache: its controller did not accept it (Accepted False, {reason}: \
                 {message})"
            ),
        }
    }
}

/// The Gateways in scope: served ones with their uid (for the
/// ownerReference), and the others with the reason.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Serving {
    pub served: BTreeMap<ObjectKey, String>,
    pub not_served: BTreeMap<ObjectKey, NotServed>,
}

/// Sorts every Gateway of `snapshot` whose namespace `in_scope` admits.
pub fn serving(
    controller_name: &str,
    snapshot: &Snapshot,
    in_scope: impl Fn(Option<&str>) -> bool,
) -> Serving {
    let classes: BTreeMap<&str, &str> = snapshot
        .docs
        .iter()
        .filter(|d| d.doc.value["kind"] == "GatewayClass")
        .filter_map(|d| {
            Some((
                d.doc.value["metadata"]["name"].as_str()?,
                d.doc.value["spec"]["controllerName"]
                    .as_str()
                    .unwrap_or_default(),
            ))
        })
        .collect();
    let mut out = Serving::default();
    for gateway in snapshot.docs.iter().map(|d| &d.doc.value) {
        if gateway["kind"] != "Gateway" || !in_scope(gateway["metadata"]["namespace"].as_str()) {
            continue;
        }
        let key = crate::snapshot::key_of(gateway);
        let class = gateway["spec"]["gatewayClassName"]
            .as_str()
            .unwrap_or_default();
        let verdict = match classes.get(class) {
            None => Err(NotServed::ClassMissing {
                class: class.to_string(),
            }),
            Some(name) if *name != controller_name => Err(NotServed::OtherController {
                class: class.to_string(),
                controller_name: name.to_string(),
                ours: controller_name.to_string(),
            }),
            Some(_) => refused(gateway).map_or(Ok(()), Err),
        };
        match verdict {
            Ok(()) => {
                let uid = gateway["metadata"]["uid"].as_str().unwrap_or_default();
                out.served.insert(key, uid.to_string());
            }
            Err(why) => {
                out.not_served.insert(key, why);
            }
        }
    }
    out
}

/// `Accepted: False` written on the Gateway by its controller (a Gateway
/// not yet looked at has no condition, and is served).
fn refused(gateway: &Value) -> Option<NotServed> {
    let accepted = gateway["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Accepted")?;
    (accepted["status"] == "False").then(|| NotServed::NotAccepted {
        reason: accepted["reason"].as_str().unwrap_or_default().to_string(),
        message: accepted["message"].as_str().unwrap_or_default().to_string(),
    })
}

/// The one line for a controller that serves no Gateway: which
/// controllerNames the cluster's GatewayClasses do name.
pub fn serving_nothing(controller_name: &str, snapshot: &Snapshot) -> String {
    let names: BTreeSet<&str> = snapshot
        .docs
        .iter()
        .filter(|d| d.doc.value["kind"] == "GatewayClass")
        .filter_map(|d| d.doc.value["spec"]["controllerName"].as_str())
        .collect();
    let names: Vec<&str> = names.into_iter().collect();
    format!(
        "serving no Gateway: no GatewayClass names controllerName {controller_name}; the cluster's \
         GatewayClasses name [{}] (hint: --controller-name)",
        names.join(", ")
    )
}
