//! One route entry, compiled: the header operations for the request and the
//! response, ready to hand to the host. The operations are shared (`Rc`), so
//! entries of one data-plane profile hold one copy between them.

use std::rc::Rc;

use attache_contract::{HeaderChanges, Settings};

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
    /// Whether applying the operations twice differs from applying them
    /// once: an `add` on either map that no earlier set or remove of the
    /// same name undoes. Only such a route marks the stream, so that a
    /// second instance of the filter on it leaves it alone
    /// (`crate::stream::ENFORCED_PROPERTY`); every other operation (a set, a
    /// remove, the control headers, which are sets) gives the same headers
    /// however often it is applied.
    pub applies_once: bool,
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
    /// Renders settings whose values were already validated, unnamed (see
    /// [`CompiledRoute::named`]). Every setting is named (no `..`): a new
    /// one does not compile until the filter enforces it here.
    pub fn render(settings: &Settings) -> Self {
        let Settings {
            timeouts,
            retry,
            request_headers,
            response_headers,
        } = settings;
        let mut request_ops = header_change_ops(request_headers.as_ref());
        let enforces_request_headers = !request_ops.is_empty();
        // Control headers come after the header changes so that the
        // document's timeouts and retry win over a header change that names
        // the same x-envoy-* header.
        let timeout_ops = timeouts
            .as_ref()
            .map(control::timeout_ops)
            .unwrap_or_default();
        let retry_ops = retry.as_ref().map(control::retry_ops).unwrap_or_default();
        let enforces = Enforcement {
            timeout: !timeout_ops.is_empty(),
            retry: !retry_ops.is_empty(),
            request_headers: enforces_request_headers,
            response_headers: response_headers.as_ref().is_some_and(|c| !c.is_empty()),
        };
        request_ops.extend(timeout_ops);
        request_ops.extend(retry_ops);
        let response_ops = header_change_ops(response_headers.as_ref());
        CompiledRoute {
            name: "".into(),
            applies_once: repeats_differently(&request_ops) || repeats_differently(&response_ops),
            request_ops: request_ops.into(),
            response_ops: response_ops.into(),
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
            applies_once: self.applies_once,
        }
    }
}

/// Whether `ops` applied twice in a row leave other headers than applied
/// once: only an `add` does, and only when no earlier operation of the
/// list sets or removes the same name (the second pass's set or remove
/// then drops the first pass's added value before adding it again).
fn repeats_differently(ops: &[HeaderOp]) -> bool {
    ops.iter().enumerate().any(|(at, op)| match op {
        HeaderOp::Add(name, _) => !ops[..at].iter().any(|earlier| match earlier {
            HeaderOp::Set(reset, _) | HeaderOp::Remove(reset) => reset == name,
            HeaderOp::Add(..) => false,
        }),
        HeaderOp::Set(..) | HeaderOp::Remove(..) => false,
    })
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
        let settings = Settings {
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
            ..Default::default()
        };
        let route = CompiledRoute::render(&settings);
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
    fn only_an_add_that_nothing_resets_makes_a_route_apply_once() {
        let header = |name: &str| Header {
            name: name.into(),
            value: "v".into(),
        };
        let with = |request: HeaderChanges, response: HeaderChanges| {
            CompiledRoute::render(&Settings {
                timeouts: Some(Timeouts {
                    request_ms: Some(5),
                    ..Timeouts::default()
                }),
                request_headers: Some(request),
                response_headers: Some(response),
                ..Default::default()
            })
        };
        let idempotent = HeaderChanges {
            set: vec![header("x-a")],
            remove: vec!["x-b".into()],
            ..HeaderChanges::default()
        };
        assert!(!with(idempotent.clone(), idempotent.clone()).applies_once);
        let adds = HeaderChanges {
            add: vec![header("x-c")],
            ..HeaderChanges::default()
        };
        assert!(with(adds.clone(), HeaderChanges::default()).applies_once);
        assert!(with(HeaderChanges::default(), adds).applies_once);
        // Set or removed first, the added name is reset on the second pass.
        let reset_first = HeaderChanges {
            set: vec![header("x-a")],
            add: vec![header("X-A"), header("x-b")],
            remove: vec!["x-b".into()],
        };
        let route = with(reset_first, HeaderChanges::default());
        assert!(!route.applies_once);
        assert!(!route.named("other").applies_once);
        let mut twice = crate::testing::FakeHost::request("h", "/", &[("x-b", "client")]);
        for _ in 0..2 {
            crate::ops::apply_each(
                &mut twice,
                crate::host::HeaderMap::Request,
                &route.request_ops,
            );
        }
        assert_eq!(twice.request_values("x-a"), ["v", "v"]);
        assert_eq!(twice.request_values("x-b"), ["v"]);
    }

    #[test]
    fn empty_sections_enforce_nothing() {
        let settings = Settings {
            timeouts: Some(Timeouts::default()),
            retry: Some(Retry {
                backoff_ms: Some(5),
                ..Retry::default()
            }),
            response_headers: Some(HeaderChanges::default()),
            ..Default::default()
        };
        let route = CompiledRoute::render(&settings);
        assert!(route.request_ops.is_empty());
        assert_eq!(route.enforces, Enforcement::default());
    }
}
