//! Route name -> compiled entry: the one hash lookup of the request path.
//!
//! Keyed by entry names (`http/shop/gifts/0`, what `attache render envoy`
//! names Envoy routes), or, in documents for Istio (`options.istioRouteNames`),
//! by the names istiod gives Envoy routes (`shop.gifts.0`, or the rule's
//! name; `attache_contract::istio_route_name`). istiod's names can be shared:
//! - by entries of one compiled profile (one rule on two listeners that get
//!   the same policies): the name finds any of them, all alike;
//! - by entries of different listeners with different settings: the name
//!   finds the one whose listener port is the request's destination port
//!   (`options.listenerPorts`), which costs one more property read, and only
//!   for such names;
//! - otherwise (two routes with a rule of the same name on one listener): the
//!   name finds nothing and such requests take fallback matching.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use attache_contract::Options;

use crate::route::CompiledRoute;

/// What one route name stands for.
#[derive(Debug)]
enum Named {
    One(Rc<CompiledRoute>),
    /// Entries of several listeners, by listener port. Empty: a name no
    /// port can tell apart (left to fallback matching).
    ByPort(Vec<(u16, Rc<CompiledRoute>)>),
}

#[derive(Debug, Default)]
pub struct RouteNames {
    names: HashMap<String, Named>,
}

/// Builds [`RouteNames`] one entry at a time.
#[derive(Debug)]
pub struct RouteNamesBuilder<'a> {
    names: RouteNames,
    istio: bool,
    ports: &'a BTreeMap<String, u16>,
}

impl<'a> RouteNamesBuilder<'a> {
    pub fn new(options: &'a Options) -> Self {
        RouteNamesBuilder {
            names: RouteNames::default(),
            istio: options.istio_route_names,
            ports: &options.listener_ports,
        }
    }

    /// Adds the entry `route` (whose name is its entry name; entry names
    /// are unique, the caller checks).
    pub fn add(&mut self, route: Rc<CompiledRoute>) {
        if !self.istio {
            let name = route.name.clone();
            self.names.names.insert(name, Named::One(route));
            return;
        }
        let Some(key) = attache_contract::istio_route_name(&route.name) else {
            return;
        };
        let port = self.port_of(&route);
        let known_port = match self.names.names.get(&key) {
            Some(Named::One(known)) => Some(self.port_of(known)),
            _ => None,
        };
        let Some(named) = self.names.names.get_mut(&key) else {
            self.names.names.insert(key, Named::One(route));
            return;
        };
        let next = match named {
            Named::One(known) if known.same_settings(&route) => return,
            Named::One(known) => match (known_port.flatten(), port) {
                (Some(a), Some(b)) if a != b => vec![(a, Rc::clone(known)), (b, route)],
                _ => Vec::new(),
            },
            Named::ByPort(split) if split.is_empty() => return,
            Named::ByPort(split) => {
                let same_port = split.iter().find(|(p, _)| Some(*p) == port);
                match (same_port, port) {
                    (Some((_, known)), _) if known.same_settings(&route) => return,
                    (None, Some(port)) => {
                        split.push((port, route));
                        return;
                    }
                    _ => Vec::new(),
                }
            }
        };
        *named = Named::ByPort(next);
    }

    pub fn finish(self) -> RouteNames {
        self.names
    }

    fn port_of(&self, route: &CompiledRoute) -> Option<u16> {
        let listener = route.name.split('/').next()?;
        self.ports.get(listener).copied()
    }
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
        }
    }
}
