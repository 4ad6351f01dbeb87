//! Fallback matching, for requests whose Envoy route name is not one of the
//! document's (an Envoy the project did not configure, or an Istio route
//! name shared by entries with different settings). Every (entry, hostname,
//! match) becomes a candidate; candidates are sorted once, at configure
//! time, by Gateway API precedence, so the first candidate that matches a
//! request is the one Gateway API would pick. `crate::fallback_index` finds
//! that candidate without scanning the list.
//!
//! Precedence, most important first:
//! 1. hostname: exact, then wildcard with the longer suffix, then "any";
//! 2. path: Exact, then PathPrefix (longer first), then RegularExpression;
//! 3. a method condition;
//! 4. more header conditions;
//! 5. more query-parameter conditions;
//! 6. document order (the generator writes entries oldest route first, then
//!    by namespace/name, then by rule index).

use std::collections::HashMap;
use std::rc::Rc;

use attache_contract::precedence::MatchPrecedence;
use attache_contract::{route_syntax, HttpRouteMatch, PathMatchType, StringMatchType};

use crate::error::Problem;
use crate::fallback_index::{CandidateIndex, HostKey, PathKey};
use crate::host::{HeaderMap, Host};
use crate::pattern::FullMatch;
use crate::request::RequestFacts;
use crate::syntax;

/// Shared text (`Rc<str>`): every route of a group, and every match of a
/// route, files a candidate under the same hostnames.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    Any,
    Exact(Rc<str>),
    /// `*.example.com` kept as `.example.com`: at least one label before it.
    Suffix(Rc<str>),
}

impl HostPattern {
    pub fn parse(hostname: &str) -> Result<Self, Problem> {
        if !syntax::is_hostname(hostname) {
            return Err(Problem::Hostname(hostname.to_string()));
        }
        let lower = hostname.to_ascii_lowercase();
        Ok(match route_syntax::wildcard_suffix(&lower) {
            Some(suffix) => HostPattern::Suffix(suffix.into()),
            None => HostPattern::Exact(lower.into()),
        })
    }

    #[cfg(any(test, feature = "fuzzing"))]
    fn matches(&self, host: Option<&str>) -> bool {
        match (self, host) {
            (HostPattern::Any, _) => true,
            (HostPattern::Exact(name), Some(host)) => **name == *host,
            (HostPattern::Suffix(suffix), Some(host)) => route_syntax::suffix_matches(suffix, host),
            (_, None) => false,
        }
    }

    /// `route_syntax::hostname_rank`, with a wildcard kept as its suffix.
    fn rank(&self) -> (u8, usize) {
        match self {
            HostPattern::Exact(name) => route_syntax::hostname_rank(Some(name)),
            HostPattern::Suffix(suffix) => (route_syntax::RANK_WILDCARD, suffix.len()),
            HostPattern::Any => route_syntax::hostname_rank(None),
        }
    }
}

/// The path text is shared (`Rc<str>`) with the index, which files the
/// candidate under it (crate::fallback_index).
#[derive(Debug, Clone)]
enum PathCondition {
    Exact(Rc<str>),
    /// Without trailing slashes: `/` becomes "" and matches every path.
    Prefix(Rc<str>),
    /// Boxed: a compiled pattern is several times the size of the other
    /// variants, and every candidate holds a path condition.
    Regex(Box<FullMatch>),
}

impl PathCondition {
    fn matches(&self, path: Option<&str>) -> bool {
        let Some(path) = path else { return false };
        match self {
            PathCondition::Exact(value) => path == &**value,
            // Path-element boundaries: `/foo` matches `/foo`, `/foo/` and
            // `/foo/bar`, never `/foobar`.
            PathCondition::Prefix(prefix) => path
                .strip_prefix(&**prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
            PathCondition::Regex(re) => re.is_match(path),
        }
    }
}

#[derive(Debug, Clone)]
enum ValueCondition {
    Exact(String),
    Regex(FullMatch),
}

impl ValueCondition {
    fn new(kind: StringMatchType, value: &str) -> Result<Self, Problem> {
        match kind {
            StringMatchType::Exact => Ok(ValueCondition::Exact(value.to_string())),
            StringMatchType::RegularExpression => FullMatch::new(value)
                .map(ValueCondition::Regex)
                .map_err(|e| Problem::Regex(e.to_string())),
        }
    }

    fn matches(&self, value: &str) -> bool {
        match self {
            ValueCondition::Exact(expected) => expected == value,
            ValueCondition::Regex(re) => re.is_match(value),
        }
    }
}

/// The conditions of one `HTTPRouteMatch`; all must hold.
#[derive(Debug, Clone)]
pub struct Conditions {
    path: PathCondition,
    /// Method, header and query conditions, which most matches lack: boxed
    /// so that a candidate with a path alone stays small (10,000 candidates
    /// are 10,000 of these).
    more: Option<Box<MoreConditions>>,
}

#[derive(Debug, Clone)]
struct MoreConditions {
    method: Option<String>,
    /// Lower-cased names.
    headers: Vec<(String, ValueCondition)>,
    query: Vec<(String, ValueCondition)>,
}

/// Where in one `HTTPRouteMatch` a problem is, relative to the match.
#[derive(Debug, PartialEq, Eq)]
pub struct ConditionError {
    pub field: String,
    pub problem: Problem,
}

impl Conditions {
    /// Everything: what an entry without matches (or a match without a path)
    /// means in Gateway API.
    pub fn match_all() -> Self {
        Conditions {
            path: PathCondition::Prefix("".into()),
            more: None,
        }
    }

