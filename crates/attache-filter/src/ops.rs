//! Pre-rendered header operations: everything a request needs is a list of
//! these, built at configure time. The request path applies them to its one
//! copy of the header map and hands the host the result in one write.

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

/// One header map as Envoy hands it over: (name, value) pairs, names
/// lower-cased, a repeated header as several pairs.
pub type Pairs = Vec<(String, Vec<u8>)>;

/// Applies `ops` with one host call each: the response path's way, where
/// there is no copy of the map to edit and a single-header write touches
/// one header instead of Envoy rebuilding the whole map.
pub fn apply_each(host: &mut impl Host, map: HeaderMap, ops: &[HeaderOp]) {
    for op in ops {
        match op {
            HeaderOp::Remove(name) => host.set_header(map, name, None),
            HeaderOp::Set(name, value) => host.set_header(map, name, Some(value)),
            HeaderOp::Add(name, value) => host.add_header(map, name, value),
        }
    }
}

/// Applies `ops` to `pairs` in memory, with the meaning Envoy gives the
/// per-header calls (a set replaces every value of the name, an add appends,
/// a remove drops every value). Returns whether anything was written, so
/// that an unchanged map costs no write back to the host.
pub fn apply(pairs: &mut Pairs, ops: &[HeaderOp]) -> bool {
    for op in ops {
        match op {
            HeaderOp::Remove(name) => pairs.retain(|(n, _)| **n != **name),
            HeaderOp::Set(name, value) => {
                pairs.retain(|(n, _)| **n != **name);
                pairs.push((name.to_string(), value.as_bytes().to_vec()));
            }
            HeaderOp::Add(name, value) => pairs.push((name.to_string(), value.as_bytes().to_vec())),
        }
    }
    !ops.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Pairs {
        items
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn set_replaces_every_value_add_appends_remove_drops_all() {
        let mut map = pairs(&[(":path", "/"), ("x-a", "1"), ("x-a", "2"), ("x-c", "3")]);
        let changed = apply(
            &mut map,
            &[
                HeaderOp::remove("x-c"),
                HeaderOp::set("x-a", "9"),
                HeaderOp::add("x-a", "10"),
                HeaderOp::add("x-b", "b"),
            ],
        );
        assert!(changed);
        assert_eq!(
            map,
            pairs(&[(":path", "/"), ("x-a", "9"), ("x-a", "10"), ("x-b", "b")])
        );
    }

    #[test]
    fn no_ops_means_no_write() {
        let mut map = pairs(&[(":path", "/")]);
        assert!(!apply(&mut map, &[]));
        assert_eq!(map, pairs(&[(":path", "/")]));
    }
}
