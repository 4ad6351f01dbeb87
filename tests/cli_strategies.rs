//! `attache explain` for policies that opt into a GEP-713 (2025) merge
//! strategy (examples/strategies/, tests/fixtures/cli/patch-null.yaml):
//! each strategy named in the GEP's words, with the lines of
//! docs/semantics.md ("Merge strategies"), exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::text;

fn explain(input: &str, route: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_attache"))
        .current_dir(support::workspace())
        .env("COLUMNS", "100")
        .args(["explain", "-f", input, "--route", route])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Atomic defaults: the less specific policy is dropped whole, every field named.
#[test]
fn explain_names_atomic_defaults() {
    assert_eq!(
        explain("examples/strategies", "shop/atomic-defaults"),
        "\
http/shop/atomic-defaults/main
  listener http, HTTPRoute shop/atomic-defaults rule main
  timeouts.backendRequest: 3s
    from RoutePolicy shop/rule-atomic (Atomic defaults @ HTTPRoute shop/atomic-defaults rule main)
  timeouts.request: (unset)
    lost 20s from RoutePolicy shop/route-atomic (Atomic defaults @ HTTPRoute shop/atomic-defaults):
      dropped whole: RoutePolicy shop/rule-atomic at HTTPRoute shop/atomic-defaults rule main is
      more specific
  retry.attempts: (unset)
    lost 2 from RoutePolicy shop/route-atomic (Atomic defaults @ HTTPRoute shop/atomic-defaults):
      dropped whole: RoutePolicy shop/rule-atomic at HTTPRoute shop/atomic-defaults rule main is
      more specific
  note: strategy of RoutePolicy shop/rule-atomic at HTTPRoute shop/atomic-defaults rule main: Atomic
    defaults
  note: strategy of RoutePolicy shop/route-atomic at HTTPRoute shop/atomic-defaults: Atomic defaults
  note: from RoutePolicy shop/rule-atomic (Atomic defaults; nothing more specific)
  note: RoutePolicy shop/route-atomic dropped whole: RoutePolicy shop/rule-atomic at HTTPRoute
    shop/atomic-defaults rule main is more specific; it went: timeouts.request, retry.attempts
"
    );
}

/// Atomic overrides: the less specific policy replaces all below; the rule's own value stays.
#[test]
fn explain_names_atomic_overrides() {
    assert_eq!(
        explain("examples/strategies", "shop/atomic-overrides"),
        "\
http/shop/atomic-overrides/main
  listener http, HTTPRoute shop/atomic-overrides rule main
  timeouts.request: 9s
    from HTTPRoute shop/atomic-overrides rule main (inline)
  timeouts.backendRequest: 1s
    from RoutePolicy shop/route-guard (Atomic overrides @ HTTPRoute shop/atomic-overrides)
  retry.attempts: (unset)
    lost 4 from RoutePolicy shop/rule-guard (Atomic overrides @ HTTPRoute shop/atomic-overrides rule
      main): RoutePolicy shop/route-guard (Atomic overrides) at HTTPRoute shop/atomic-overrides
      replaces all below
  note: strategy of RoutePolicy shop/rule-guard at HTTPRoute shop/atomic-overrides rule main: Atomic
    overrides
  note: strategy of RoutePolicy shop/route-guard at HTTPRoute shop/atomic-overrides: Atomic
    overrides
  note: RoutePolicy shop/rule-guard replaces all below; dropped: nothing
  note: RoutePolicy shop/route-guard replaces all below; dropped: RoutePolicy shop/rule-guard
    retry.attempts
"
    );
}

/// Patch defaults (RFC 7386): per scalar the more specific wins; a header list is replaced whole.
#[test]
fn explain_names_patch_defaults() {
    assert_eq!(
        explain("examples/strategies", "shop/patch-defaults"),
        "\
http/shop/patch-defaults/main
  listener http, HTTPRoute shop/patch-defaults rule main
  timeouts.request: 10s
    from RoutePolicy shop/route-patch (Patch defaults @ HTTPRoute shop/patch-defaults)
  requestHeaderModifier.set[x-a]: \"rule\"
    from RoutePolicy shop/rule-patch (Patch defaults @ HTTPRoute shop/patch-defaults rule main)
    lost \"route\" from RoutePolicy shop/route-patch (Patch defaults @ HTTPRoute shop/patch-defaults):
      RoutePolicy shop/rule-patch at HTTPRoute shop/patch-defaults rule main over it (Patch
      defaults, RFC 7386)
  requestHeaderModifier.set[x-b]: (unset)
    lost \"route\" from RoutePolicy shop/route-patch (Patch defaults @ HTTPRoute shop/patch-defaults):
      list replaced whole (Patch defaults, RFC 7386): RoutePolicy shop/rule-patch at HTTPRoute
      shop/patch-defaults rule main holds it
  note: strategy of RoutePolicy shop/rule-patch at HTTPRoute shop/patch-defaults rule main: Patch
    defaults
  note: strategy of RoutePolicy shop/route-patch at HTTPRoute shop/patch-defaults: Patch defaults
"
    );
}

/// Patch overrides: per scalar, and per list, the less specific wins.
#[test]
fn explain_names_patch_overrides() {
    assert_eq!(
        explain("examples/strategies", "shop/patch-overrides"),
        "\
http/shop/patch-overrides/main
  listener http, HTTPRoute shop/patch-overrides rule main
  timeouts.request: 9s
    from HTTPRoute shop/patch-overrides rule main (inline)
  timeouts.backendRequest: 1s
    from RoutePolicy shop/route-pin (Patch overrides @ HTTPRoute shop/patch-overrides)
    lost 2s from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule
      main): RoutePolicy shop/route-pin at HTTPRoute shop/patch-overrides over it (Patch overrides,
      RFC 7386)
  retry.attempts: 3
    from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule main)
  retry.codes: [502]
    from RoutePolicy shop/route-pin (Patch overrides @ HTTPRoute shop/patch-overrides)
    lost [503] from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule
      main): RoutePolicy shop/route-pin at HTTPRoute shop/patch-overrides over it (Patch overrides,
      RFC 7386)
  retry.retryOn: [connect-failure, refused-stream, reset]
    from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule main)
  note: retry.retryOn: connect-failure, refused-stream and reset added: a retry stanza in effect
    retries connection errors (Gateway API, GEP-1731)
  note: strategy of RoutePolicy shop/rule-pin at HTTPRoute shop/patch-overrides rule main: Patch
    overrides
  note: strategy of RoutePolicy shop/route-pin at HTTPRoute shop/patch-overrides: Patch overrides
