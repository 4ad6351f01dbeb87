//! Which routes each Envoy virtual host holds, in which order.
//!
//! Envoy sends a request to the virtual host with the most specific domain
//! (exact, then the longest `*.suffix`, then `*`) and never falls back to
//! another one. Gateway API instead lets a less specific hostname's rules
//! match when the more specific ones do not. So the virtual host for a
//! domain holds every route whose hostname covers it: its own first, then
//! wildcards, then hostname-less ones, each group in match precedence. And
//! when several Gateway listeners share a port, a domain belongs to the
//! listener with the most specific hostname, as Gateway API dispatches.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use attache_contract::route_syntax;
use attache_contract::{HttpRouteMatch, RouteEntry};
use attache_core::topology::ListenerInfo;

use crate::matching::Precedence;

/// One Envoy route: an entry and one of its matches (`None` when the rule
/// has no matches: it matches all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRef<'a> {
    pub entry: &'a RouteEntry,
    pub matched: Option<&'a HttpRouteMatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHostPlan<'a> {
    /// An exact hostname, `*.suffix`, or `*`.
    pub domain: String,
    pub routes: Vec<RouteRef<'a>>,
}

const ANY: &str = "*";

/// Does hostname `h` (exact or `*.suffix`) match every name of `domain`?
fn covers(h: &str, domain: &str) -> bool {
    if h == domain {
        return true;
    }
    // `*.example.com` covers `a.example.com` and `*.a.example.com`, not
    // `example.com` (Gateway API wildcards need one more label).
    route_syntax::wildcard_suffix(h)
        .is_some_and(|suffix| route_syntax::suffix_matches(suffix, domain))
}

/// How well `h` matches `domain`, smaller is more specific: non-wildcard
/// before wildcard, then more characters (Gateway API hostname precedence).
/// (`attache_contract::route_syntax::hostname_rank`, reversed to sort first).
fn hostname_rank(h: Option<&str>) -> Reverse<(u8, usize)> {
    Reverse(route_syntax::hostname_rank(h))
}

/// The hostnames an entry answers for; `None` means any. A listener's own
/// hostname bounds an entry that names none.
fn effective_hostnames<'a>(
    entry: &'a RouteEntry,
    listener: Option<&'a ListenerInfo>,
) -> Option<Vec<&'a str>> {
    if !entry.hostnames.is_empty() {
        return Some(entry.hostnames.iter().map(String::as_str).collect());
    }
    listener
        .and_then(|l| l.hostname.as_deref())
        .map(|h| vec![h])
}

/// The listener (of those sharing the port) that Gateway API gives
/// `domain` to: exact hostname, then longest wildcard, then no hostname.
fn owner<'a>(domain: &str, listeners: &[&'a ListenerInfo]) -> Option<&'a ListenerInfo> {
    listeners
        .iter()
        .filter(|l| l.hostname.as_deref().is_none_or(|h| covers(h, domain)))
        .min_by_key(|l| hostname_rank(l.hostname.as_deref()))
        .copied()
}

