//! A policy never changes which rule serves a request (docs/semantics.md,
//! "A policy never changes which rule serves a request").
//!
//! Envoy's Wasm host clears the route cache on every request-header write,
//! so the router matches again after the filter: a policy's request-header
//! change that names a header some rule's header match tests could move
//! the request to that rule (another backend, possibly another tenant's).
//! Here, after the fold, such a change is refused on the rule where it
//! could do that, and only there: the policy's other settings, and the same
//! change on rules no such match can reach, stay in effect.
//!
//! "Could match the same request": a rule on the same port (a Gateway's
//! listener or a ListenerSet's; Envoy serves one port from one listener)
//! whose effective hostnames intersect the targeted rule's. The targeted
//! rule counts too: removing a header its own match tests moves the request
//! as well. A rule's own header filters (and a delegating parent rule's)
//! are not a policy's: Gateway API applies them after the match
//! (docs/security.md, "The route cache").

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use crate::attach::Attachment;
use crate::diagnostic::{Diagnostic, DiagnosticCode};
use crate::field::{Direction, FieldKey, FieldValue};
use crate::fold::Folded;
use crate::hostname::intersect_lists;
use crate::model::Inputs;
use crate::supplier::{Source, Supplier};

/// One rule that tests a header: where it listens, which hosts it serves,
/// and how a message names it.
#[derive(Debug, Clone, Hash)]
struct Tester {
    port: u16,
    /// Effective hostnames; empty is any.
    hostnames: Vec<String>,
    /// `HTTPRoute team-b/orders rule 0`.
    rule: String,
}

/// Every header a rule of one Gateway tests, built once per resolution.
/// Only rules with a header match are kept, so a Gateway without any costs
/// nothing per rule.
#[derive(Debug, Default)]
pub(crate) struct Steering {
    /// Lower-cased header name -> the rules that test it.
    testers: HashMap<String, Vec<Tester>>,
    /// A hash of `testers`: an entry memo key carries it, so that a change
    /// of any rule's header match folds every entry of the Gateway again.
    fingerprint: u64,
}

/// A policy's request-header change refused on one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The folded field: `requestHeaders.set.x-tenant`, or the remove list.
    pub field: FieldKey,
    /// The header, lower-cased.
    pub header: String,
    /// Indices into the rule's suppliers of the policies that supplied it.
    pub policies: Vec<usize>,
    /// Whether the whole field went (false: one name of a remove list).
    pub whole_field: bool,
    /// The rule whose match tests the header.
    pub would_match: String,
}

impl Refusal {
    /// `requestHeaders.set.x-tenant refused: HTTPRoute team-b/b rule 0
    /// matches on header x-tenant, ...`: what status, explain and the
    /// warning say.
    pub fn describe(&self) -> String {
        let field = match &self.field {
            FieldKey::HeaderRemove(_) => format!("{} {}", self.field, self.header),
            _ => self.field.to_string(),
        };
        format!("{field} refused: {}", self.reason())
    }

    /// Why, without the field: `HTTPRoute team-b/b rule 0 matches on ...`.
    fn reason(&self) -> String {
        format!(
            "{} matches on header {}, so changing it would move the request to another rule (docs/semantics.md, section 14)",
            self.would_match, self.header
        )
    }
}

