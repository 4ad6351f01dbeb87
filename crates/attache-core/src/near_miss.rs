//! "Did you mean": a misspelt API group or kind of an object the resolver
//! reads (`policy.attache.io`, `RoutePolcy`) must not turn the object into a
//! silently skipped foreign one, so a near miss is a warning naming the
//! right spelling (and `--strict` fails on it). Exact kinds of other
//! groups stay a plain note, as before.

use crate::diagnostic::Diagnostic;
use crate::model::policy::{KINDS, POLICY_GROUP};
use crate::model::route::GATEWAY_GROUP;
use crate::source::Origin;

/// The closest of `known` to `word` (case-insensitive), when it is near
/// enough to be a typo: at most `max` edits, and fewer than a quarter of
/// the word's length (so that short unrelated names do not match).
pub fn closest<'a>(word: &str, known: &[&'a str], max: usize) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    known
        .iter()
        .filter(|k| **k != word)
        .map(|k| {
            (
                strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase()),
                *k,
            )
        })
        .filter(|(d, _)| *d <= max && *d * 4 < lower.len().max(4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Every group the resolver reads objects from.
fn groups() -> Vec<&'static str> {
    let mut out = vec![GATEWAY_GROUP, POLICY_GROUP];
    for k in KINDS {
        if !out.contains(&k.group) {
            out.push(k.group);
        }
    }
    out
}

/// The kinds the resolver reads from `group`.
pub fn kinds_of(group: &str) -> Vec<&'static str> {
    if group == GATEWAY_GROUP {
        return vec!["GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute"];
    }
    KINDS
        .iter()
        .filter(|k| k.group == group)
        .map(|k| k.name)
        .collect()
}

/// The warning for an object that is not read but whose group or kind is a
/// near miss of one that is; `None` for a genuinely foreign object.
pub(crate) fn diagnose(api_version: &str, kind: &str, origin: &Origin) -> Option<Diagnostic> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let groups = groups();
    let (right_group, right_kind) = if groups.contains(&group) {
        (group, closest(kind, &kinds_of(group), 2)?)
    } else {
        let g = closest(group, &groups, 3)?;
        let k = if kinds_of(g).contains(&kind) {
            kind
        } else {
            closest(kind, &kinds_of(g), 2).unwrap_or(kind)
        };
        (g, k)
    };
    let wanted = format!("{right_group}/{version} {right_kind}");
    Some(
        Diagnostic::warning(format!(
            "{api_version} {kind} is not read (did you mean {wanted}?); the object is ignored"
        ))
        .at(origin)
        .on(kind)
        .field(if right_group == group {
            "kind"
        } else {
            "apiVersion"
        })
        .hint(format!(
            "fix the spelling; {right_group} kinds read here: {}",
            kinds_of(right_group).join(", ")
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_find_the_right_name_and_strangers_do_not() {
        let groups = groups();
        assert_eq!(closest("policy.attache.io", &groups, 3), Some(POLICY_GROUP));
        assert_eq!(
            closest("gateway.networking.k8s.i", &groups, 3),
            Some(GATEWAY_GROUP)
        );
        assert_eq!(closest("cert-manager.io", &groups, 3), None);
        assert_eq!(closest("apps", &groups, 3), None);
        let kinds = kinds_of(POLICY_GROUP);
        assert_eq!(closest("RoutePolcy", &kinds, 2), Some("RoutePolicy"));
        assert_eq!(closest("routepolicy", &kinds, 2), Some("RoutePolicy"));
        assert_eq!(
            closest("ClusterRoutPolicy", &kinds, 2),
            Some("ClusterRoutePolicy")
        );
        let eg = kinds_of("gateway.envoyproxy.io");
        assert_eq!(
            closest("BackendTraficPolicy", &eg, 2),
            Some("BackendTrafficPolicy")
        );
        // Envoy Gateway's other kinds are foreign, not typos.
        for other in [
            "ClientTrafficPolicy",
            "SecurityPolicy",
            "EnvoyProxy",
            "Backend",
        ] {
            assert_eq!(closest(other, &eg, 2), None, "{other}");
        }
    }
}
