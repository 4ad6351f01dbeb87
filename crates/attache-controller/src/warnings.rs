//! The resolver's findings that the controller reports as Kubernetes
//! Events on the object they name, beside its log line: a policy whose
//! request-header change was refused on a rule (docs/semantics.md, "A
//! policy never changes which rule serves a request") gets a Warning Event
//! `HeaderChangeRefused` naming the field, the header and the rule. Each is
//! published once while it holds, not once per round: [`Reported`] keeps
//! what was said and forgets what no longer holds, so a refusal that comes
//! back is said again.

use std::collections::BTreeSet;

use attache_core::topology::ObjectKey;
use attache_core::Diagnostic;

/// One finding to publish as an Event on `kind` `key`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyWarning {
    pub kind: String,
    pub key: ObjectKey,
    /// The Event's reason (`DiagnosticCode::reason`).
    pub reason: &'static str,
    /// The Event's note: the finding's field and message.
    pub message: String,
}

/// The findings of `diagnostics` that name a namespaced object
/// (`Kind namespace/name`) and carry a code.
pub fn policy_warnings(diagnostics: &[Diagnostic]) -> Vec<PolicyWarning> {
    diagnostics
        .iter()
        .filter_map(|d| {
            let code = d.code?;
            let (kind, key) = d.object.as_deref()?.split_once(' ')?;
            let (namespace, name) = key.split_once('/')?;
            let field = d
                .field
                .as_deref()
                .map(|f| format!("{f}: "))
                .unwrap_or_default();
            Some(PolicyWarning {
                kind: kind.to_string(),
                key: ObjectKey {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                },
                reason: code.reason(),
                message: format!("{field}{}", d.message),
            })
        })
        .collect()
}

/// What was published and still holds.
#[derive(Debug, Default)]
pub struct Reported {
    said: BTreeSet<PolicyWarning>,
}

impl Reported {
    /// The warnings of `now` not yet published; what no longer holds is
    /// forgotten.
    pub fn fresh<'a>(&mut self, now: &'a [PolicyWarning]) -> Vec<&'a PolicyWarning> {
        let current: BTreeSet<&PolicyWarning> = now.iter().collect();
        self.said.retain(|w| current.contains(w));
        current
            .into_iter()
            .filter(|w| self.said.insert((*w).clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attache_core::diagnostic::DiagnosticCode;

    fn refusal(policy: &str, header: &str) -> Diagnostic {
        Diagnostic::warning(format!(
            "refused on entry e: a rule matches on header {header}"
        ))
        .code(DiagnosticCode::HeaderChangeRefused)
        .on(format!("RoutePolicy {policy}"))
        .field(format!("requestHeaders.set.{header}"))
    }

    #[test]
    fn only_coded_findings_on_a_namespaced_object_become_events() {
        let found = policy_warnings(&[
            refusal("team-a/steer", "x-tier"),
            Diagnostic::warning("a clamp").on("RoutePolicy team-a/other"),
            Diagnostic::warning("no object").code(DiagnosticCode::HeaderChangeRefused),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        let w = &found[0];
        assert_eq!(
            (w.kind.as_str(), w.key.to_string().as_str()),
            ("RoutePolicy", "team-a/steer")
        );
        assert_eq!(w.reason, "HeaderChangeRefused");
        assert!(
            w.message.starts_with("requestHeaders.set.x-tier: refused"),
            "{}",
            w.message
        );
    }

    #[test]
    fn each_is_said_once_while_it_holds_and_again_when_it_returns() {
        let mut reported = Reported::default();
        let one = policy_warnings(&[refusal("a/p", "x-1")]);
        let two = policy_warnings(&[refusal("a/p", "x-1"), refusal("b/q", "x-2")]);
        assert_eq!(reported.fresh(&one).len(), 1);
        assert_eq!(reported.fresh(&one).len(), 0, "not once per round");
        let new: Vec<_> = reported
            .fresh(&two)
            .into_iter()
            .map(|w| w.key.to_string())
            .collect();
        assert_eq!(new, ["b/q"]);
        assert!(reported.fresh(&[]).is_empty());
        assert_eq!(reported.fresh(&one).len(), 1, "gone, then back: said again");
    }
}
