#!/usr/bin/env python3
"""Layers point down: fails when a module imports from a layer above its own.

Each crate below declares its layers, bottom first, as module paths (a file
`src/a/b.rs` or `src/a/b/mod.rs` is module `a::b`; the longest declared
prefix decides its layer). A module may name (`crate::...`, `super::...`)
only modules of its own layer or of a layer below. Test code (an item after
`#[cfg(test)]`, or a file only compiled for tests) is not checked: tests may
build their input through the public entry points above them.

  python3 scripts/layers.py              # check the workspace
  python3 scripts/layers.py --self-test  # prove the check fails on an upward import

ARCHITECTURE.md ("Layers") says what each layer is for.
"""

import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom first. A module absent from the table is an error, so a new module
# has to be placed.
LAYERS = {
    "crates/attache-core/src": [
        (
            "base",
            [
                "contract",
                "source",
                "diagnostic",
                "topology",
                "limits",
                "duration",
                "dns_name",
                "re2_program",
                "field",
                "hostname",
                "matches",
                "error",
                "settings",
                "schema::rules",
            ],
        ),
        ("model", ["model", "supplier", "written", "near_miss", "overlay"]),
        ("parse", ["parse"]),
        ("attach", ["attach", "route_parents"]),
        ("fold", ["fold", "retries", "prepare"]),
        ("entry", ["entry", "data_plane", "explain", "status", "diff"]),
        ("resolve", ["resolve", "schema", "reach", ""]),
    ],
    "crates/attache-render/src": [
        (
            "base",
            [
                "error",
                "duration",
                "version",
                "matching",
                "virtual_hosts",
                "data_plane",
                "wasm",
                "manifests",
                "secrets",
                "backends",
                "test_fixtures",
                "test_gateway",
            ],
        ),
        ("resources", ["ecds", "listener", "resources", "sds", "tls", "crds", "oci", "wasmplugin", "trafficextension"]),
        ("writers", ["bootstrap", "xds"]),
        ("root", [""]),
    ],
    # The text reader files and API objects share (one parser, one set of
    # diagnostics): the YAML value that keeps duplicate keys, then the
    # splitting of documents and lists.
    "crates/attache-input/src": [
        ("value", ["strict_value"]),
        ("reader", [""]),
    ],
    # The controller: the kinds table; what is derived from it to install
    # the controller (RBAC, manifests, image); which objects each Gateway
    # depends on (scope); the snapshot the API objects are read into; the
    # pure decisions; the kube-rs adapter's parts, then the loop that ties
    # them (kube/mod.rs).
    "crates/attache-controller/src": [
        ("table", ["kinds", "prune"]),
        ("install", ["rbac", "deploy", "image"]),
        ("scope", ["scope"]),
        ("read", ["snapshot"]),
        ("serve", ["serving"]),
        ("decide", ["reconcile", "status"]),
        ("metrics", ["kube::metrics"]),
        ("adapter", ["kube::watch", "kube::lease", "kube::serve", "kube::api", "kube::cluster"]),
        ("delivery", ["plugin_kind"]),
        ("round", ["kube::round"]),
        ("loop", ["kube"]),
        ("root", [""]),
    ],
    # The stand-in API server (tests only): the pieces (errors, kinds,
    # pruning, field sets, selectors, the store, the log, faults); the
    # writes and reads on the state; the HTTP side; the handle.
    "crates/attache-apiserver/src": [
        ("base", ["error", "kinds", "prune", "fields", "selector", "store", "log", "faults"]),
        ("writes", ["apply", "state", "write", "manifests"]),
        ("http", ["server"]),
        ("root", ["handle", ""]),
    ],
    # The CLI: `cmd/mod.rs` holds the flags and the error every command
    # shares (its dispatch names the commands by relative path, which this
    # check does not follow); `cmd/load.rs` the loading `render` and `watch`
    # share. Commands are siblings: none imports another.
    "src": [
        ("base", ["output", "input", "cmd", "cmd::load", "cmd::kubectl", "cmd::source", "cmd::strict", "cmd::wrap", "cmd::plugin_flags"]),
        (
            "commands",
            [
                "cmd::completion",
                "cmd::controller",
                "cmd::crds",
                "cmd::deploy",
                "cmd::diff",
                "cmd::explain",
                "cmd::graph",
                "cmd::package",
                "cmd::render",
                "cmd::resolve",
                "cmd::status",
                "cmd::watch",
            ],
            "siblings",
        ),
        ("root", [""]),
    ],
}

