//! The resolver's RE2 program-size model (attache_core::re2_program)
//! against RE2 itself: google-re2's `programsize`, the number Envoy checks
//! against `re2.max_program_size.error_level`. The model must never be
//! below RE2 (else a regex Envoy refuses would reach it and refuse a whole
//! route configuration), and on the shapes routes use it must be close
//! (else good routes would be refused). scripts/setup.sh installs
//! google-re2 into the project's venv; without it this test skips outside
//! CI and fails under CI=true.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use attache_core::re2_program::program_size;

/// The sizes RE2 gives `patterns`, in order (None: RE2 refuses it).
fn re2_sizes(patterns: &[String]) -> Option<Vec<Option<usize>>> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let ok = python.is_file()
        && Command::new(&python)
            .args(["-c", "import re2"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("google-re2 is needed in .venv (scripts/setup.sh installs it)");
        }
        eprintln!("skipped: google-re2 is not in .venv (scripts/setup.sh installs it)");
        return None;
    }
    let script = r#"
import json, sys, re2
for line in sys.stdin:
    try:
        print(re2.compile(json.loads(line)).programsize)
    except Exception:
        print("refused")
"#;
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for p in patterns {
            writeln!(stdin, "{}", serde_json::to_string(p).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let sizes: Vec<Option<usize>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().ok())
        .collect();
    assert_eq!(sizes.len(), patterns.len());
    Some(sizes)
}

/// Regexes of the shapes routes use (paths, header values, query values).
const ROUTE_SHAPES: &[&str] = &[
    "/api/v[0-9]+/.*",
    "/users/[0-9]+",
    "/users/[0-9]+/orders/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    r".*\.(png|jpg|css|js)",
    "/(foo|bar|baz)/.*",
    "^/static/.*$",
    "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+",
    "v[12]",
    r"\d{3}-\d{4}",
    r"/orders/\w+",
    r"/orders/\W+",
    r"\s*token\s*",
    r"\S+",
    "/é/.*",
    "[^/]+/[^/]+",
    "/rx/[a-z]{92}",
    "/rx/[a-z]{300}",
    ".*",
    "(?s).*",
    "/a(b(c)?)*",
    "/shop/(cart|checkout)(/.*)?",
    "bearer [A-Za-z0-9._~+/-]+=*",
];

/// Random regexes from a small grammar (a fixed seed: the same corpus each
/// run). Covers literals, ASCII and Unicode classes, Perl classes, groups,
/// alternations, every repetition form and anchors.
fn generated(count: usize) -> Vec<String> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    const ATOMS: &[&str] = &[
        "a",
        "b",
        "/",
        "é",
        ".",
        "[a-z]",
        "[^/]",
        r"\d",
        r"\D",
        r"\w",
        r"\s",
        r"\S",
        "[0-9a-f]",
        "[é-ë]",
        "[a-z\\x{100}-\\x{200}]",
        "k",
        "(?i:k)",
        r"\.",
        "-",
    ];
    const REPEATS: &[&str] = &["", "", "", "*", "+", "?", "{2}", "{3,}", "{1,3}", "{0,2}"];
    fn expr(next: &mut dyn FnMut(usize) -> usize, depth: usize) -> String {
        let pieces = 1 + next(4);
        let mut out = String::new();
        for _ in 0..pieces {
            let atom = if depth < 2 && next(4) == 0 {
                let inner = expr(next, depth + 1);
                match next(3) {
                    0 => format!("({inner})"),
                    1 => format!("(?:{inner}|{})", expr(next, depth + 1)),
                    _ => format!("(?:{inner})"),
                }
            } else {
                ATOMS[next(ATOMS.len())].to_string()
            };
            out.push_str(&atom);
            out.push_str(REPEATS[next(REPEATS.len())]);
        }
        out
    }
    (0..count)
        .map(|_| {
            let body = expr(&mut next, 0);
            match next(6) {
                0 => format!("^{body}"),
                1 => format!("{body}$"),
                2 => format!("{body}|{}", expr(&mut next, 1)),
                _ => body,
            }
        })
        .collect()
}

#[test]
fn the_model_is_never_below_re2_and_close_on_route_shapes() {
    let shapes: Vec<String> = ROUTE_SHAPES.iter().map(|s| s.to_string()).collect();
    let corpus = generated(3000);
    let all: Vec<String> = shapes.iter().chain(&corpus).cloned().collect();
    let Some(sizes) = re2_sizes(&all) else { return };
    let mut compared = 0;
    let mut over = Vec::new();
    for (pattern, re2) in all.iter().zip(&sizes) {
        let (Some(re2), Ok(ours)) = (re2, program_size(pattern)) else {
            continue;
        };
        compared += 1;
        assert!(
            ours >= *re2,
            "{pattern:?}: the model says {ours}, RE2 {re2}: a regex Envoy refuses could pass"
        );
        over.push(ours - re2);
    }
    assert!(compared > 2500, "only {compared} patterns compared");
    for (pattern, re2) in shapes.iter().zip(&sizes) {
        let ours = program_size(pattern).unwrap();
        let re2 = re2.unwrap();
        assert!(
            ours <= re2 + 4,
            "{pattern:?}: the model says {ours}, RE2 {re2}: good routes near the limit would be refused"
        );
    }
    over.sort_unstable();
    eprintln!(
        "{compared} patterns: the model exceeds RE2 by median {}, 95th percentile {}, max {}",
        over[over.len() / 2],
        over[over.len() * 95 / 100],
        over[over.len() - 1]
    );
}

#[test]
fn at_envoys_limit_the_model_and_re2_agree_on_a_route_regex() {
    // `/rx/[a-z]{n}`: RE2's size grows by one per range; Envoy accepts 100.
    let patterns: Vec<String> = (88..=100).map(|n| format!("/rx/[a-z]{{{n}}}")).collect();
    let Some(sizes) = re2_sizes(&patterns) else {
        return;
    };
    for (pattern, re2) in patterns.iter().zip(sizes) {
        let (ours, re2) = (program_size(pattern).unwrap(), re2.unwrap());
        // One above RE2 (the margin for a repetition): at the very limit a
        // route Envoy would take is refused, never the other way round.
        assert_eq!(ours, re2, "{pattern}");
    }
}
