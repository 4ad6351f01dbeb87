//! The compiled, immutable configuration: route name -> compiled route, plus
//! the fallback table. Built once per accepted configuration; requests only
//! read it.

use std::collections::HashMap;
use std::rc::Rc;

use attache_contract::data_plane::BadIndex;
use attache_contract::precedence::MatchPrecedence;
use attache_contract::{DataPlaneDocument, HttpRouteMatch};

use crate::document;
use crate::error::{ConfigError, Problem};
use crate::fallback::{Conditions, FallbackTable, HostPattern};
use crate::names::{RouteNames, RouteNamesBuilder};
use crate::route::CompiledRoute;
use crate::validate::{validate_settings, EntryError};

#[derive(Debug)]
pub struct CompiledConfig {
    pub gateway: String,
    pub trust_client_control_headers: bool,
    /// Route name -> entry (crate::names).
    names: RouteNames,
    entries: usize,
    fallback: FallbackTable,
}

/// The JSON path of an entry (`$.groups[0].routes[7]`), kept as indices
/// and formatted only for an error (formatting it for each of 10,000 entries
/// cost about 0.4 ms of a 9 ms native compile).
#[derive(Debug, Clone, Copy)]
struct EntryAt(usize, usize);

impl std::fmt::Display for EntryAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "$.groups[{}].routes[{}]", self.0, self.1)
    }
}

impl CompiledConfig {
    /// Parses, validates and compiles plugin configuration bytes: the
    /// data-plane encoding (docs/contract.md).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConfigError> {
        Self::compile_data_plane(document::parse(bytes)?)
    }

    /// The same, taking the bytes, which are dropped as soon as they are
    /// parsed (the document owns its strings): the compile then runs without
    /// them, and a VM's memory, which keeps its high-water mark, is spared
    /// the whole configuration once (about 1 MB at 10,000 routes).
    pub fn from_owned_bytes(bytes: Vec<u8>) -> Result<Self, ConfigError> {
        Self::compile_data_plane(document::parse_owned(bytes)?)
    }

    /// The data-plane encoding: each profile validated and compiled once;
    /// entries share it (no header string per entry). Takes the document so
    /// that each route's parsed name and matches are freed as soon as the
    /// route is compiled: the parsed routes and the compiled table are never
    /// both whole, which lowers the high-water mark a VM keeps.
    pub fn compile_data_plane(doc: DataPlaneDocument) -> Result<Self, ConfigError> {
        let DataPlaneDocument {
            gateway,
            options,
            strings,
            profiles,
            groups,
            ..
        } = doc;
        let profiles = profiles
            .iter()
            .enumerate()
            .map(|(p, profile)| {
                let at = format!("$.profiles[{p}]");
                let settings = profile.settings(&strings).map_err(|e| bad_index(&at, e))?;
                validate_settings(&settings).map_err(|e| located(&at.as_str(), e))?;
                Ok(CompiledRoute::render(&settings))
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        drop(strings);
        let bare = CompiledRoute::render(&Default::default());
        let candidates = groups
            .iter()
            .flat_map(|g| {
                g.routes
                    .iter()
                    .map(|r| candidates_of(&g.hostnames, &r.matches))
            })
            .sum();
        let routes = groups.iter().map(|g| g.routes.len()).sum();
        let mut index = Index::new(&options, routes, candidates);
        for (g, group) in groups.into_iter().enumerate() {
            let template = match group.profile {
                None => &bare,
                Some(p) => profiles.get(p as usize).ok_or_else(|| {
                    let problem = Problem::Index {
                        index: p,
                        table: "profiles",
                        len: profiles.len(),
                    };
                    ConfigError::invalid(format!("$.groups[{g}].profile"), problem)
                })?,
            };
            // Hostnames belong to the group: parsed once, errors name its field.
            let hosts = host_patterns(&group.hostnames)
                .map_err(|e| located(&format_args!("$.groups[{g}]"), e))?;
            // By value: each route's name and matches are freed once compiled.
            for (j, entry) in group.routes.into_iter().enumerate() {
                let route = Rc::new(template.named(&entry.name));
                index.add(EntryAt(g, j), route, &hosts, &entry.matches)?;
            }
        }
        Ok(index.finish(gateway, &options))
    }

    /// The entry for Envoy's route `name` (crate::names); the destination
    /// port is asked for only when the name needs it.
    pub fn route_named_at(
        &self,
        name: &str,
        destination_port: impl FnOnce() -> Option<u16>,
    ) -> Option<&Rc<CompiledRoute>> {
        self.names.get(name, destination_port)
    }

    pub fn route_named(&self, name: &str) -> Option<&Rc<CompiledRoute>> {
        self.names.get(name, || None)
    }

    pub fn fallback(&self) -> &FallbackTable {
        &self.fallback
    }

    pub fn route_count(&self) -> usize {
        self.entries
    }
}

fn located(at: &impl std::fmt::Display, (field, problem): EntryError) -> ConfigError {
    ConfigError::invalid(format!("{at}.{field}"), problem)
}

fn bad_index(at: &str, e: BadIndex) -> ConfigError {
    let problem = Problem::Index {
        index: e.index,
        table: "strings",
        len: e.len,
    };
    ConfigError::invalid(format!("{at}.{}", e.field), problem)
}

/// How many fallback candidates an entry makes: one per (hostname, match),
/// where no hostnames means any host and no matches means one match-all.
fn candidates_of(hostnames: &[String], matches: &[HttpRouteMatch]) -> usize {
    hostnames.len().max(1) * matches.len().max(1)
}

/// A group's hostnames as patterns; no hostnames is `HostPattern::Any`.
fn host_patterns(hostnames: &[String]) -> Result<Vec<HostPattern>, EntryError> {
    if hostnames.is_empty() {
        return Ok(vec![HostPattern::Any]);
    }
    hostnames
        .iter()
        .enumerate()
        .map(|(j, h)| HostPattern::parse(h).map_err(|p| (format!("hostnames[{j}]"), p)))
        .collect()
}

/// The compiled table as it is built, one entry at a time: names checked,
/// the name index and the fallback table filled.
struct Index<'a> {
    names: RouteNamesBuilder<'a>,
    /// Where each name was first used, for the duplicate error.
    first: HashMap<Rc<str>, EntryAt>,
    fallback: FallbackTable,
    count: usize,
}