"
    );
}

/// Patch overrides' null removes what a policy below supplied, never the rule's own value.
#[test]
fn explain_names_patch_overrides_null() {
    assert_eq!(
        explain("tests/fixtures/cli/patch-null.yaml", "shop/patch-overrides"),
        "\
http/shop/patch-overrides/main
  listener http, HTTPRoute shop/patch-overrides rule main
  timeouts.request: 9s
    from HTTPRoute shop/patch-overrides rule main (inline)
  retry.attempts: 3
    from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule main)
  retry.retryOn: [connect-failure, refused-stream, reset]
    from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule main)
  retry.codes: (unset)
    lost [503] from RoutePolicy shop/rule-pin (Patch overrides @ HTTPRoute shop/patch-overrides rule
      main): removed by RoutePolicy shop/route-pin (null) at HTTPRoute shop/patch-overrides
  note: retry.retryOn: connect-failure, refused-stream and reset added: a retry stanza in effect
    retries connection errors (Gateway API, GEP-1731)
  note: strategy of RoutePolicy shop/rule-pin at HTTPRoute shop/patch-overrides rule main: Patch
    overrides
  note: strategy of RoutePolicy shop/route-pin at HTTPRoute shop/patch-overrides: Patch overrides
"
    );
}

/// Custom: the seeds' DeepMergePreferParent, chosen by the policy.
#[test]
fn explain_names_custom() {
    assert_eq!(
        explain("examples/strategies", "shop/custom"),
        "\
http/shop/custom/main
  listener http, HTTPRoute shop/custom rule main
  requestHeaderModifier.set[x-season]: \"summer,winter\"
    from RoutePolicy shop/route-season (Custom (DeepMergePreferParent) @ HTTPRoute shop/custom) +
      HTTPRoute shop/custom rule main (inline)
  note: strategy of RoutePolicy shop/route-season at HTTPRoute shop/custom: Custom
    (DeepMergePreferParent)
"
    );
}

/// Two Atomic defaults at one level: the newer wins, and explain says the seeds would differ.
#[test]
fn explain_names_newest() {
    assert_eq!(
        explain("examples/strategies", "shop/newest"),
        "\
http/shop/newest/main
  listener http, HTTPRoute shop/newest rule main
  timeouts.request: 7s
    from RoutePolicy shop/newer (Atomic defaults @ HTTPRoute shop/newest)
    lost 5s from RoutePolicy shop/older (Atomic defaults @ HTTPRoute shop/newest): dropped whole:
      RoutePolicy shop/newer at HTTPRoute shop/newest is newer (2025 order)
  note: strategy of RoutePolicy shop/newer at HTTPRoute shop/newest: Atomic defaults
  note: strategy of RoutePolicy shop/older at HTTPRoute shop/newest: Atomic defaults
  note: from RoutePolicy shop/newer (Atomic defaults; nothing more specific)
  note: RoutePolicy shop/older dropped whole: RoutePolicy shop/newer at HTTPRoute shop/newest is
    newer (2025 order); it went: timeouts.request
  note: 2025 order: the newer default wins here (RoutePolicy shop/newer over RoutePolicy shop/older
    at HTTPRoute shop/newest); the seeds: the older
"
    );
}
