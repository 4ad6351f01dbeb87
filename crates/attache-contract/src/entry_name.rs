//! The entry name and the listener key: the one place that builds them and
//! takes them apart. The resolver names each entry with it, the renderer
//! names Envoy routes and route configurations after it, the data-plane
//! encoding and the filter read its parts back (docs/contract.md).
//!
//! A Gateway's own listener has the key `<listener>`; a ListenerSet's
//! listener `<set namespace>/<set name>/<listener>` (listener names are
//! unique within one object only, so a Gateway and each of its sets may all
//! have `http`). The entry name is `<listener key>/<route namespace>/<route
//! name>/<rule>`: four segments on a Gateway's listener, six on a set's.
//! No segment may contain `/` (all are Kubernetes names or SectionNames),
//! so the count alone tells them apart; Envoy Gateway names its IR
//! listeners alike (internal/gatewayapi/helpers.go, `irListenerName`).
//!
//! The name has no route kind: the entry carries it in its own field.

use std::fmt;

/// A ListenerSet's `namespace` and `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetName<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The listener key: `<listener>`, or `<set namespace>/<set name>/<listener>`.
pub fn listener_key(set: Option<SetName<'_>>, listener: &str) -> String {
    match set {
        Some(s) => format!("{}/{}/{listener}", s.namespace, s.name),
        None => listener.to_string(),
    }
}

/// An entry name's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryName<'a> {
    /// The ListenerSet of the listener; `None` for a Gateway's own.
    pub set: Option<SetName<'a>>,
    /// The listener's own (bare) name.
    pub listener: &'a str,
    pub namespace: &'a str,
    pub route: &'a str,
    /// The rule's `name`, or its index for a rule without one.
    pub rule: &'a str,
}

impl<'a> EntryName<'a> {
    /// The parts of `name`. Never fails: six segments are a set's entry; a
    /// name of other length has the missing parts empty, and the rule keeps
    /// any further `/`.
    pub fn split(name: &'a str) -> Self {
        // One pass over the bytes, no iterator adapters: the filter splits
        // every entry name of a document at load (tens of thousands), in a
        // size-optimised build where each adapter is a call.
        let mut cuts = [0usize; 5];
        let mut slashes = 0;
        for (i, &b) in name.as_bytes().iter().enumerate() {
            if b == b'/' {
                if let Some(cut) = cuts.get_mut(slashes) {
                    *cut = i;
                }
                slashes += 1;
                if slashes > 5 {
                    break;
                }
            }
        }
        // The text between cut `from` (exclusive) and cut `to`; '/' is one
        // byte, so these are char boundaries.
        let part = |from: Option<usize>, to: Option<usize>| {
            let start = from.map_or(0, |f| f + 1);
            let end = to.unwrap_or(name.len());
            name.get(start.min(end)..end).unwrap_or_default()
        };
        let cut = |k: usize| (k < slashes).then(|| cuts.get(k).copied()).flatten();
        if slashes == 5 {
            return EntryName {
                set: Some(SetName {
                    namespace: part(None, cut(0)),
                    name: part(cut(0), cut(1)),
                }),
                listener: part(cut(1), cut(2)),
                namespace: part(cut(2), cut(3)),
                route: part(cut(3), cut(4)),
                rule: part(cut(4), None),
            };
        }
        // Up to four parts; the rule keeps any further `/`, and a part past
        // the last `/` is empty.
        let missing = |k: usize| k > slashes;
        let text = |from: Option<usize>, to: Option<usize>, k: usize| {
            if missing(k) {
                ""
            } else {
                part(from, to)
            }
        };
        EntryName {
            set: None,
            listener: text(None, cut(0), 0),
            namespace: text(cut(0), cut(1), 1),
            route: text(cut(1), cut(2), 2),
            rule: text(cut(2), None, 3),
        }
    }

    pub fn listener_key(&self) -> String {
        listener_key(self.set, self.listener)
    }

    /// The name istiod gives the Envoy route of this rule (see
    /// [`crate::istio_route_name`]): from the last three segments only, so
    /// a rule served through a ListenerSet's listener has the name it has
    /// on a Gateway's own. None when the name has no rule part.
    pub fn istio_route_name(&self) -> Option<String> {
        let mut name = String::new();
        self.push_istio_route_name(&mut name).then_some(name)
    }

    /// The same, appended to `out`; false (and nothing appended) when the
    /// entry has none. The filter indexes tens of thousands of entries by
    /// this name at load, without a `String` each.
    pub fn push_istio_route_name(&self, out: &mut String) -> bool {
        if self.rule.is_empty() {
            return false;
        }
        if self.rule.bytes().all(|b| b.is_ascii_digit()) {
            for part in [self.namespace, ".", self.route, ".", self.rule] {
                out.push_str(part);
            }
        } else {
            out.push_str(self.rule);
        }
        true
    }
}

