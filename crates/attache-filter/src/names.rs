//! Route name -> compiled entry: the one hash lookup of the request path.
//!
//! Keyed by entry names (`http/shop/gifts/0`, what `attache render envoy`
//! names Envoy routes), or, in documents for Istio (`options.istioRouteNames`),
//! by the names istiod gives Envoy routes (`shop.gifts.0`, or the rule's
//! name; `attache_contract::istio_route_name`). istiod's names can be shared,
//! and are decided once all entries are in, so the answer does not depend on
//! their order:
//! - by entries of one compiled profile (one rule on two listeners that get
//!   the same policies): the name finds any of them, all alike;
//! - by entries with different settings, each listener port's entries alike:
//!   the name finds the one whose listener port is the request's destination
//!   port (`options.listenerPorts`), which costs one more property read, and
//!   only for such names;
//! - otherwise, on a port whose entries differ (two routes with a rule of the
//!   same name on one listener), or where a listener has no known port: the
//!   name finds nothing there and such requests take fallback matching.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use attache_contract::Options;

use crate::route::CompiledRoute;

/// What one route name stands for.
#[derive(Debug)]
enum Named {
    One(Rc<CompiledRoute>),
    /// By listener port; a port whose entries differ is absent (left to
    /// fallback matching), and so is every port of a name that no port can
    /// tell apart.
    ByPort(Vec<(u16, Rc<CompiledRoute>)>),
    /// While building: the entries sharing the name, with their listener
    /// ports, in document order.
    Shared(Vec<(Option<u16>, Rc<CompiledRoute>)>),
}

#[derive(Debug, Default)]
pub struct RouteNames {
    names: HashMap<Rc<str>, Named>,
}

/// Builds [`RouteNames`] one entry at a time.
#[derive(Debug)]
pub struct RouteNamesBuilder<'a> {
    names: RouteNames,
    istio: bool,
    ports: &'a BTreeMap<String, u16>,
}

impl<'a> RouteNamesBuilder<'a> {
    /// For about `entries` entries: the map is sized once (growing it
    /// holds the old and the new table at once).
    pub fn new(options: &'a Options, entries: usize) -> Self {
        RouteNamesBuilder {
            names: RouteNames {
                names: HashMap::with_capacity(entries),
            },
            istio: options.istio_route_names,
            ports: &options.listener_ports,
        }
    }

    /// Adds the entry `route` (whose name is its entry name; entry names
    /// are unique, the caller checks), on a listener with `port`.
    pub fn add(&mut self, route: Rc<CompiledRoute>, port: Option<u16>) {
        if !self.istio {
            let name = Rc::clone(&route.name);
            self.names.names.insert(name, Named::One(route));
            return;
        }
        let Some(key) = attache_contract::istio_route_name(&route.name) else {
            return;
        };
        let named = self
            .names
            .names
            .entry(key.into())
            .or_insert_with(|| Named::Shared(Vec::new()));
        if let Named::Shared(sharers) = named {
            sharers.push((port, route));
        }
    }

    /// The port of the listener an entry name is on, when the document says.
    pub fn port_of(&self, entry_name: &str) -> Option<u16> {
        let listener = attache_contract::EntryName::split(entry_name).listener_key();
        self.ports.get(&listener).copied()
    }

    pub fn finish(mut self) -> RouteNames {
        for named in self.names.names.values_mut() {
            if let Named::Shared(sharers) = named {
                let decided = decide(sharers);
                *named = decided;
            }
        }
        self.names
    }
}

/// What entries sharing one name stand for. Quadratic in the entries of one
/// name, which are one rule's listeners or a few rules of one name.
fn decide(sharers: &[(Option<u16>, Rc<CompiledRoute>)]) -> Named {
    let Some((_, first)) = sharers.first() else {
        return Named::ByPort(Vec::new());
    };
    if sharers.iter().all(|(_, r)| r.same_settings(first)) {
        return Named::One(Rc::clone(first));
    }
    let mut by_port: Vec<(u16, Rc<CompiledRoute>)> = Vec::new();
    for (port, route) in sharers {
        // Entries of a listener without a known port could be anywhere.
        let Some(port) = *port else {
            return Named::ByPort(Vec::new());
        };
        let alike = sharers
            .iter()
            .all(|(p, r)| *p != Some(port) || r.same_settings(route));
        if alike && !by_port.iter().any(|(p, _)| *p == port) {
            by_port.push((port, Rc::clone(route)));
        }
    }
    Named::ByPort(by_port)
}

impl RouteNames {
    /// The entry Envoy's route `name` stands for; `destination_port` is
    /// asked only for a name shared across listeners.
    pub fn get(
        &self,
        name: &str,
        destination_port: impl FnOnce() -> Option<u16>,
    ) -> Option<&Rc<CompiledRoute>> {
        match self.names.get(name)? {
            Named::One(route) => Some(route),
            Named::ByPort(split) if split.is_empty() => None,
            Named::ByPort(split) => {
                let port = destination_port()?;
                split.iter().find(|(p, _)| *p == port).map(|(_, r)| r)
            }
            Named::Shared(_) => None,
        }
    }
}
