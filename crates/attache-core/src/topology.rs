//! What a data-plane renderer needs beyond the schema-1 document: the
//! Gateway's listeners and each route entry's backends.

use std::collections::BTreeMap;

use attache_contract::Document;

/// `<namespace>/<name>` of a namespaced object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    pub name: String,
    pub port: u16,
    /// `HTTP`, `HTTPS`, ...
    pub protocol: String,
    pub hostname: Option<String>,
    /// `tls` of an HTTPS listener: the Secrets it terminates with.
    pub tls: Option<ListenerTls>,
}

/// A listener's `tls` as the renderer needs it (Gateway API
/// `GatewayTLSConfig`, mode `Terminate`): its `certificateRefs`, each a
/// Secret of the Gateway's namespace, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerTls {
    pub certificate_refs: Vec<ObjectKey>,
}

/// One `backendRef` of a rule that points at a Service (not a child route).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendTarget {
    pub namespace: String,
    pub name: String,
    pub port: Option<u16>,
    /// Gateway API default 1.
    pub weight: u32,
    /// `backendRefs[].filters`: header changes for this backend's requests
    /// and responses only. The plain-Envoy render puts them on the
    /// backend's weighted cluster; under Istio, istiod applies them.
    pub request_headers: Option<crate::contract::HeaderChanges>,
    pub response_headers: Option<crate::contract::HeaderChanges>,
}

/// Everything resolved for one Gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayResolution {
    pub gateway: ObjectKey,
    pub gateway_class: String,
    pub listeners: Vec<ListenerInfo>,
    pub document: Document,
    /// Route entry name to the backends of the (leaf) rule it came from.
    pub backends: BTreeMap<String, Vec<BackendTarget>>,
    /// Route entry name to the rule's own request header changes, which the
    /// plain-Envoy route carries so that Envoy applies them after the match
    /// (docs/semantics.md, "Who applies what"); the document leaves them out.
    /// Empty for Istio and for a data-plane-only resolution.
    pub route_request_headers: BTreeMap<String, crate::contract::HeaderChanges>,
}

impl GatewayResolution {
    /// The document the plain-Envoy filter gets: [`Self::document`] less
    /// the request header changes the rendered routes carry
    /// ([`Self::route_request_headers`]), so each is applied once, by the
    /// router, after the match. The same document where there are none.
    pub fn filter_document(&self) -> Document {
        let mut document = self.document.clone();
        if self.route_request_headers.is_empty() {
            return document;
        }
        for entry in &mut document.routes {
            let (Some(own), Some(changes)) = (
                self.route_request_headers.get(&entry.name),
                entry.settings.request_headers.as_mut(),
            ) else {
                continue;
            };
            changes
                .set
                .retain(|h| !own.set.iter().any(|o| o.name == h.name));
            changes
                .add
                .retain(|h| !own.add.iter().any(|o| o.name == h.name));
            if !own.remove.is_empty() {
                // One field: the whole list is the rule's own.
                changes.remove.clear();
            }
            if changes.is_empty() {
                entry.settings.request_headers = None;
            }
        }
        document
    }
}
