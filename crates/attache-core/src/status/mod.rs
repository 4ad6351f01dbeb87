//! GEP-713 status for every policy: the `Accepted` condition (Accepted,
//! Invalid, TargetNotFound, Conflicted) and, per target, kgateway's finer
//! result as an `Attached` condition (Attached, Merged, Overridden).
//!
//! When Conflicted applies: at some target the policy supplies no field to
//! any route rule, and at least one of its values lost to another policy at
//! the same level with the same operation (both fill or both replace) and a
//! different value, i.e. it lost on precedence (weight, age, name) alone.
//! A policy that loses only part of its fields to a peer stays Accepted,
//! with `Attached` reason Merged naming the winner.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;

use crate::diagnostic::Diagnostic;
use crate::model::policy::TargetKind;
use crate::model::Inputs;
use crate::model::{Policy, Target, TargetRef};
use crate::topology::ObjectKey;
use counting::ContributionStats;

pub(crate) mod counting;
pub mod drift;
pub mod programmed;
pub mod routes;
pub mod shares;

pub use routes::{route_status, RouteStatus};
pub use shares::{gateway_share, policy_status_of_shares, GatewayShare, PolicyId};

pub const CONTROLLER_NAME: &str = "policy.attache.dev/attache";

/// The condition the 16th ancestor carries when others were left out.
pub const ANCESTOR_LIMIT_REACHED: &str = "attache.dev/AncestorLimitReached";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    pub api_version: String,
    pub kind: String,
    pub metadata: StatusMeta,
    pub status: PolicyStatusBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusMeta {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PolicyStatusBody {
    /// The policy as a whole.
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// One per targetRef (GEP-713 `PolicyStatus`: at most 16).
    #[schemars(length(max = 16))]
    pub ancestors: Vec<AncestorStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AncestorStatus {
    pub ancestor_ref: AncestorRef,
    pub controller_name: String,
    /// Gateway API `PolicyAncestorStatus`: at most 8, one per type.
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AncestorRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
}

/// A Kubernetes condition; `lastTransitionTime` is left out so that the
/// output is deterministic (the resolver has no clock). The controller adds
/// it when it writes, so the CRD's schema of a condition is
/// `metav1.Condition`'s whole ([`Condition::json_schema`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    /// "True" or "False".
    pub status: String,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The longest condition message `metav1.Condition` admits
/// (`+kubebuilder:validation:MaxLength=32768`); a longer one is cut, since
/// the API server would refuse the whole status write.
pub const MAX_MESSAGE_BYTES: usize = 32768;

/// The schema of `metav1.Condition` (k8s.io/apimachinery
/// pkg/apis/meta/v1/types.go, its kubebuilder markers), which Gateway API's
/// `PolicyAncestorStatus` uses: what the controller writes must survive the
/// API server's pruning and validation unchanged, `lastTransitionTime`
/// included.
impl JsonSchema for Condition {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Condition".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "A condition as metav1.Condition defines it; `attache status` leaves lastTransitionTime out, the controller writes it.",
            "properties": {
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When the condition's status last changed."
                },
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "message": {"type": "string", "maxLength": MAX_MESSAGE_BYTES}
            },
            "required": ["type", "status", "lastTransitionTime", "reason", "message"]
        })
    }
}