# Known exceptions, each with its reason; the check prints them so they are
# not forgotten. (importer prefix, imported prefix)
ALLOWED: set = set()

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(rel):
    """`a/b.rs` -> ["a", "b"]; `a/mod.rs` -> ["a"]; `lib.rs`/`main.rs` -> []."""
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        parts = []
    return parts


def place(table, path):
    """(rank of the layer, the declared prefix) of a module path."""
    best, best_len = (None, None), -1
    for rank, (_, prefixes, *_) in enumerate(table):
        for prefix in prefixes:
            p = prefix.split("::") if prefix else []
            if path[: len(p)] == p and len(p) > best_len:
                best, best_len = (rank, prefix), len(p)
    return best


def layer_of(table, path):
    return place(table, path)[0]


def expand_use_tree(text):
    """`a::{b::C, d}` -> [["a","b","C"], ["a","d"]] (names only, no `as`)."""
    text = re.sub(r"\s+as\s+\w+", "", text)
    text = re.sub(r"\s+", "", text)
    out = []

    def walk(s, prefix):
        # split s at top-level commas
        depth, start, items = 0, 0, []
        for i, c in enumerate(s):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                items.append(s[start:i])
                start = i + 1
        items.append(s[start:])
        for item in items:
            if not item:
                continue
            if "{" in item:
                head, rest = item.split("{", 1)
                head_parts = [p for p in head.split("::") if p]
                walk(rest[: rest.rfind("}")], prefix + head_parts)
            else:
                out.append(prefix + [p for p in item.split("::") if p])

    walk(text, [])
    return out


def strip_tests(lines):
    """Drops every item that follows `#[cfg(test)]` (rustfmt layout)."""
    kept, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#[cfg(test)]":
            indent = line[: len(line) - len(line.lstrip())]
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                while j < len(lines) and lines[j].rstrip() != indent + "}":
                    j += 1
            else:
                while j < len(lines) and not lines[j].rstrip().endswith(";"):
                    j += 1
            i = j + 1
            continue
        kept.append(line)
        i += 1
    return kept


def test_only_files(src):
    """Files declared only under `#[cfg(test)]` (`#[cfg(test)] mod tests;`)."""
    out = set()
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            lines = open(os.path.join(dirpath, f), encoding="utf-8").read().split("\n")
            for i, line in enumerate(lines[:-1]):
                m = re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?mod (\w+);", lines[i + 1])
                if line.strip() == "#[cfg(test)]" and m:
                    base = os.path.dirname(os.path.join(dirpath, f))
                    if f not in ("mod.rs", "lib.rs", "main.rs"):
                        base = os.path.join(base, f[:-3])
                    for cand in (m.group(1) + ".rs", os.path.join(m.group(1), "mod.rs")):
                        out.add(os.path.normpath(os.path.join(base, cand)))
    return out


def imports(text, here):
    """Module paths a file names through `crate::` or `super::`."""
    code = "\n".join(
        l for l in strip_tests(text.split("\n")) if not l.lstrip().startswith("//")
    )
    found = []
    for m in re.finditer(r"\buse\s+((?:crate|super)(?:::super)*::[^;]*);", code):
        for path in expand_use_tree(m.group(1)):
            found.append(path)
    for m in re.finditer(rf"\b((?:crate|super)(?:::super)*(?:::{IDENT})+)", code):
        found.append(m.group(1).split("::"))
    out = []
    for path in found:
        if path[-1] == "self":
            path = path[:-1]
        if path[0] == "crate":
            out.append(path[1:])
        else:
            base = list(here)
            while path and path[0] == "super":
                base = base[:-1]
                path = path[1:]
            out.append(base + path)
    return out


