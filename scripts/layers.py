#!/usr/bin/env python3
"""Layers point down: fails when a module imports from a layer above its own,
or when files of one crate import each other in a circle.

Each crate below declares its layers, bottom first, as module paths (a file
`src/a/b.rs` or `src/a/b/mod.rs` is module `a::b`; the longest declared
prefix decides its layer). A module may name (`crate::...`, `super::...`)
only modules of its own layer or of a layer below. Test code (an item after
`#[cfg(test)]`, or a file only compiled for tests) is not checked: tests may
build their input through the public entry points above them.

  python3 scripts/layers.py              # check the workspace
  python3 scripts/layers.py --self-test  # prove the check fails on an upward import
                                         # and on an import cycle

A circle is found on the files' import graph: a path names the file that
defines it (through `pub use` re-exports), and a file's use of its
enclosing mod.rs (the types a mod.rs holds for its children) is not an
edge. Since imports never point up, every file of a circle is in one layer.

ARCHITECTURE.md ("Layers") says what each layer is for.
"""

import os
import sys
import tempfile

from import_graph import cycles, expand_use_tree, import_graph, imports, module_of, test_only_files

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
            ],
        ),
        ("model", ["model", "supplier", "authored_form", "near_miss", "overlay"]),
        ("parse", ["parse"]),
        ("attach", ["attach", "route_parents"]),
        ("fold", ["fold", "retries", "gateway_pass", "steering"]),
        ("entry", ["entry", "entry_memo", "who_applies", "explain", "status", "diff"]),
        ("resolve", ["resolve", "schema", "reach", ""]),
    ],
    "crates/attache-render/src": [
        (
            "base",
            [
                "error",
                "chains",
                "duration",
                "version",
                "matching",
                "virtual_hosts",
                "plugin_config",
                "wasm",
                "module",
                "filter",
                "manifests",
                "secrets",
                "backends",
                "test_fixtures",
                "test_gateway",
            ],
        ),
        ("resources", ["ecds", "listener", "resources", "sds", "tls", "crds", "oci", "wasmplugin", "trafficextension", "envoyextensionpolicy", "envoyfilter"]),
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
        ("table", ["kinds", "prune", "content_hash"]),
        ("install", ["rbac", "deploy", "image"]),
        ("scope", ["scope"]),
        ("read", ["snapshot"]),
        ("serve", ["serving", "served", "warnings"]),
        ("decide", ["reconcile", "status"]),
        ("metrics", ["kube::metrics", "kube::memory"]),
        ("adapter", ["kube::watch", "kube::watched", "kube::lease", "kube::serve", "kube::api", "kube::cluster", "kube::scrape", "kube::events"]),
        ("delivery", ["plugin_kind"]),
        ("confirm", ["kube::confirm"]),
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
    # The CLI: `error.rs` the error every command shares, `cmd/mod.rs`
    # the flags (its dispatch names the commands by relative path, which this
    # check does not follow); `cmd/load.rs` the loading `render` and `watch`
    # share. Commands are siblings: none imports another.
    "src": [
        ("base", ["error", "output", "input", "cmd", "cmd::load", "cmd::kubectl", "cmd::source", "cmd::strict", "cmd::wrap", "cmd::plugin_flags"]),
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

# (LAYERS continued) The dynamic module: the ABI declarations, the core's
# Host over them, the configuration and stream state, the exported hooks,
# and the in-process Envoy of the tests on top.
LAYERS["crates/attache-module/src"] = [
    ("snapshot", ["snapshot"]),
    ("abi", ["abi"]),
    ("host", ["host"]),
    ("state", ["config", "filter"]),
    ("hooks", ["exports"]),
    ("tests", ["fake_envoy", "tests"]),
    ("root", [""]),
]

# Workspace crates whose files are checked for import circles only, each
# with why it has no layer table. A crate of the workspace in neither this
# nor LAYERS fails the check, so a new crate cannot be missed.
UNLAYERED: dict = {
    "crates/attache-contract/src": "data and shared rules; a flat set of leaf modules",
    "crates/attache-filter/src": "the filter core: host-independent modules that call each other by need",
    "crates/attache-testbackend/src": "the test backend, two files",
    "crates/bench-empty-filter/src": "the benchmark's empty filter, one file",
}

# Known exceptions, each with its reason; the check prints them so they are
# not forgotten. (importer prefix, imported prefix)
ALLOWED: set = set()

# Known import cycles, each with its reason; the check prints them so they
# are not forgotten. (crate source dir, a file in the cycle) -> reason.
ALLOWED_CYCLES: dict = {}


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


def check_cycles(root, layers, allowed=None):
    """An import cycle between files of one crate: every file of it is in
    one layer (an upward import is refused above), so it is a circle the
    layers cannot see."""
    allowed = ALLOWED_CYCLES if allowed is None else allowed
    problems, excused = [], []
    for src in layers:
        names, graph = import_graph(os.path.join(root, src))
        for path, scc in cycles(graph):
            ring = " -> ".join(names[m] for m in path + [path[0]])
            files = sorted(names[m] for m in scc)
            reason = next((why for (s, f), why in allowed.items() if s == src and f in files), None)
            if reason:
                excused.append(f"{src}: known cycle through {', '.join(files)}: {reason}")
            else:
                problems.append(
                    f"{src}: import cycle {ring} ({len(scc)} files in the circle: {', '.join(files)}); "
                    "move what they share into a module both import"
                )
    return problems, excused


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
    with tempfile.TemporaryDirectory() as tmp:
        # Two files of one layer that import each other (one through a
        # mod.rs re-export) are a circle; a child using its mod.rs is not.
        src = os.path.join(tmp, "src")
        os.makedirs(os.path.join(src, "model"))
        table = {"src": [("model", ["model"]), ("root", [""])]}
        files = {
            "lib.rs": "mod model;\n",
            "model/mod.rs": "mod kinds;\nmod policy;\npub use policy::Target;\npub struct Shared;\n",
            "model/kinds.rs": "use super::Shared;\npub struct Row;\n",
            "model/policy.rs": "use crate::model::kinds::Row;\npub struct Target;\n",
        }
        for name, text in files.items():
            open(os.path.join(src, name), "w").write(text)
        clean, _ = check_cycles(tmp, table, {})
        assert clean == [], f"a tree without a circle was refused: {clean}"
        open(os.path.join(src, "model", "kinds.rs"), "a").write("fn f(_: &crate::model::Target) {}\n")
        circle, _ = check_cycles(tmp, table, {})
        assert len(circle) == 1 and "model/kinds.rs -> model/policy.rs -> model/kinds.rs" in circle[0], circle
        excused, known = check_cycles(tmp, table, {("src", "model/kinds.rs"): "a reason"})
        assert excused == [] and "a reason" in known[0], (excused, known)
    print("layers self-test: an upward import fails the check, a downward one passes, an import cycle fails")


def workspace_sources(root):
    """The `src` directory of every member of the workspace, read from the
    root Cargo.toml (the root package's own is `src`)."""
    import tomllib

    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    return sorted(os.path.normpath(os.path.join(m, "src")) for m in members)


def unplaced(root):
    """Workspace crates in neither LAYERS nor UNLAYERED."""
    return [
        f"{src}: a workspace crate with no entry in LAYERS or UNLAYERED (scripts/layers.py)"
        for src in workspace_sources(root)
        if src not in LAYERS and src not in UNLAYERED
    ]


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    problems = check(ROOT, LAYERS) + unplaced(ROOT)
    circles, known = check_cycles(ROOT, {**LAYERS, **UNLAYERED})
    for p in problems + circles:
        print(p)
    if problems or circles:
        print(
            f"layers: {len(problems)} import(s) point up, {len(circles)} import cycle(s) "
            "inside a crate (scripts/layers.py)"
        )
        return 1
    counted = sum(len(prefixes) for t in LAYERS.values() for _, prefixes, *_ in t)
    print(
        f"layers: every import points down ({len(LAYERS)} crates, {counted} modules placed); "
        f"no import circle in any of the workspace's {len(LAYERS) + len(UNLAYERED)} crates"
    )
    for mine, theirs in sorted(ALLOWED):
        print(f"layers: known exception: {mine} imports {theirs} (see ALLOWED)")
    for line in known:
        print(f"layers: {line} (see ALLOWED_CYCLES)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
