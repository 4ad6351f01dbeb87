//! Pre-rendered header operations: everything a request needs is a list of
//! these, built at configure time, so the request path only hands strings to
//! the host.

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

pub fn apply(host: &mut impl Host, map: HeaderMap, ops: &[HeaderOp]) {
    for op in ops {
        match op {
            HeaderOp::Remove(name) => host.set_header(map, name, None),
            HeaderOp::Set(name, value) => host.set_header(map, name, Some(value)),
            HeaderOp::Add(name, value) => host.add_header(map, name, value),
        }
    }
}