def check(root, layers):
    problems = []
    for src, table in layers.items():
        src_dir = os.path.join(root, src)
        tests_only = test_only_files(src_dir)
        for dirpath, _, files in os.walk(src_dir):
            for f in sorted(files):
                full = os.path.normpath(os.path.join(dirpath, f))
                if not f.endswith(".rs") or full in tests_only:
                    continue
                rel = os.path.relpath(full, src_dir)
                here = module_of(rel)
                mine, my_prefix = place(table, here)
                if mine is None:
                    problems.append(f"{src}/{rel}: module {'::'.join(here)} has no layer in scripts/layers.py")
                    continue
                text = open(full, encoding="utf-8").read()
                siblings = "siblings" in table[mine][2:]
                seen = set()
                for path in imports(text, here):
                    theirs, their_prefix = place(table, path)
                    if their_prefix in seen:
                        continue
                    seen.add(their_prefix)
                    if theirs is not None and theirs > mine:
                        problems.append(
                            f"{src}/{rel}: layer '{table[mine][0]}' imports {their_prefix or 'the crate root'} "
                            f"from the layer above, '{table[theirs][0]}' (e.g. {'::'.join(path)})"
                        )
                    elif (
                        theirs == mine
                        and siblings
                        and their_prefix != my_prefix
                        and (my_prefix, their_prefix) not in ALLOWED
                    ):
                        problems.append(
                            f"{src}/{rel}: {my_prefix} imports {'::'.join(path)} from its sibling "
                            f"{their_prefix} (layer '{table[mine][0]}'); move what they share down"
                        )
    return sorted(set(problems))


def self_test():
    """An upward import must fail the check; a downward one must pass."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "fold"))
        table = {"src": [("model", ["model"]), ("fold", ["fold"]), ("root", [""])]}
        open(os.path.join(src, "model.rs"), "w").write(
            "//! use crate::fold::Op; (a comment is not an import)\n"
            "pub struct Inputs;\n#[cfg(test)]\nmod tests {\n    use crate::fold::Op;\n}\n"
        )
        open(os.path.join(src, "fold", "mod.rs"), "w").write(
            "use crate::{model::Inputs, fold::x};\npub enum Op {}\n"
        )
        open(os.path.join(src, "lib.rs"), "w").write("mod fold;\nmod model;\n")
        clean = check(tmp, table)
        assert clean == [], f"a clean tree was refused: {clean}"
        open(os.path.join(src, "model.rs"), "a").write(
            "use crate::{\n    fold::{self, Op},\n};\n"
        )
        up = check(tmp, table)
        assert len(up) == 1 and "imports fold" in up[0], f"an upward import passed: {up}"
        open(os.path.join(src, "model.rs"), "w").write(
            "pub fn f() -> crate::fold::Op { todo!() }\n"
        )
        up = check(tmp, table)
        assert len(up) == 1, f"an upward path in code passed: {up}"
        open(os.path.join(src, "fold", "inner.rs"), "w").write("use super::super::zzz;\n")
        unplaced = check(tmp, {"src": [("fold", ["fold", ""])]})
        assert unplaced == [], unplaced
        sib = {"src": [("base", [""]), ("commands", ["fold", "model"], "siblings")]}
        open(os.path.join(src, "model.rs"), "w").write("use crate::fold::Op;\n")
        probs = check(tmp, sib)
        assert any(p.startswith("src/model.rs") and "sibling" in p for p in probs), probs
        assert expand_use_tree("a::{b::C, d as e}") == [["a", "b", "C"], ["a", "d"]], expand_use_tree("a::{b::C, d as e}")
    print("layers self-test: an upward import fails the check, a downward one passes")


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    problems = check(ROOT, LAYERS)
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} import(s) point up (scripts/layers.py)")
        return 1
    counted = sum(len(prefixes) for t in LAYERS.values() for _, prefixes, *_ in t)
    print(f"layers: every import points down ({len(LAYERS)} crates, {counted} modules placed)")
    for mine, theirs in sorted(ALLOWED):
        print(f"layers: known exception: {mine} imports {theirs} (see ALLOWED)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
