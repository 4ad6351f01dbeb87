//! Pre-rendered header operations: everything a request needs is a list of
//! these, built at configure time, and applied with one host call each.

use crate::host::{HeaderMap, Host};
use crate::snapshot::HeaderSnapshot;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderOp {
    Remove(Box<str>),
    /// Replaces every existing value.
    Set(Box<str>, Box<str>),
    /// Appends a value after the existing ones.
    Add(Box<str>, Box<str>),
}

impl HeaderOp {
    pub fn set(name: &str, value: &str) -> Self {
        HeaderOp::Set(name.into(), value.into())
    }

    pub fn add(name: &str, value: &str) -> Self {
        HeaderOp::Add(name.into(), value.into())
    }

    pub fn remove(name: &str) -> Self {
        HeaderOp::Remove(name.into())
    }
}

/// Applies `ops` with one host call each. A single-header write touches one
/// header (Envoy's router headers are inline in its header map, found in
/// O(1)), where writing a whole map makes Envoy remove and re-add every
/// header (`Context::setHeaderMapPairs` in
/// source/extensions/common/wasm/context.cc).
pub fn apply_each(host: &mut impl Host, map: HeaderMap, ops: &[HeaderOp]) {
    for op in ops {
        apply(host, map, op);
    }
}

/// As [`apply_each`] on the request, whose headers as sent are `copy` (when
/// the request path took one): a leading remove of a header the copy does
/// not hold is skipped. A remove of an absent header changes nothing but is
/// a write all the same, and every request-header write makes Envoy match
/// the route again. Only removes before any set or add are judged by the
/// copy (a route's removes come first, `route::header_change_ops`); the
/// strip only ever takes headers away, so a header the copy lacks is still
/// absent.
pub fn apply_to_request(host: &mut impl Host, ops: &[HeaderOp], copy: Option<&HeaderSnapshot>) {
    let mut leading = true;
    for op in ops {
        match op {
            HeaderOp::Remove(name) if leading && copy.is_some_and(|c| c.first(name).is_none()) => {
                continue
            }
            HeaderOp::Remove(_) => {}
            HeaderOp::Set(..) | HeaderOp::Add(..) => leading = false,
        }
        apply(host, HeaderMap::Request, op);
    }
}

fn apply(host: &mut impl Host, map: HeaderMap, op: &HeaderOp) {
    match op {
        HeaderOp::Remove(name) => host.set_header(map, name, None),
        HeaderOp::Set(name, value) => host.set_header(map, name, Some(value)),
        HeaderOp::Add(name, value) => host.add_header(map, name, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeHost;

    #[test]
    fn set_replaces_every_value_add_appends_remove_drops_all() {
        let mut host = FakeHost::request("h", "/", &[("x-a", "1"), ("x-a", "2"), ("x-c", "3")]);
        apply_each(
            &mut host,
            HeaderMap::Request,
            &[
                HeaderOp::remove("x-c"),
                HeaderOp::set("x-a", "9"),
                HeaderOp::add("x-a", "10"),
                HeaderOp::add("x-b", "b"),
            ],
        );
        assert!(host.request_values("x-c").is_empty());
        assert_eq!(host.request_values("x-a"), vec!["9", "10"]);
        assert_eq!(host.request_values("x-b"), vec!["b"]);
        assert_eq!(host.request_values(":path"), vec!["/"]);
        assert_eq!(host.header_writes, 4);
    }

    #[test]
    fn a_remove_of_a_header_the_copy_lacks_is_no_write() {
        let ops = [
            HeaderOp::remove("x-absent"),
            HeaderOp::remove("x-c"),
            HeaderOp::set("x-a", "9"),
            // After a set, the copy no longer says what is there.
            HeaderOp::remove("x-a"),
        ];
        let sent = [("x-c", "3")];
        let mut host = FakeHost::request("h", "/", &sent);
        let copy = host.request_headers();
        assert!(copy.is_some());
        apply_to_request(&mut host, &ops, copy.as_ref());
        assert!(host.request_values("x-c").is_empty());
        assert!(host.request_values("x-a").is_empty());
        // remove x-c, set x-a, remove x-a: not the remove of x-absent.
        assert_eq!(host.header_writes, 3);
        let mut without_copy = FakeHost::request("h", "/", &sent);
        apply_to_request(&mut without_copy, &ops, None);
        assert_eq!(without_copy.header_writes, 4);
        assert_eq!(without_copy.request, host.request);
    }
}
