//! Which data plane a document is for, and what that changes: who applies
//! an HTTPRoute rule's own header filters (docs/semantics.md, "Who applies
//! what").
//!
//! - Plain Envoy (`attache render envoy|ecds|xds`, `watch`): the rendered
//!   routes carry no header mutations, so the filter applies everything,
//!   the rule's own filters included.
//! - Istio (`attache render wasmplugin`): istiod already turns each rule's
//!   `RequestHeaderModifier`/`ResponseHeaderModifier` into the Envoy route's
//!   `request_headers_to_add`/`response_headers_to_add` (istio
//!   pilot/pkg/config/kube/gateway/conversion.go, `convertHTTPRoute`). A
//!   header operation only the rule itself supplies is left out of the
//!   document, or an `add` would arrive twice. Timeouts and retries stay:
//!   the filter's `x-envoy-*` request headers replace the route's values
//!   with the same or the policy's, so applying them twice changes nothing.

use crate::attach::Attachment;
use crate::diagnostic::Diagnostic;
use crate::field::{Direction, FieldKey, FieldMap, FieldValue};
use crate::fold::Folded;
use crate::supplier::{Source, Supplier};

/// Why `retry.backoff` does not take effect under Istio (docs/istio.md,
/// "Retry back-off").
const ISTIO_BACKOFF: &str = "Envoy has no request header for the retry back-off, so only the route configuration carries it, and under Istio that belongs to istiod: set it on the HTTPRoute's retry instead";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataPlane {
    /// The filter applies every setting (the rendered plain-Envoy routes).
    #[default]
    Envoy,
    /// istiod applies each rule's own header filters on the Envoy route.
    Istio,
}

impl DataPlane {
    /// Why a setting the document carries does not take effect on this
    /// data plane; None where it does. Exhaustive over [`FieldKey`]: a new
    /// setting does not compile until it is placed here, and the
    /// enforcement matrix (attache-render `tests/enforcement_matrix.rs`)
    /// checks each answer against what the filter and the route do.
    pub fn not_enforced(self, key: &FieldKey) -> Option<&'static str> {
        match key {
            // The filter sets these per request (x-envoy-* headers, header
            // operations) on either data plane.
            FieldKey::RequestTimeout
            | FieldKey::BackendRequestTimeout
            | FieldKey::RetryAttempts
            | FieldKey::RetryCodes
            | FieldKey::RetryOn
            | FieldKey::HeaderSet(..)
            | FieldKey::HeaderAdd(..)
            | FieldKey::HeaderRemove(_) => None,
            // Envoy has no request header for it: the rendered route
            // carries it, and under Istio the route is istiod's.
            FieldKey::RetryBackoff => match self {
                DataPlane::Envoy => None,
                DataPlane::Istio => Some(ISTIO_BACKOFF),
            },
        }
    }

    /// The folded fields the document carries for this data plane.
    pub(crate) fn carried(self, folded: &Folded, suppliers: &[Supplier]) -> FieldMap {
        folded_where(folded, suppliers, |key, who| !self.leaves_out(key, who))
    }

    /// Whether the document leaves `key` to the route configuration: under
    /// Istio, a header operation whose every supplier is the leaf rule's own
    /// filter.
    pub(crate) fn leaves_out(self, key: &FieldKey, suppliers: &[&Supplier]) -> bool {
        let header = matches!(
            key,
            FieldKey::HeaderSet(..) | FieldKey::HeaderAdd(..) | FieldKey::HeaderRemove(_)
        );
        self == DataPlane::Istio
            && header
            && !suppliers.is_empty()
            && suppliers
                .iter()
                .all(|s| s.leaf && matches!(s.source, Source::Inline { .. }))
    }

    /// On plain Envoy, the request header operations whose every supplier is
    /// a rule's own filter (the leaf's or a delegating parent's): the
    /// rendered route carries them, where Envoy applies them after the
    /// match, as Gateway API does. Applied by the filter, they would make
    /// Envoy match again (docs/semantics.md, "A policy never changes which
    /// rule serves a request"). The schema-1 document keeps them (it is
    /// what `resolve` shows); `GatewayResolution::filter_document` takes
    /// them out of what the filter gets. Empty under Istio, whose routes are
    /// istiod's.
    pub(crate) fn route_request_headers(self, folded: &Folded, suppliers: &[Supplier]) -> FieldMap {
        if self == DataPlane::Istio {
            return FieldMap::new();
        }
        folded_where(folded, suppliers, |key, who| {
            let request = matches!(
                key,
                FieldKey::HeaderSet(Direction::Request, _)
                    | FieldKey::HeaderAdd(Direction::Request, _)
                    | FieldKey::HeaderRemove(Direction::Request)
            );
            request
                && !who.is_empty()
                && who
                    .iter()
                    .all(|s| matches!(s.source, Source::Inline { .. }))
        })
    }
}

/// The folded fields whose key and suppliers `keep` accepts, with their
/// values: what the document carries, or what the route does.
fn folded_where(
    folded: &Folded,
    suppliers: &[Supplier],
    keep: impl Fn(&FieldKey, &[&Supplier]) -> bool,
) -> FieldMap {
    folded
        .fields
        .iter()
        .filter(|(key, e)| {
            let who: Vec<&Supplier> = e
                .suppliers
                .iter()
                .filter_map(|i| suppliers.get(*i))
                .collect();
            keep(key, &who)
        })
        .map(|(key, e)| (key.clone(), e.value.clone()))
        .collect()
}

/// Under Istio, Envoy's router applies the route's own request header
/// mutations after every HTTP filter, so where a policy's request header
/// operation names a header the rule's own filter also names, the rule's
/// wins on the wire. Said once per header, as a warning on the rule.
pub(crate) fn istio_request_conflicts(
    att: &Attachment<'_>,
    kept: &FieldMap,
    entry: &str,
) -> Vec<Diagnostic> {
    let Some((route, rule)) = att.leaf() else {
        return Vec::new();
    };
    let own = request_names(&rule.inline);
    let mut clashes: Vec<String> = request_names(kept)
        .into_iter()
        .filter(|name| own.contains(name))
        .collect();
    clashes.sort();
    clashes.dedup();
    clashes
        .into_iter()
        .map(|name| {
            Diagnostic::warning(format!(
                "entry {entry}: request header {name} gets a value from above the rule (a policy or a delegating parent rule), and {} rule {} names it in its own filter too; under Istio the route's filter is applied after the Attaché filter, so the rule's own value reaches the backend",
                route.object(),
                rule.label()
            ))
            .at(&route.meta.origin)
            .on(route.object())
            .field(format!("spec.rules[{}].filters", rule.index))
            .hint("change the header in one place: the policy or parent, or this rule's filter")
        })
        .collect()
}

/// The request header names a field map sets, adds or removes.
fn request_names(fields: &FieldMap) -> Vec<String> {
    let mut names = Vec::new();
    for (key, value) in fields {
        match (key, value) {
            (FieldKey::HeaderSet(Direction::Request, n), _)
            | (FieldKey::HeaderAdd(Direction::Request, n), _) => names.push(n.clone()),
            (FieldKey::HeaderRemove(Direction::Request), FieldValue::Words(w)) => {
                names.extend(w.iter().map(|n| n.to_ascii_lowercase()))
            }
            _ => {}
        }
    }
    names
}
