//! The compiled, immutable configuration: route name -> compiled route, plus
//! the fallback table. Built once per accepted configuration; requests only
//! read it.

use std::collections::HashMap;
use std::rc::Rc;

use attache_contract::precedence::MatchPrecedence;
use attache_contract::{Document, RouteEntry, SCHEMA_VERSION};

use crate::document;
use crate::error::{ConfigError, Problem};
use crate::fallback::{Conditions, FallbackTable, HostPattern};
use crate::route::CompiledRoute;
use crate::validate::{validate_settings, EntryError};

#[derive(Debug)]
pub struct CompiledConfig {
    pub gateway: String,
    pub trust_client_control_headers: bool,
    by_name: HashMap<String, Rc<CompiledRoute>>,
    fallback: FallbackTable,
}

impl CompiledConfig {
    /// Parses, validates and compiles plugin configuration bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConfigError> {
        Self::compile(&document::parse(bytes)?)
    }

    pub fn compile(doc: &Document) -> Result<Self, ConfigError> {
        if doc.schema_version != SCHEMA_VERSION {
            return Err(ConfigError::invalid(
                "$.schemaVersion",
                Problem::SchemaVersion(doc.schema_version),
            ));
        }
        let mut by_name: HashMap<String, Rc<CompiledRoute>> = HashMap::new();
        let mut first_index: HashMap<&str, usize> = HashMap::new();
        let mut fallback = FallbackTable::default();
        for (i, entry) in doc.routes.iter().enumerate() {
            let at = |field: &str| format!("$.routes[{i}].{field}");
            if entry.name.is_empty() {
                return Err(ConfigError::invalid(at("name"), Problem::EmptyRouteName));
            }
            if let Some(&first) = first_index.get(entry.name.as_str()) {
                return Err(ConfigError::invalid(
                    at("name"),
                    Problem::DuplicateRoute {
                        name: entry.name.clone(),
                        first,
                    },
                ));
            }
            first_index.insert(&entry.name, i);
            validate_settings(entry)
                .map_err(|(field, problem)| ConfigError::invalid(at(&field), problem))?;
            let route = Rc::new(CompiledRoute::render(entry));
            add_candidates(&mut fallback, entry, &route)
                .map_err(|(field, problem)| ConfigError::invalid(at(&field), problem))?;
            by_name.insert(entry.name.clone(), route);
        }
        fallback.finish();
        Ok(CompiledConfig {
            gateway: doc.gateway.clone(),
            trust_client_control_headers: doc.options.trust_client_control_headers,
            by_name,
            fallback,
        })
    }

    pub fn route_named(&self, name: &str) -> Option<&Rc<CompiledRoute>> {
        self.by_name.get(name)
    }

    pub fn fallback(&self) -> &FallbackTable {
        &self.fallback
    }

    pub fn route_count(&self) -> usize {
        self.by_name.len()
    }
}

fn add_candidates(
    table: &mut FallbackTable,
    entry: &RouteEntry,
    route: &Rc<CompiledRoute>,
) -> Result<(), EntryError> {
    let hosts = if entry.hostnames.is_empty() {
        vec![HostPattern::Any]
    } else {
        entry
            .hostnames
            .iter()
            .enumerate()
            .map(|(j, h)| HostPattern::parse(h).map_err(|p| (format!("hostnames[{j}]"), p)))
            .collect::<Result<Vec<_>, _>>()?
    };
    let conditions = if entry.matches.is_empty() {
        vec![(MatchPrecedence::of(None), Conditions::match_all())]
    } else {
        entry
            .matches
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let compiled = Conditions::compile(m)
                    .map_err(|e| (format!("matches[{j}].{}", e.field), e.problem))?;
                Ok((MatchPrecedence::of(Some(m)), compiled))
            })
            .collect::<Result<Vec<_>, EntryError>>()?
    };
    for host in &hosts {
        for (precedence, cond) in &conditions {
            table.push(
                host.clone(),
                precedence.clone(),
                cond.clone(),
                Rc::clone(route),
            );
        }
    }
    Ok(())
}
