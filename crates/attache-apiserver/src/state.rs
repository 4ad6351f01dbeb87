//! Everything behind the one lock: the store, the served kinds, the list
//! snapshots that `continue` tokens point into, and the reads (get, list
//! with `limit`/`continue`).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::kinds::{KindSpec, Kinds};
use crate::selector::Selector;
use crate::store::Store;

/// How many paginated lists keep their snapshot at once.
const PAGED_LISTS: usize = 64;

/// The state of the stand-in.
#[derive(Debug)]
pub struct State {
    pub store: Store,
    pub kinds: Kinds,
    pub require_namespaces: bool,
    pub max_object_bytes: usize,
    /// Paginated lists: the items after the first page, as they were when
    /// it was served, so the pages are one consistent list (api-concepts,
    /// "Retrieving large results sets in chunks").
    pages: BTreeMap<u64, (u64, Vec<Arc<Value>>)>,
    next_page_id: u64,
}

/// One list request.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub namespace: Option<String>,
    pub selector: Selector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// `resourceVersion` with `resourceVersionMatch=Exact`.
    pub exact_rv: Option<u64>,
}

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Arc<Value>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: usize,
}

fn expired() -> ApiError {
    ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
}

impl State {
    pub fn new(history: usize, kinds: Kinds) -> Self {
        State {
            store: Store::new(history),
            kinds,
            require_namespaces: true,
            max_object_bytes: 1_572_864,
            pages: BTreeMap::new(),
            next_page_id: 0,
        }
    }

    /// A page of the objects of `kind` that `query` selects.
    pub fn list(&mut self, kind: &KindSpec, query: &ListQuery) -> Result<Page, ApiError> {
        if let Some(token) = &query.continue_token {
            return self.next_page(token, query.limit);
        }
        if let Some(rv) = query.exact_rv {
            if rv < self.store.compacted() {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    self.store.compacted()
                )));
            }
        }
        let items: Vec<Arc<Value>> = self
            .store
            .list(&kind.resource(), query.namespace.as_deref())
            .into_iter()
            .filter(|o| query.selector.matches(o))
            .collect();
        let rv = self.store.rv();
        Ok(self.paginate(rv, items, query.limit))
    }

    fn paginate(&mut self, rv: u64, mut items: Vec<Arc<Value>>, limit: Option<usize>) -> Page {
        let limit = limit.filter(|l| *l > 0 && *l < items.len());
        let Some(limit) = limit else {
            return Page {
                items,
                rv,
                continue_token: None,
                remaining: 0,
            };
        };
        let rest = items.split_off(limit);
        let remaining = rest.len();
        self.next_page_id += 1;
        let id = self.next_page_id;
        self.pages.insert(id, (rv, rest));
        while self.pages.len() > PAGED_LISTS {
            self.pages.pop_first();
        }
        let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "id": id}).to_string();
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token);
        Page {
            items,
            rv,
            continue_token: Some(token),
            remaining,
        }
    }

    fn next_page(&mut self, token: &str, limit: Option<usize>) -> Result<Page, ApiError> {
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
        let (rv, id) = (
            decoded["rv"].as_u64().unwrap_or(0),
            decoded["id"].as_u64().unwrap_or(0),
        );
        if rv < self.store.compacted() {
            self.pages.remove(&id);
            return Err(expired());
        }
        let (rv, items) = self.pages.remove(&id).ok_or_else(expired)?;
        Ok(self.paginate(rv, items, limit))
    }

    /// After a CRD is written: it is Established, and its kind is served.
    pub fn crd_written(&mut self, crd: &mut Value) -> Result<(), ApiError> {
        let spec =
            KindSpec::from_crd(crd).map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
        crd["status"] = json!({
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
            ],
            "acceptedNames": crd["spec"]["names"].clone(),
            "storedVersions": [spec.preferred()],
        });
        self.kinds.upsert(spec);
        Ok(())
    }

    /// After a CRD is deleted: its kind is no longer served and its objects
    /// are gone.
    pub fn crd_deleted(&mut self, crd: &Value) {
        if let Ok(spec) = KindSpec::from_crd(crd) {
            self.kinds.remove(&spec.group, &spec.plural);
            self.store.drop_resource(&spec.resource());
        }
    }
}
