//! One route entry, compiled: the header operations for the request and the
//! response, ready to hand to the host. The operations are shared (`Rc`), so
//! entries of one data-plane profile hold one copy between them.

use std::rc::Rc;

use attache_contract::{HeaderChanges, RouteEntry};

use crate::control;
use crate::ops::HeaderOp;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledRoute {
    /// Shared with the name index's key (crate::names): one copy per entry.
    pub name: Rc<str>,
    /// Header changes (remove, set, add), then the router control headers.
    pub request_ops: Rc<[HeaderOp]>,
    pub response_ops: Rc<[HeaderOp]>,
    pub enforces: Enforcement,
}

/// Which enforcement kinds a route carries, for the per-kind counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enforcement {
    pub timeout: bool,
    pub retry: bool,
    pub request_headers: bool,
    pub response_headers: bool,
}

impl CompiledRoute {
    /// Renders an entry whose values were already validated.
    pub fn render(entry: &RouteEntry) -> Self {
        let mut request_ops = header_change_ops(entry.request_headers.as_ref());
        let request_headers = !request_ops.is_empty();
        // Control headers come after the header changes so that the
        // document's timeouts and retry win over a header change that names
        // the same x-envoy-* header.
        let timeout_ops = entry
            .timeouts
            .as_ref()
            .map(control::timeout_ops)
            .unwrap_or_default();
        let retry_ops = entry
            .retry
            .as_ref()
            .map(control::retry_ops)
            .unwrap_or_default();
        let enforces = Enforcement {
            timeout: !timeout_ops.is_empty(),
            retry: !retry_ops.is_empty(),
            request_headers,
            response_headers: entry
                .response_headers
                .as_ref()
                .is_some_and(|c| !c.is_empty()),
        };
        request_ops.extend(timeout_ops);
        request_ops.extend(retry_ops);
        CompiledRoute {
            name: entry.name.as_str().into(),
            request_ops: request_ops.into(),
            response_ops: header_change_ops(entry.response_headers.as_ref()).into(),
            enforces,
        }
    }

    /// Whether `other` applies exactly what this route applies (the name
    /// aside) because both come from one compiled profile of the data-plane
    /// encoding. Entries of schema 1 each have their own operations and are
    /// never taken for the same (their names then go by port or fallback:
    /// the same answer, without comparing operations in the `.wasm`).
    pub fn same_settings(&self, other: &CompiledRoute) -> bool {
        self.enforces == other.enforces
            && Rc::ptr_eq(&self.request_ops, &other.request_ops)
            && Rc::ptr_eq(&self.response_ops, &other.response_ops)
    }

    /// The same settings under another name, sharing the operations.
    pub fn named(&self, name: &str) -> Self {
        CompiledRoute {
            name: name.into(),
            request_ops: Rc::clone(&self.request_ops),
            response_ops: Rc::clone(&self.response_ops),
            enforces: self.enforces,
        }
    }
}

/// Gateway API's HTTPHeaderFilter, applied as remove, then set, then add:
/// - remove + set of one name: the set value is the result;
/// - set + add of one name: the set value followed by the added one;
/// - remove + add of one name: only the added value (the client's is gone).
///
/// Names are lower-cased: HTTP names are case-insensitive and Envoy stores
/// them lower-case.
fn header_change_ops(changes: Option<&HeaderChanges>) -> Vec<HeaderOp> {
    // Every field is named (no `..`): a new kind of header change does not
    // compile until it has its operations here.
    let Some(HeaderChanges { set, add, remove }) = changes else {
        return Vec::new();
    };
    let removes = remove
        .iter()
        .map(|n| HeaderOp::remove(&n.to_ascii_lowercase()));
    let sets = set
        .iter()
        .map(|h| HeaderOp::set(&h.name.to_ascii_lowercase(), &h.value));
    let adds = add
        .iter()
        .map(|h| HeaderOp::add(&h.name.to_ascii_lowercase(), &h.value));
    removes.chain(sets).chain(adds).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_contract::{Header, Retry, Timeouts};

    #[test]
    fn request_ops_are_remove_set_add_then_control_headers() {
        let entry = RouteEntry {
            name: "http/shop/a/0".into(),
            timeouts: Some(Timeouts {
                request_ms: Some(1000),
                ..Timeouts::default()
            }),
            retry: Some(Retry {
                attempts: Some(2),
                ..Retry::default()
            }),
            request_headers: Some(HeaderChanges {
                set: vec![Header {
                    name: "X-A".into(),
                    value: "1".into(),
                }],
                add: vec![Header {
                    name: "x-b".into(),
                    value: "2".into(),
                }],
                remove: vec!["x-c".into()],
            }),
            ..RouteEntry::default()
        };
        let route = CompiledRoute::render(&entry);
        assert_eq!(
            *route.request_ops,
            [
                HeaderOp::remove("x-c"),
                HeaderOp::set("x-a", "1"),
                HeaderOp::add("x-b", "2"),
                HeaderOp::set(control::RQ_TIMEOUT_MS, "1000"),
                HeaderOp::set(control::MAX_RETRIES, "2"),
            ]
        );
        assert!(route.response_ops.is_empty());
        assert_eq!(
            route.enforces,
            Enforcement {
                timeout: true,
                retry: true,
                request_headers: true,
                response_headers: false
            }
        );
    }

    #[test]
    fn empty_sections_enforce_nothing() {
        let entry = RouteEntry {
            timeouts: Some(Timeouts::default()),
            retry: Some(Retry {
                backoff_ms: Some(5),
                ..Retry::default()
            }),
            response_headers: Some(HeaderChanges::default()),
            ..RouteEntry::default()
        };
        let route = CompiledRoute::render(&entry);
        assert!(route.request_ops.is_empty());
        assert_eq!(route.enforces, Enforcement::default());
    }
}