/// Virtual hosts for the entries served on one port by `listeners`.
/// `entries` come in document order, which breaks precedence ties.
pub fn plan<'a>(
    entries: &[&'a RouteEntry],
    listeners: &[&ListenerInfo],
) -> Vec<VirtualHostPlan<'a>> {
    // Listeners are named by key (`http`, `team-a/ls-a/http`).
    let keys: Vec<String> = entries.iter().map(|e| e.listener_key()).collect();
    let listener_of = |key: &str| listeners.iter().find(|l| l.name == key).copied();
    let mut domains = BTreeSet::new();
    for (entry, key) in entries.iter().zip(&keys) {
        match effective_hostnames(entry, listener_of(key)) {
            Some(hosts) => domains.extend(hosts.into_iter().map(str::to_string)),
            None => {
                domains.insert(ANY.to_string());
            }
        }
    }
    let mut domains: Vec<String> = domains.into_iter().collect();
    domains.sort_by_key(|d| {
        (
            hostname_rank(Some(d).filter(|d| *d != ANY).map(String::as_str)),
            d.clone(),
        )
    });

    let mut plans = Vec::new();
    for domain in domains {
        let Some(owner) = owner(&domain, listeners) else {
            continue;
        };
        let mut routes = Vec::new();
        for (i, &entry) in entries.iter().enumerate() {
            if keys.get(i) != Some(&owner.name) {
                continue;
            }
            let host_rank = match effective_hostnames(entry, Some(owner)) {
                None => hostname_rank(None),
                Some(hosts) => match hosts
                    .into_iter()
                    .filter(|h| covers(h, &domain))
                    .map(|h| hostname_rank(Some(h)))
                    .min()
                {
                    Some(rank) => rank,
                    None => continue,
                },
            };
            if entry.matches.is_empty() {
                routes.push((
                    host_rank,
                    Precedence::of(None),
                    RouteRef {
                        entry,
                        matched: None,
                    },
                ));
            }
            for m in &entry.matches {
                routes.push((
                    host_rank,
                    Precedence::of(Some(m)),
                    RouteRef {
                        entry,
                        matched: Some(m),
                    },
                ));
            }
        }
        // Stable: equal keys keep document order, then match order.
        routes.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        plans.push(VirtualHostPlan {
            domain,
            routes: routes.into_iter().map(|(_, _, r)| r).collect(),
        });
    }
    plans
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_contract::{HttpRouteMatch, PathMatch, PathMatchType};

    fn listener(name: &str, hostname: Option<&str>) -> ListenerInfo {
        ListenerInfo {
            name: name.into(),
            port: 80,
            protocol: "HTTP".into(),
            hostname: hostname.map(str::to_string),
            tls: None,
        }
    }

    fn entry(listener: &str, route: &str, hostnames: &[&str], prefixes: &[&str]) -> RouteEntry {
        RouteEntry {
            name: format!("{listener}/ns/{route}/0"),
            listener: listener.into(),
            listener_set: None,
            listener_set_kind: None,
            route_namespace: "ns".into(),
            route_name: route.into(),
            rule: "0".into(),
            hostnames: hostnames.iter().map(|h| h.to_string()).collect(),
            matches: prefixes
                .iter()
                .map(|p| HttpRouteMatch {
                    path: Some(PathMatch {
                        kind: PathMatchType::PathPrefix,
                        value: p.to_string(),
                    }),
                    ..HttpRouteMatch::default()
                })
                .collect(),
            ..RouteEntry::default()
        }
    }

    fn names(plans: &[VirtualHostPlan]) -> Vec<(String, Vec<String>)> {
        plans
            .iter()
            .map(|p| {
                let routes = p
                    .routes
                    .iter()
                    .map(|r| {
                        let path = r
                            .matched
                            .and_then(|m| m.path.clone())
                            .map_or("all".into(), |p| p.value);
                        format!("{}{}", r.entry.route_name, path)
                    })
                    .collect();
                (p.domain.clone(), routes)
            })
            .collect()
    }

    #[test]
    fn specific_hostnames_see_their_routes_first_then_wildcards_then_any() {
        let entries = [
            entry("http", "any", &[], &["/"]),
            entry("http", "wild", &["*.example.com"], &["/", "/api"]),
            entry("http", "shop", &["shop.example.com"], &["/cart"]),
        ];
        let indexed: Vec<&RouteEntry> = entries.iter().collect();
        let http = listener("http", None);
        let plans = plan(&indexed, &[&http]);
        assert_eq!(
            names(&plans),
            [
                (
                    "shop.example.com".to_string(),
                    vec![
                        "shop/cart".to_string(),
                        "wild/api".into(),
                        "wild/".into(),
                        "any/".into()
                    ]
                ),
                (
                    "*.example.com".to_string(),
                    vec!["wild/api".to_string(), "wild/".into(), "any/".into()]
                ),
                ("*".to_string(), vec!["any/".to_string()]),
            ]
        );
    }

    #[test]
    fn a_wildcard_does_not_cover_its_bare_suffix() {
        assert!(covers("*.example.com", "a.example.com"));
        assert!(covers("*.example.com", "*.a.example.com"));
        assert!(!covers("*.example.com", "example.com"));
        assert!(!covers("a.example.com", "*.example.com"));
    }

    #[test]
    fn a_domain_belongs_to_the_most_specific_listener_on_the_port() {
        let entries = [
            entry("catchall", "fallback", &[], &["/"]),
            entry("shop", "storefront", &[], &["/"]),
        ];
        let indexed: Vec<&RouteEntry> = entries.iter().collect();
        let catchall = listener("catchall", None);
        let shop = listener("shop", Some("*.shop.test"));
        let plans = plan(&indexed, &[&catchall, &shop]);
        assert_eq!(
            names(&plans),
            [
                ("*.shop.test".to_string(), vec!["storefront/".to_string()]),
                ("*".to_string(), vec!["fallback/".to_string()]),
            ],
            "the catch-all listener's route must not answer for *.shop.test"
        );
    }

    #[test]
    fn ties_keep_document_order_and_rules_without_matches_match_all() {
        let entries = [
            entry("http", "first", &[], &["/a"]),
            entry("http", "second", &[], &["/a"]),
            entry("http", "all", &[], &[]),
        ];
        let indexed: Vec<&RouteEntry> = entries.iter().collect();
        let http = listener("http", None);
        let plans = plan(&indexed, &[&http]);
        assert_eq!(names(&plans)[0].1, ["first/a", "second/a", "allall"]);
    }
}