    pub fn compile(m: &HttpRouteMatch) -> Result<Self, ConditionError> {
        let err = |field: String, problem| ConditionError { field, problem };
        if m.grpc_method.is_some() {
            // A GRPCRoute's method match: the contract's one check, then the
            // path it stands for is compiled like any other.
            route_syntax::check_match(m, |p| {
                FullMatch::new(p)
                    .map(|_| ())
                    .map_err(|e| route_syntax::RegexProblem::Syntax(e.to_string()))
            })
            .map_err(|r| err(r.field, Problem::GrpcMethod(r.message)))?;
        }
        let path = match m.path_match().as_deref() {
            None => PathCondition::Prefix("".into()),
            Some(p) => match p.kind {
                PathMatchType::RegularExpression => PathCondition::Regex(Box::new(
                    FullMatch::new(&p.value)
                        .map_err(|e| err("path.value".into(), Problem::Regex(e.to_string())))?,
                )),
                kind => {
                    if !p.value.starts_with('/') {
                        return Err(err("path.value".into(), Problem::Path(p.value.clone())));
                    }
                    if kind == PathMatchType::Exact {
                        PathCondition::Exact(p.value.as_str().into())
                    } else {
                        PathCondition::Prefix(p.value.trim_end_matches('/').into())
                    }
                }
            },
        };
        if let Some(method) = &m.method {
            if !syntax::is_token(method) {
                return Err(err("method".into(), Problem::Method(method.clone())));
            }
        }
        let mut headers = Vec::with_capacity(m.headers.len());
        for (i, h) in m.headers.iter().enumerate() {
            if !syntax::is_token(&h.name) {
                return Err(err(
                    format!("headers[{i}].name"),
                    Problem::HeaderName(h.name.clone()),
                ));
            }
            let value = ValueCondition::new(h.kind, &h.value)
                .map_err(|p| err(format!("headers[{i}].value"), p))?;
            headers.push((h.name.to_ascii_lowercase(), value));
        }
        let mut query = Vec::with_capacity(m.query_params.len());
        for (i, q) in m.query_params.iter().enumerate() {
            let value = ValueCondition::new(q.kind, &q.value)
                .map_err(|p| err(format!("queryParams[{i}].value"), p))?;
            query.push((q.name.clone(), value));
        }
        let more = (m.method.is_some() || !headers.is_empty() || !query.is_empty()).then(|| {
            Box::new(MoreConditions {
                method: m.method.clone(),
                headers,
                query,
            })
        });
        Ok(Conditions { path, more })
    }

    fn matches(&self, facts: &RequestFacts, host: &impl Host) -> bool {
        self.path.matches(facts.path.as_deref())
            && self
                .more
                .as_ref()
                .is_none_or(|more| more.matches(facts, host))
    }
}

impl MoreConditions {
    fn matches(&self, facts: &RequestFacts, host: &impl Host) -> bool {
        self.method
            .as_ref()
            .is_none_or(|m| facts.method.as_ref() == Some(m))
            && self.headers.iter().all(|(name, cond)| {
                // Non-UTF-8 values cannot equal a configured value; for a
                // regex they count as absent rather than being guessed at.
                host.header(HeaderMap::Request, name)
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .is_some_and(|value| cond.matches(&value))
            })
            && self
                .query
                .iter()
                .all(|(name, cond)| facts.query_param(name).is_some_and(|v| cond.matches(v)))
    }
}

#[derive(Debug, Clone)]
struct Candidate {
    /// Position in document order: the last tie-breaker of precedence.
    order: u32,
    /// The port of the entry's listener, when the document gives it.
    port: Option<u16>,
    /// The hostname's place in `FallbackTable::hosts`: a route files one
    /// candidate per hostname and match, so a group's hostnames are held
    /// once, not once per candidate.
    host: u32,
    /// Gateway API match precedence (the one definition in the contract).
    precedence: MatchPrecedence,
    conditions: Conditions,
    /// The entry's number, not its compiled route: the table outlives policy edits.
    entry: u32,
}

impl Candidate {
    /// Whether the candidate may serve a request on listener port `port`:
    /// any may when no port picks, and one whose listener has no port may.
    fn serves(&self, port: Option<u16>) -> bool {
        port.is_none_or(|port| self.port.is_none_or(|own| own == port))
    }
}

/// Candidates in precedence order, and their index.
#[derive(Debug, Clone, Default)]
pub struct FallbackTable {
    candidates: Vec<Candidate>,
    /// Each distinct hostname once: a Gateway's routes of one hostname make
    /// a group each (10,000 groups, 1,000 hostnames at 10,000 routes).
    hosts: Vec<HostPattern>,
    /// Each hostname's id while candidates are added; emptied by `finish`.
    host_ids: HashMap<HostPattern, u32>,
    index: CandidateIndex,
    /// The candidates' distinct listener ports; the request's port matters
    /// only when there are two or more.
    ports: Vec<u16>,
}

impl FallbackTable {
    /// A table that will hold `candidates` candidates: reserved once, so that
    /// building 10,000 does not hold a half-size and a full-size copy at once
    /// while the list doubles (a Wasm VM's memory keeps its high-water mark).
    pub fn with_capacity(candidates: usize) -> Self {
        FallbackTable {
            candidates: Vec::with_capacity(candidates),
            ..FallbackTable::default()
        }
    }

