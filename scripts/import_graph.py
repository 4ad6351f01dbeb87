"""A Rust crate's imports, file by file, read from the source text: what
`scripts/layers.py` checks (layers point down, no circles).

Paths a file names through `crate::`, `super::`, `self::` or a child
module's name; test code (after `#[cfg(test)]`, or a file only compiled for
tests) is left out.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(rel):
    """`a/b.rs` -> ["a", "b"]; `a/mod.rs` -> ["a"]; `lib.rs`/`main.rs` -> []."""
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        parts = []
    return parts


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


def child_modules(text, here):
    """The submodules a file declares (`mod x;`, `pub mod x;`), as paths."""
    return [here + [m] for m in re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod (\w+);", text, re.M)]


def local_imports(text, here):
    """Module paths a file names through `self::` or a child module's name
    (`use inputs::Inputs;` in a mod.rs), which `imports` does not see; with
    whether the statement is a re-export (`pub use`) and the names it binds."""
    code = "\n".join(l for l in strip_tests(text.split("\n")) if not l.lstrip().startswith("//"))
    children = {c[-1] for c in child_modules(text, here)}
    out = []
    for m in re.finditer(r"(?m)^\s*(pub(?:\([a-z]+\))?\s+)?use\s+([^;]*);", code):
        for path in expand_use_tree(m.group(2)):
            if path and path[-1] == "self":
                path = path[:-1]
            if path and path[0] == "self":
                path = path[1:]
            elif not path or path[0] not in children:
                continue
            out.append((here + path, bool(m.group(1))))
    for child in children:
        for m in re.finditer(rf"(?<![:\w]){child}((?:::{IDENT})+)", code):
            out.append((here + [child] + m.group(1).split("::")[1:], False))
    return out


def reexports(text, here):
    """`pub use` bindings of a file: name -> the absolute path it stands for."""
    code = "\n".join(l for l in strip_tests(text.split("\n")) if not l.lstrip().startswith("//"))
    children = {c[-1] for c in child_modules(text, here)}
    out = {}
    # `pub use other_crate as name;`: a path through `name` leaves the crate.
    for m in re.finditer(r"(?m)^\s*pub(?:\([a-z]+\))?\s+use\s+(\w+)\s+as\s+(\w+)\s*;", code):
        if m.group(1) not in ("crate", "self", "super") and m.group(1) not in children:
            out[m.group(2)] = None
    for m in re.finditer(r"(?m)^\s*pub(?:\([a-z]+\))?\s+use\s+([^;]*);", code):
        for path in expand_use_tree(m.group(1)):
            if not path:
                continue
            if path[0] == "crate":
                full = path[1:]
            elif path[0] in ("self", "super"):
                base = list(here)
                rest = path
                while rest and rest[0] in ("self", "super"):
                    base = base[:-1] if rest[0] == "super" else base
                    rest = rest[1:]
                full = base + rest
            elif path[0] in children:
                full = here + path
            else:
                # Another crate's item: a path through it leaves this crate.
                out[path[-1]] = None
                continue
            out[full[-1]] = full
    return out


def resolve_module(path, modules, exports, depth=0):
    """The file a path names: its longest prefix that is a module, through
    `pub use` re-exports (a name re-exported by a mod.rs is its child's)."""
    for n in range(len(path), -1, -1):
        if tuple(path[:n]) in modules:
            break
    mod, rest = tuple(path[:n]), path[n:]
    if rest and rest[0] in exports.get(mod, {}) and exports[mod][rest[0]] is None:
        return None
    target = exports.get(mod, {}).get(rest[0]) if rest else None
    if target and depth < 8 and target != list(path):
        return resolve_module(target + rest[1:], modules, exports, depth + 1)
    return mod


def import_graph(src_dir):
    """File -> the files it imports from, within one crate (test code aside);
    a `pub use` counts only where the file uses the name itself."""
    tests_only = test_only_files(src_dir)
    texts = {}
    for dirpath, _, files in os.walk(src_dir):
        for f in sorted(files):
            full = os.path.normpath(os.path.join(dirpath, f))
            if f.endswith(".rs") and full not in tests_only:
                rel = os.path.relpath(full, src_dir)
                texts[tuple(module_of(rel))] = (rel, open(full, encoding="utf-8").read())
    modules = set(texts)
    exports = {here: reexports(text, list(here)) for here, (_, text) in texts.items()}
    graph = {}
    for here, (rel, text) in texts.items():
        found = [(p, False) for p in imports(text, list(here))] + local_imports(text, list(here))
        body = re.sub(r"(?ms)^\s*pub(?:\([a-z]+\))?\s+use\s+[^;]*;", "", text)
        edges = set()
        for path, reexport in found:
            if reexport and not re.search(rf"\b{re.escape(path[-1])}\b", body):
                continue
            there = resolve_module(path, modules, exports)
            # A file may use what its enclosing mod.rs holds for its
            # children (the mod.rs calls them in turn): that is one unit.
            enclosing = there is not None and here[: len(there)] == there
            if there in modules and there != here and not enclosing:
                edges.add(there)
        graph[here] = edges
    return {here: texts[here][0] for here in texts}, graph


def cycles(graph):
    """Each strongly connected set of two or more files, as one cycle
    through some of them (Tarjan, then a path back to the first file)."""
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(set(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    out = []
    for scc in sccs:
        start = min(scc)
        # Breadth-first from start back to start inside the set.
        prev, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & scc):
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path, v = [], found
        while v is not None:
            path.append(v)
            v = prev[v]
        out.append((list(reversed(path)), scc))
    return out