impl Steering {
    pub fn new(attachments: &[Attachment<'_>]) -> Self {
        let mut testers: HashMap<String, Vec<Tester>> = HashMap::new();
        for att in attachments {
            let Some((route, rule)) = att.leaf() else {
                continue;
            };
            let mut names: Vec<String> = att
                .matches
                .iter()
                .flat_map(|m| m.headers.iter())
                .map(|h| h.name.to_ascii_lowercase())
                .collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                testers.entry(name).or_default().push(Tester {
                    port: att.listener.port,
                    hostnames: att.hostnames.clone(),
                    rule: format!("{} rule {}", route.object(), rule.label()),
                });
            }
        }
        let mut h = DefaultHasher::new();
        let ordered: BTreeMap<&String, &Vec<Tester>> = testers.iter().collect();
        ordered.hash(&mut h);
        Steering {
            fingerprint: h.finish(),
            testers,
        }
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The rule that tests `header` and could match the requests `att`
    /// serves, if any.
    fn tested_by(&self, att: &Attachment<'_>, header: &str) -> Option<&str> {
        self.testers.get(header)?.iter().find_map(|t| {
            let same_requests = t.port == att.listener.port
                && intersect_lists(&t.hostnames, &att.hostnames).is_some();
            same_requests.then_some(t.rule.as_str())
        })
    }

    /// Takes out of `folded` every request-header change a policy supplies
    /// that could move `att`'s requests to another rule, and says which.
    pub fn refuse(
        &self,
        att: &Attachment<'_>,
        folded: &mut Folded,
        suppliers: &[Supplier],
    ) -> Vec<Refusal> {
        if self.testers.is_empty() {
            return Vec::new();
        }
        let mut refusals = Vec::new();
        let mut emptied = Vec::new();
        for (key, effective) in folded.fields.iter_mut() {
            let policies: Vec<usize> = effective
                .suppliers
                .iter()
                .copied()
                .filter(|&i| {
                    suppliers
                        .get(i)
                        .is_some_and(|s| matches!(s.source, Source::Policy { .. }))
                })
                .collect();
            if policies.is_empty() {
                continue;
            }
            match (key, &mut effective.value) {
                (FieldKey::HeaderSet(Direction::Request, name), _)
                | (FieldKey::HeaderAdd(Direction::Request, name), _) => {
                    if let Some(rule) = self.tested_by(att, &name.to_ascii_lowercase()) {
                        refusals.push(Refusal {
                            field: key.clone(),
                            header: name.to_ascii_lowercase(),
                            policies,
                            whole_field: true,
                            would_match: rule.to_string(),
                        });
                        emptied.push(key.clone());
                    }
                }
                (FieldKey::HeaderRemove(Direction::Request), FieldValue::Words(names)) => {
                    names.retain(|name| {
                        let lower = name.to_ascii_lowercase();
                        let Some(rule) = self.tested_by(att, &lower) else {
                            return true;
                        };
                        refusals.push(Refusal {
                            field: key.clone(),
                            header: lower,
                            policies: policies.clone(),
                            whole_field: false,
                            would_match: rule.to_string(),
                        });
                        false
                    });
                    if names.is_empty() {
                        emptied.push(key.clone());
                        // The field is lost once, however many names went.
                        if let Some(r) = refusals.iter_mut().find(|r| r.field == *key) {
                            r.whole_field = true;
                        }
                    }
                }
                _ => {}
            }
        }
        for key in emptied {
            folded.fields.remove(&key);
        }
        refusals
    }
}

/// The warning for one refusal, on the policy that supplied it.
pub(crate) fn refusal_warning(
    inputs: &Inputs,
    refusal: &Refusal,
    suppliers: &[Supplier],
    entry: &str,
) -> Vec<Diagnostic> {
    refusal
        .policies
        .iter()
        .filter_map(|&i| {
            let supplier = suppliers.get(i)?;
            let Source::Policy { index, .. } = supplier.source else {
                return None;
            };
            let policy = inputs.policies.get(index)?;
            Some(
                Diagnostic::warning(format!(
                    "refused on entry {entry} ({}): {}",
                    supplier.role,
                    refusal.reason()
                ))
                .code(DiagnosticCode::HeaderChangeRefused)
                .at(&policy.meta.origin)
                .on(policy.display_name())
                .field(refusal.field.to_string())
                .hint(format!(
                    "a policy may not change a request header a route matches on; use another header name, or target only rules whose listener and hostnames no rule matching on {} shares",
                    refusal.header
                )),
            )
        })
        .collect()
}