impl EntryName<'_> {
    /// The name as text, what `Display` writes, built in one allocation of
    /// its length: the resolver names every entry of a Gateway each time it
    /// resolves it (30,000 at 10,000 routes x 3 rules), and through `fmt`
    /// that was about a twentieth of a controller's edit round (issue 30).
    pub fn joined(&self) -> String {
        let set = self.set.map(|s| [s.namespace, s.name]);
        let own = [self.listener, self.namespace, self.route, self.rule];
        let parts = || set.iter().flatten().chain(&own);
        let slashes = if set.is_some() { 5 } else { 3 };
        let mut out = String::with_capacity(parts().map(|p| p.len()).sum::<usize>() + slashes);
        for (i, part) in parts().enumerate() {
            if i > 0 {
                out.push('/');
            }
            out.push_str(part);
        }
        out
    }
}

impl fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.set {
            write!(f, "{}/{}/", s.namespace, s.name)?;
        }
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
    fn the_joined_name_is_the_displayed_one() {
        let own = EntryName {
            set: None,
            listener: "http",
            namespace: "shop",
            route: "cart",
            rule: "0",
        };
        assert_eq!(own.joined(), "http/shop/cart/0");
        let in_set = EntryName {
            set: Some(SetName {
                namespace: "infra",
                name: "extra",
            }),
            rule: "checkout",
            ..own
        };
        assert_eq!(in_set.joined(), "infra/extra/http/shop/cart/checkout");
        for name in [own, in_set] {
            assert_eq!(name.joined(), name.to_string());
            assert_eq!(EntryName::split(&name.joined()), name);
        }
    }

    /// The definition `split` keeps (its first version, with iterators).
    fn reference(name: &str) -> EntryName<'_> {
        if name.split('/').count() == 6 {
            let p: Vec<&str> = name.split('/').collect();
            return EntryName {
                set: Some(SetName {
                    namespace: p[0],
                    name: p[1],
                }),
                listener: p[2],
                namespace: p[3],
                route: p[4],
                rule: p[5],
            };
        }
        let mut parts = name.splitn(4, '/');
        let mut next = || parts.next().unwrap_or_default();
        EntryName {
            set: None,
            listener: next(),
            namespace: next(),
            route: next(),
            rule: next(),
        }
    }

    #[test]
    fn split_agrees_with_its_definition_on_every_shape() {
        for name in [
            "",
            "/",
            "a",
            "a/b",
            "a/b/c",
            "a/b/c/d",
            "a/b/c/d/e",
            "a/b/c/d/e/f",
            "a/b/c/d/e/f/g",
            "a/b/c/d/e/f/g/h",
            "//////",
            "/////",
            "a//c/",
            "é/ü/x/0",
            "http/shop/r0/0",
            "team/ls/http/shop/gifts/named-rule",
        ] {
            assert_eq!(EntryName::split(name), reference(name), "{name:?}");
        }
    }

    #[test]
    fn a_name_splits_into_the_parts_it_was_built_from() {
        let name = EntryName {
            set: None,
            listener: "http",
            namespace: "shop",
            route: "checkout",
            rule: "pay",
        };
        let text = name.to_string();
        assert_eq!(text, "http/shop/checkout/pay");
        assert_eq!(EntryName::split(&text), name);
        assert_eq!(name.listener_key(), "http");
    }

    #[test]
    fn a_set_listeners_name_has_six_parts_and_its_key_three() {
        let name = EntryName {
            set: Some(SetName {
                namespace: "team-a",
                name: "ls-a",
            }),
            listener: "http",
            namespace: "shop",
            route: "checkout",
            rule: "0",
        };
        let text = name.to_string();
        assert_eq!(text, "team-a/ls-a/http/shop/checkout/0");
        assert_eq!(EntryName::split(&text), name);
        assert_eq!(name.listener_key(), "team-a/ls-a/http");
        assert_eq!(
            name.istio_route_name().as_deref(),
            Some("shop.checkout.0"),
            "istiod's name comes from the last three segments"
        );
    }

    #[test]
    fn a_short_name_has_empty_parts_and_no_istio_name() {
        let short = EntryName::split("http/shop");
        assert_eq!((short.listener, short.namespace), ("http", "shop"));
        assert_eq!((short.route, short.rule), ("", ""));
        assert_eq!(short.istio_route_name(), None);
        assert_eq!(EntryName::split("a/b/c/d/e").rule, "d/e");
        assert_eq!(EntryName::split("a/b/c/d/e").set, None);
    }
}