/// Status of every policy plus what resolving every Gateway reported.
#[derive(Debug, Clone)]
pub struct StatusReport {
    pub policies: Vec<PolicyStatus>,
    /// Each HTTPRoute's attachment per parentRef (`RouteParentStatus`).
    pub routes: Vec<RouteStatus>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Resolves every Gateway and reports each policy's conditions.
pub fn policy_status(inputs: &Inputs) -> StatusReport {
    policy_status_reaching(inputs).0
}

/// The (policy index, target) pairs through which policies reach one
/// Gateway (`crate::reach::targets_reaching`'s answer).
pub type Reaching = BTreeSet<(usize, Target)>;

/// [`policy_status`], and for each Gateway that could be resolved the
/// targets through which policies reach it, from the same fold (the
/// controller needs both; folding each Gateway once serves both).
pub fn policy_status_reaching(inputs: &Inputs) -> (StatusReport, BTreeMap<ObjectKey, Reaching>) {
    let shares: Vec<(&ObjectKey, GatewayShare)> = inputs
        .gateways
        .keys()
        .map(|key| (key, gateway_share(inputs, key)))
        .collect();
    let (mut report, reaching) =
        policy_status_of_shares(inputs, shares.iter().map(|(k, s)| (*k, s)));
    report.routes = route_status(inputs);
    (report, reaching)
}

/// The (policy, target) pairs of `gw`'s upper levels (each listener,
/// ListenerSet, the Gateway, its Namespace and GatewayClass): the half of
/// `crate::reach::targets_reaching` that needs no fold, for a caller that already has
/// the Gateway's contributions ([`policy_status_reaching`]).
pub fn upper_reaching(inputs: &Inputs, gw: &crate::model::Gateway) -> BTreeSet<(usize, Target)> {
    let mut found = BTreeSet::new();
    let mut upper = vec![
        Target::Gateway(gw.key.clone(), None),
        Target::Namespace(gw.key.namespace.clone()),
        Target::GatewayClass(gw.class.clone()),
    ];
    // Each listener's own levels: a Gateway's listener, or a ListenerSet
    // and its listener.
    upper.extend(
        gw.listeners
            .iter()
            .flat_map(|l| crate::model::levels::upper_targets(gw, l)),
    );
    for target in upper {
        for index in inputs.by_target.get(&target).into_iter().flatten() {
            found.insert((*index, target.clone()));
        }
    }
    found
}

pub(crate) fn condition(
    kind: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
) -> Condition {
    Condition {
        kind: kind.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: cut_message(message),
        observed_generation: generation,
    }
}

/// `message` within [`MAX_MESSAGE_BYTES`], cut at a character boundary
/// with a note that it was cut.
pub fn cut_message(mut message: String) -> String {
    const NOTE: &str = " [cut: too long for a condition]";
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES - NOTE.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message.push_str(NOTE);
    message
}

fn one(
    inputs: &Inputs,
    index: usize,
    policy: &Policy,
    stats: &BTreeMap<(usize, Target), ContributionStats>,
) -> PolicyStatus {
    let generation = policy.meta.generation;
    let head = |status| PolicyStatus {
        api_version: policy.kind.api_version(),
        kind: policy.kind.to_string(),
        metadata: StatusMeta {
            name: policy.meta.name.clone(),
            namespace: policy.meta.namespace.clone(),
        },
        status,
    };
    if !policy.is_valid() {
        let message = format!("dropped: {}", policy.invalid.join("; "));
        return head(PolicyStatusBody {
            conditions: vec![condition("Accepted", false, "Invalid", message, generation)],
            ancestors: Vec::new(),
        });
    }
    let mut ancestors = Vec::new();
    let (mut found, mut conflicted) = (0, 0);
    for tr in &policy.targets {
        let conditions = match &tr.resolved {
            None => vec![target_not_found(tr, generation)],
            Some(target) => {
                found += 1;
                let s = stats
                    .get(&(index, target.clone()))
                    .cloned()
                    .unwrap_or_default();
                let (accepted, is_conflicted) = accepted_at(target, &s, generation);
                conflicted += usize::from(is_conflicted);
                let unreached = || routes::unreached(inputs, target);
                vec![accepted, attached(&s, unreached, generation)]
            }
        };
        ancestors.push(AncestorStatus {
            ancestor_ref: ancestor_ref(policy, tr),
            controller_name: CONTROLLER_NAME.into(),
            conditions,
        });
    }
    if let (Some(last), false) = (ancestors.last_mut(), policy.beyond_limit.is_empty()) {
        last.conditions.push(limit_reached(policy, generation));
    }
    head(PolicyStatusBody {
        conditions: vec![summary(found, conflicted, generation)],
        ancestors,
    })
}

/// The 16th ancestor's note that the others were left out (GEP-713, 2025).
fn limit_reached(policy: &Policy, generation: Option<i64>) -> Condition {
    let left_out: Vec<String> = policy
        .beyond_limit
        .iter()
        .map(|tr| {
            let name = match (&policy.meta.namespace, TargetKind::named(&tr.kind)) {
                (Some(ns), Some(k)) if k.info().namespaced => format!("{ns}/{}", tr.name),
                _ => tr.name.clone(),
            };
            match &tr.section_name {
                Some(section) => format!("{} {name} {section}", tr.kind),
                None => format!("{} {name}", tr.kind),
            }
        })
        .collect();
    let message = format!(
        "at most {} ancestors (GEP-713); the policy does not apply under: {}",
        crate::model::policy::MAX_ANCESTORS,
        left_out.join(", ")
    );
    condition(
        ANCESTOR_LIMIT_REACHED,
        true,
        "AncestorLimitReached",
        message,
        generation,
    )
}

/// The target as status names it. Namespaced kinds live in the policy's own
/// namespace (cross-namespace refs are invalid).
fn ancestor_ref(policy: &Policy, tr: &TargetRef) -> AncestorRef {
    AncestorRef {
        group: tr.group.clone(),
        kind: tr.kind.clone(),
        name: tr.name.clone(),
        namespace: match TargetKind::named(&tr.kind) {
            Some(kind) if kind.info().namespaced => policy.meta.namespace.clone(),
            _ => None,
        },
        section_name: tr.section_name.clone(),
    }
}

fn target_not_found(tr: &TargetRef, generation: Option<i64>) -> Condition {
    let message = match (&tr.unusable, &tr.section_name) {
        (Some(why), _) => format!("attached to an invalid target resource: {why}"),
        (None, section) => not_there(tr, section.as_deref()),
    };
    condition("Accepted", false, "TargetNotFound", message, generation)
}

fn not_there(tr: &TargetRef, section: Option<&str>) -> String {
    match section {
        Some(section) => format!(
            "{} {} or its section {section} does not exist",
            tr.kind, tr.name
        ),
        None => format!("{} {} does not exist", tr.kind, tr.name),
    }
}

/// The `Accepted` condition at one target, and whether it is Conflicted
/// there (it lost every field, and to a same-level peer on precedence).
fn accepted_at(
    target: &Target,
    s: &ContributionStats,
    generation: Option<i64>,
) -> (Condition, bool) {
    let lost_all = s.fields_set > 0 && s.fields_lost == s.fields_set;
    if lost_all && !s.conflicts_with.is_empty() {
        let peers = s
            .conflicts_with
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let message = format!(
            "at {target} it ranks below {peers}, which set the same fields to other values"
        );
        return (
            condition("Accepted", false, "Conflicted", message, generation),
            true,
        );
    }
    let message = format!("attached to {target}");
    (
        condition("Accepted", true, "Accepted", message, generation),
        false,
    )
}

/// kgateway's finer result at one target: Attached, Merged or Overridden.
/// `unreached`: why no route rule is served through the target, asked
/// only when none is (status/routes.rs).
fn attached(
    s: &ContributionStats,
    unreached: impl FnOnce() -> String,
    generation: Option<i64>,
) -> Condition {
    let winners = s.winners.iter().cloned().collect::<Vec<_>>().join("; ");
    let lost_all = s.fields_set > 0 && s.fields_lost == s.fields_set;
    let refused = refused_words(s);
    if s.entries == 0 {
        condition("Attached", true, "Attached", unreached(), generation)
    } else if s.fields_lost == 0 && s.refused_changes == 0 {
        let message = format!(
            "supplies every field it sets on {} route rule(s)",
            s.entries
        );
        condition("Attached", true, "Attached", message, generation)
    } else if lost_all && winners.is_empty() {
        let message = format!(
            "nothing it sets is in effect{}",
            refused.replacen(";", ":", 1)
        );
        condition("Attached", false, "Refused", message, generation)
    } else if lost_all {
        let message = format!("every value it sets is overridden by {winners}{refused}");
        condition("Attached", false, "Overridden", message, generation)
    } else {
        let others = if winners.is_empty() {
            String::new()
        } else {
            format!("; the others went to {winners}")
        };
        let message = format!(
            "{} of {} field values over {} route rule(s) are in effect{others}{refused}",
            s.fields_set - s.fields_lost,
            s.fields_set,
            s.entries
        );
        condition("Attached", true, "Merged", message, generation)
    }
}

/// What the refusals of crate::steering add to a message: "" without any.
fn refused_words(s: &ContributionStats) -> String {
    if s.refused_changes == 0 {
        return String::new();
    }
    let named = s.refused.iter().cloned().collect::<Vec<_>>().join("; ");
    let more = s.refused_changes.saturating_sub(s.refused.len());
    let more = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    format!(
        "; {} request-header change(s) refused on route rules: {named}{more}",
        s.refused_changes
    )
}

/// The policy's own `Accepted` condition, over all its targets.
fn summary(found: usize, conflicted: usize, generation: Option<i64>) -> Condition {
    if found == 0 {
        let message = "none of its targets exists".into();
        condition("Accepted", false, "TargetNotFound", message, generation)
    } else if conflicted == found {
        let message = "it loses every value to a higher-ranked policy at the same level".into();
        condition("Accepted", false, "Conflicted", message, generation)
    } else {
        let message = format!("attached to {found} target(s)");
        condition("Accepted", true, "Accepted", message, generation)
    }
}
