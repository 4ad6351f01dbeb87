//! The entry name, `<listener>/<route namespace>/<route name>/<rule>`: the
//! one place that builds it and takes it apart. The resolver names each
//! entry with it, the renderer names Envoy routes after it, the data-plane
//! encoding and the filter read its parts back (docs/contract.md).
//!
//! The name has no route kind: every entry is an HTTPRoute rule today. A
//! route kind would go here (and change every name, so every fixture).

use std::fmt;

/// An entry name's four parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryName<'a> {
    pub listener: &'a str,
    pub namespace: &'a str,
    pub route: &'a str,
    /// The rule's `name`, or its index for a rule without one.
    pub rule: &'a str,
}

impl<'a> EntryName<'a> {
    /// The parts of `name`. Never fails: a name with fewer than four parts
    /// has the missing ones empty, and the rule keeps any further `/`.
    pub fn split(name: &'a str) -> Self {
        let mut parts = name.splitn(4, '/');
        let mut next = || parts.next().unwrap_or_default();
        EntryName {
            listener: next(),
            namespace: next(),
            route: next(),
            rule: next(),
        }
    }

    /// The name istiod gives the Envoy route of this rule (see
    /// [`crate::istio_route_name`]); None when the name has no rule part.
    pub fn istio_route_name(&self) -> Option<String> {
        if self.rule.is_empty() {
            return None;
        }
        if self.rule.bytes().all(|b| b.is_ascii_digit()) {
            Some(format!("{}.{}.{}", self.namespace, self.route, self.rule))
        } else {
            Some(self.rule.to_string())
        }
    }
}

impl fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.listener, self.namespace, self.route, self.rule
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_splits_into_the_parts_it_was_built_from() {
        let name = EntryName {
            listener: "http",
            namespace: "shop",
            route: "checkout",
            rule: "pay",
        };
        let text = name.to_string();
        assert_eq!(text, "http/shop/checkout/pay");
        assert_eq!(EntryName::split(&text), name);
    }

    #[test]
    fn a_short_name_has_empty_parts_and_no_istio_name() {
        let short = EntryName::split("http/shop");
        assert_eq!((short.listener, short.namespace), ("http", "shop"));
        assert_eq!((short.route, short.rule), ("", ""));
        assert_eq!(short.istio_route_name(), None);
        assert_eq!(EntryName::split("a/b/c/d/e").rule, "d/e");
    }
}