    /// The id candidates name `host` by, the same for the same hostname.
    pub fn add_host(&mut self, host: HostPattern) -> u32 {
        let next = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        *self.host_ids.entry(host).or_insert_with_key(|host| {
            self.hosts.push(host.clone());
            next
        })
    }

    fn host(&self, id: u32) -> &HostPattern {
        self.hosts.get(id as usize).unwrap_or(&HostPattern::Any)
    }

    /// Adds candidates in document order, `host` an id from
    /// [`FallbackTable::add_host`]; call [`FallbackTable::finish`] once all
    /// are in.
    pub fn push(
        &mut self,
        port: Option<u16>,
        host: u32,
        precedence: MatchPrecedence,
        conditions: Conditions,
        entry: u32,
    ) {
        let order = u32::try_from(self.candidates.len()).unwrap_or(u32::MAX);
        self.candidates.push(Candidate {
            order,
            port,
            host,
            precedence,
            conditions,
            entry,
        });
    }

    pub fn finish(&mut self) {
        // Document order breaks ties, so an in-place sort gives what a
        // stable one would, without a stable sort's scratch copy of the list.
        let hosts = &self.hosts;
        let rank = |id: u32| hosts.get(id as usize).map_or((0, 0), HostPattern::rank);
        self.candidates.sort_unstable_by(|a, b| {
            (rank(b.host).cmp(&rank(a.host)))
                .then_with(|| a.precedence.cmp(&b.precedence))
                .then_with(|| a.order.cmp(&b.order))
        });
        let keys = (0u32..).zip(&self.candidates).map(|(position, c)| {
            let host = match self.host(c.host) {
                HostPattern::Any => HostKey::Any,
                HostPattern::Exact(name) => HostKey::Exact(name),
                HostPattern::Suffix(suffix) => HostKey::Suffix(suffix),
            };
            let path = match &c.conditions.path {
                PathCondition::Exact(path) => PathKey::Exact(path),
                PathCondition::Prefix(prefix) => PathKey::Prefix(prefix),
                PathCondition::Regex(_) => PathKey::Regex,
            };
            (host, path, position)
        });
        self.index = CandidateIndex::new(keys);
        self.host_ids = HashMap::new();
        // A handful: searched, not sorted (a sort's code would weigh more
        // in the .wasm than the search).
        for port in self.candidates.iter().filter_map(|c| c.port) {
            if !self.ports.contains(&port) {
                self.ports.push(port);
            }
        }
    }

    /// Whether the request's `destination.port` can change the answer: only
    /// then is it worth a host call.
    pub fn tells_ports_apart(&self) -> bool {
        self.ports.len() > 1
    }

    /// The port that picks listeners for a request that arrived on `port`:
    /// none when it is not one of the candidates' (a gateway listening
    /// elsewhere than its Gateway says), and every listener may serve.
    fn listener_port(&self, port: Option<u16>) -> Option<u16> {
        port.filter(|p| self.ports.contains(p))
    }

    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// The entry of the first candidate, in precedence order, that matches
    /// the request that arrived on `port`.
    pub fn find(&self, facts: &RequestFacts, port: Option<u16>, host: &impl Host) -> Option<u32> {
        let port = self.listener_port(port);
        let position = self
            .index
            .first(facts.host.as_deref(), facts.path.as_deref(), |p| {
                self.candidates
                    .get(p as usize)
                    .is_some_and(|c| c.serves(port) && c.conditions.matches(facts, host))
            })?;
        self.candidates.get(position as usize).map(|c| c.entry)
    }

    /// The same answer by scanning every candidate: the definition the index
    /// must agree with (tests and fuzzing compare the two).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn find_by_scan(
        &self,
        facts: &RequestFacts,
        port: Option<u16>,
        host: &impl Host,
    ) -> Option<u32> {
        let request_host = facts.host.as_deref();
        let port = self.listener_port(port);
        self.candidates
            .iter()
            .find(|c| {
                c.serves(port)
                    && self.host(c.host).matches(request_host)
                    && c.conditions.matches(facts, host)
            })
            .map(|c| c.entry)
    }
}

#[cfg(test)]
mod tests;