impl<'a> Index<'a> {
    /// Sized once for `entries` and `candidates`: growing a table holds the
    /// old and the new one at once.
    fn new(options: &'a attache_contract::Options, entries: usize, candidates: usize) -> Self {
        Index {
            names: RouteNamesBuilder::new(options, entries),
            first: HashMap::with_capacity(entries),
            fallback: FallbackTable::with_capacity(candidates),
            count: 0,
        }
    }

    fn add(
        &mut self,
        at: EntryAt,
        route: Rc<CompiledRoute>,
        hosts: &[HostPattern],
        matches: &[HttpRouteMatch],
    ) -> Result<(), ConfigError> {
        if route.name.is_empty() {
            return Err(located(&at, ("name".into(), Problem::EmptyRouteName)));
        }
        if let Some(first) = self.first.get(&route.name) {
            let problem = Problem::DuplicateRoute {
                name: route.name.to_string(),
                first: first.to_string(),
            };
            return Err(located(&at, ("name".into(), problem)));
        }
        self.first.insert(Rc::clone(&route.name), at);
        let port = self.names.port_of(&route.name);
        add_candidates(&mut self.fallback, port, hosts, matches, &route)
            .map_err(|e| located(&at, e))?;
        self.names.add(route, port);
        self.count += 1;
        Ok(())
    }

    fn finish(mut self, gateway: String, options: &attache_contract::Options) -> CompiledConfig {
        drop(self.first);
        self.fallback.finish();
        CompiledConfig {
            gateway,
            trust_client_control_headers: options.trust_client_control_headers,
            names: self.names.finish(),
            entries: self.count,
            fallback: self.fallback,
        }
    }
}

/// Files one candidate per (hostname, match); `hosts` is never empty (no
/// hostnames is `HostPattern::Any`).
fn add_candidates(
    table: &mut FallbackTable,
    port: Option<u16>,
    hosts: &[HostPattern],
    matches: &[HttpRouteMatch],
    route: &Rc<CompiledRoute>,
) -> Result<(), EntryError> {
    let conditions = if matches.is_empty() {
        vec![(MatchPrecedence::of(None), Conditions::match_all())]
    } else {
        matches
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let compiled = Conditions::compile(m)
                    .map_err(|e| (format!("matches[{j}].{}", e.field), e.problem))?;
                Ok((MatchPrecedence::of(Some(m)), compiled))
            })
            .collect::<Result<Vec<_>, EntryError>>()?
    };
    // The last host takes the compiled match itself; the others a copy.
    let Some((last, others)) = hosts.split_last() else {
        return Ok(());
    };
    for (precedence, cond) in conditions {
        for host in others {
            let (p, c) = (precedence.clone(), cond.clone());
            table.push(port, host.clone(), p, c, Rc::clone(route));
        }
        table.push(port, last.clone(), precedence, cond, Rc::clone(route));
    }
    Ok(())
}
