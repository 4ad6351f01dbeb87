//! A folded route rule as a schema-1 entry (docs/contract.md).
//!
//! `to_entry` matches every [`FieldKey`] with no catch-all arm: a new
//! setting does not compile until this function carries it into the
//! document, so no value can be lost on the way to the filter.

use crate::attach::Attachment;
use crate::contract::{HeaderChanges, HttpRouteMatch, Retry, RouteEntry, Settings, Timeouts};
use crate::field::document::Settings as Carrying;
use crate::field::{FieldKey, FieldMap};
use crate::fold::Folded;
use crate::model::kinds::RouteKind;
use crate::supplier::Supplier;
use crate::who_applies::DataPlane;

/// What the steps after the fold changed, for the entry's `sources`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Adjusted {
    /// `backendRequestMs` was clamped to the request timeout.
    pub clamped: bool,
    /// GEP-1731's connection errors joined `retryOn` (crate::retries).
    pub connection_errors: bool,
}

/// The entry for one attachment. `adjusted` says what the steps after the
/// fold changed, which `sources` then says. `data_plane` says which fields
/// the route configuration applies instead (crate::data_plane).
pub(crate) fn to_entry(
    att: &Attachment<'_>,
    name: &str,
    folded: &Folded,
    suppliers: &[Supplier],
    adjusted: Adjusted,
    data_plane: DataPlane,
) -> RouteEntry {
    if att.leaf().is_none() {
        return RouteEntry::default();
    }
    let carried = data_plane.carried(folded, suppliers);
    let mut sources: std::collections::BTreeMap<String, String> = folded
        .fields
        .iter()
        .filter(|(key, _)| carried.contains_key(key))
        .map(|(key, e)| {
            let who: Vec<String> = e
                .suppliers
                .iter()
                .filter_map(|i| suppliers.get(*i))
                .map(Supplier::to_string)
                .collect();
            (key.to_string(), who.join(" + "))
        })
        .collect();
    if adjusted.clamped {
        if let Some(source) = sources.get_mut(&FieldKey::BackendRequestTimeout.to_string()) {
            source.push_str(", clamped to timeouts.requestMs");
        }
    }
    if adjusted.connection_errors {
        if let Some(source) = sources.get_mut(&FieldKey::RetryOn.to_string()) {
            source.push_str(" + connection errors (GEP-1731)");
        }
    }
    let mut entry = entry_of(att, name.to_string(), settings_of(&carried));
    entry.hostnames = att.hostnames.clone();
    entry.matches = att.matches.clone();
    entry.sources = sources;
    entry
}

/// From the fields the data plane carries (`DataPlane::carried`): what a
/// folded rule sets in its entry (the rest is the attachment's). Every
/// setting is named (no `..`): a new one does not compile until the
/// resolver writes it.
pub(crate) fn settings_of(carried: &FieldMap) -> Settings {
    let mut settings = Carrying::default();
    for (key, value) in carried {
        settings.carry(key, value);
    }
    Settings {
        timeouts: (settings.timeouts != Timeouts::default()).then_some(settings.timeouts),
        retry: (settings.retry != Retry::default()).then_some(settings.retry),
        request_headers: (!settings.request.is_empty()).then_some(settings.request),
        response_headers: (!settings.response.is_empty()).then_some(settings.response),
    }
}

/// From a rule's fold, for `data_plane`.
pub(crate) fn folded_settings(
    folded: &Folded,
    suppliers: &[Supplier],
    data_plane: DataPlane,
) -> Settings {
    settings_of(&data_plane.carried(folded, suppliers))
}

/// The rule's own request header changes that the plain-Envoy route
/// carries (`DataPlane::route_request_headers`).
pub(crate) fn route_request_changes(
    folded: &Folded,
    suppliers: &[Supplier],
    data_plane: DataPlane,
) -> Option<HeaderChanges> {
    settings_of(&data_plane.route_request_headers(folded, suppliers)).request_headers
}

/// What the data plane reads of an entry (`resolve_for_data_plane`): its
/// name, hostnames, matches and settings. The parts of its name are left
/// empty: the data-plane encodings never carry them, and at 10,000 routes
/// x 3 rules they were 150,000 strings a controller round copied and freed
/// (issue 30).
pub(crate) fn data_plane_entry(
    name: String,
    hostnames: Vec<String>,
    matches: Vec<HttpRouteMatch>,
    settings: &Settings,
) -> RouteEntry {
    RouteEntry {
        name,
        hostnames,
        matches,
        settings: settings.clone(),
        ..RouteEntry::default()
    }
}

/// The entry for one attachment with `settings`, without its hostnames,
/// matches (the caller's to copy or move) and `sources`.
pub(crate) fn entry_of(att: &Attachment<'_>, name: String, settings: Settings) -> RouteEntry {
    let Some((route, rule)) = att.leaf() else {
        return RouteEntry::default();
    };
    RouteEntry {
        name,
        listener: att.listener.name.clone(),
        listener_set: att.listener.set.as_ref().map(|s| s.key.to_string()),
        listener_set_kind: att
            .listener
            .set
            .as_ref()
            .filter(|s| s.kind == crate::model::SetKind::XListenerSet)
            .map(|s| s.kind.name().to_string()),
        route_namespace: route.key.namespace.clone(),
        route_name: route.key.name.clone(),
        rule: rule.label(),
        route_kind: (route.kind != RouteKind::Http).then(|| route.kind.name().to_string()),
        hostnames: Vec::new(),
        matches: Vec::new(),
        settings,
        sources: Default::default(),
    }
}
