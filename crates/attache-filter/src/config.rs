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

/// What the compile loop needs of one entry.
struct EntryView<'a> {
    name: &'a str,
    /// Where the entry sits, for errors; spelled out only when one occurs.
    at: EntryAt,
    hostnames: &'a [String],
    matches: &'a [HttpRouteMatch],
    route: Rc<CompiledRoute>,
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
        Self::compile_data_plane(&document::parse(bytes)?)
    }

    /// The same, taking the bytes, which are dropped as soon as they are
    /// parsed (the document owns its strings): the compile then runs without
    /// them, and a VM's memory, which keeps its high-water mark, is spared
    /// the whole configuration once (about 1 MB at 10,000 routes).
    pub fn from_owned_bytes(bytes: Vec<u8>) -> Result<Self, ConfigError> {
        let parsed = document::parse(&bytes)?;
        drop(bytes);
        Self::compile_data_plane(&parsed)
    }

    /// The data-plane encoding: each profile validated and compiled once;
    /// entries share it (no header string per entry).
    pub fn compile_data_plane(doc: &DataPlaneDocument) -> Result<Self, ConfigError> {
        let profiles = doc
            .profiles
            .iter()
            .enumerate()
            .map(|(p, profile)| {
                let at = format!("$.profiles[{p}]");
                let settings = profile
                    .settings(&doc.strings)
                    .map_err(|e| bad_index(&at, e))?;
                validate_settings(&settings).map_err(|e| located(&at.as_str(), e))?;
                Ok(CompiledRoute::render(&settings))
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        let bare = CompiledRoute::render(&Default::default());
        let mut templates = Vec::with_capacity(doc.groups.len());
        for (g, group) in doc.groups.iter().enumerate() {
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
            templates.push(template);
        }
        let candidates = doc
            .groups
            .iter()
            .flat_map(|g| {
                g.routes
                    .iter()
                    .map(|r| candidates_of(&g.hostnames, &r.matches))
            })
            .sum();
        let groups = doc.groups.iter().zip(templates).enumerate();
        let entries = groups.flat_map(|(g, (group, template))| {
            group.routes.iter().enumerate().map(move |(j, entry)| {
                Ok(EntryView {
                    name: &entry.name,
                    at: EntryAt(g, j),
                    hostnames: &group.hostnames,
                    matches: &entry.matches,
                    route: Rc::new(template.named(&entry.name)),
                })
            })
        });
        let routes = doc.groups.iter().map(|g| g.routes.len()).sum();
        Self::index(&doc.gateway, &doc.options, (routes, candidates), entries)
    }

    /// Names checked, the name index and the fallback table built.
    fn index<'a>(
        gateway: &str,
        options: &attache_contract::Options,
        (entries_len, candidates): (usize, usize),
        entries: impl Iterator<Item = Result<EntryView<'a>, ConfigError>>,
    ) -> Result<Self, ConfigError> {
        let mut names = RouteNamesBuilder::new(options, entries_len);
        let mut first_index: HashMap<&str, EntryAt> = HashMap::with_capacity(entries_len);
        let mut fallback = FallbackTable::with_capacity(candidates);
        let mut hosts = HostCache::default();
        let mut count = 0;
        for (i, entry) in entries.enumerate() {
            count = i + 1;
            let entry = entry?;
            if entry.name.is_empty() {
                return Err(located(&entry.at, ("name".into(), Problem::EmptyRouteName)));
            }
            if let Some(&first) = first_index.get(entry.name) {
                let problem = Problem::DuplicateRoute {
                    name: entry.name.to_string(),
                    first: first.to_string(),
                };
                return Err(located(&entry.at, ("name".into(), problem)));
            }
            first_index.insert(entry.name, entry.at);
            let port = names.port_of(entry.name);
            // Hostnames belong to the group: an error names the group's field.
            let group = format_args!("$.groups[{}]", entry.at.0);
            let patterns = hosts
                .patterns(entry.hostnames)
                .map_err(|e| located(&group, e))?;
            add_candidates(&mut fallback, port, patterns, entry.matches, &entry.route)
                .map_err(|e| located(&entry.at, e))?;
            names.add(entry.route, port);
        }
        fallback.finish();
        Ok(CompiledConfig {
            gateway: gateway.to_string(),
            trust_client_control_headers: options.trust_client_control_headers,
            names: names.finish(),
            entries: count,
            fallback,
        })
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

/// An entry's hostnames as patterns, parsed once for the entries that share
/// them: the routes of one data-plane group hand over the same list.
#[derive(Default)]
struct HostCache<'a> {
    last: Option<(&'a [String], Vec<HostPattern>)>,
}

impl<'a> HostCache<'a> {
    fn patterns(&mut self, hostnames: &'a [String]) -> Result<&[HostPattern], EntryError> {
        let cached = self
            .last
            .as_ref()
            .is_some_and(|(list, _)| std::ptr::eq(*list, hostnames));
        if !cached {
            let patterns = if hostnames.is_empty() {
                vec![HostPattern::Any]
            } else {
                let parse = |(j, h): (usize, &String)| {
                    HostPattern::parse(h).map_err(|p| (format!("hostnames[{j}]"), p))
                };
                hostnames
                    .iter()
                    .enumerate()
                    .map(parse)
                    .collect::<Result<_, _>>()?
            };
            self.last = Some((hostnames, patterns));
        }
        Ok(self.last.as_ref().map_or(&[], |(_, p)| p.as_slice()))
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
