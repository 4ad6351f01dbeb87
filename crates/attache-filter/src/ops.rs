//! Pre-rendered header operations: everything a request needs is a list of
//! these, built at configure time, and applied with one host call each.

use crate::host::{HeaderMap, Host};

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
        match op {
            HeaderOp::Remove(name) => host.set_header(map, name, None),
            HeaderOp::Set(name, value) => host.set_header(map, name, Some(value)),
            HeaderOp::Add(name, value) => host.add_header(map, name, value),
        }
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
}
