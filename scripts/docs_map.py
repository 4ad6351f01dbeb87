#!/usr/bin/env python3
"""The map is checked: every backticked path in ARCHITECTURE.md and docs/
must exist, and every backticked Rust symbol must be defined where the
document says.

A path is a backticked token that looks like a file or directory
(`crates/attache-core/src/attach.rs`, `fold/`, `lib.rs`). It is looked up
from the repository root, then from the source and root directories of
the crate the section is about (a `### \\`crates/attache-core\\`` heading,
or a crate path named in the same paragraph), then in any crate's src/.

A symbol is a backticked Rust name: a type or constant (`RouteEntry`,
`KINDS`), a function or module with an underscore (`envoy_route`), or a
path (`model::policy::KINDS`, `attache_contract::safety`). It must be
defined (`fn`, `struct`, `enum`, `const`, `mod`, `type`, `trait`, a
variant, a field or a macro) in a file the same paragraph names, else in
the crate the section is about, else in the workspace. A path's modules
must exist too.

  python3 scripts/docs_map.py              # check ARCHITECTURE.md and docs/
  python3 scripts/docs_map.py --self-test  # prove the check fails on drift
"""

import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Outside ARCHITECTURE.md only source files count as citing code (docs/
# also name files Attaché writes: `lds/listeners.json`, `index.json`).
CODE_EXT = (".rs", ".py", ".sh", ".toml")
FILE_EXT = (".rs", ".md", ".py", ".sh", ".json", ".toml", ".yaml", ".yml", ".txt")
# Words that look like symbols but are not this workspace's (Envoy, Gateway
# API and Kubernetes names the documents quote), by document.
FOREIGN = re.compile(
    r"^(HTTPRoute|GRPCRoute|TLSRoute|Gateway|GatewayClass|ListenerSet|XListenerSet|"
    r"Service|EndpointSlice|Secret|Namespace|WasmPlugin|EnvoyFilter|CustomResourceDefinition|"
    r"TrafficPolicy|BackendTrafficPolicy|RoutePolicy|ClusterRoutePolicy|HTTPRouteList|List|"
    r"DiscoveryResponse|ProtocolConflict|HostnameConflict|Accepted|Programmed|Conflicted|"
    r"Invalid|ResolvedRefs|Attached|Overridden|Atomic|Patch|RUST_LOG|CI|OK|"
    r"TrafficExtension|SectionName|malloc_trim|EnvoyExtensionPolicy|EnvoyProxy)$"
)


def source_files(root):
    out = []
    for top in ("crates", "src", "tests", "fuzz", "bench"):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("target", "node_modules")]
            out += [os.path.join(dirpath, f) for f in files if f.endswith(".rs")]
    return out


def path_dependencies(root, crate_dir):
    """The workspace crates `crate_dir` depends on (path dependencies, also
    through `workspace = true`), as directories."""
    import tomllib

    def load(d):
        path = os.path.join(d, "Cargo.toml")
        if not os.path.exists(path):
            return {}
        with open(path, "rb") as f:
            return tomllib.load(f)

    shared = load(root).get("workspace", {}).get("dependencies", {})
    out = []
    for name, spec in load(crate_dir).get("dependencies", {}).items():
        if isinstance(spec, dict) and spec.get("workspace"):
            spec, base = shared.get(name, {}), root
        else:
            base = crate_dir
        if isinstance(spec, dict) and "path" in spec:
            out.append(os.path.normpath(os.path.join(base, spec["path"])))
    return out


def defines(text, name):
    """Whether Rust source text defines `name` (comments aside): an item
    (`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`,
    `union`, `macro_rules!`), an enum variant or a field at the start of a
    line, or a `pub use ... as name`. A use of the name elsewhere does not
    count: a claim that a file has `T` holds only where `T` is defined.
    (A line that starts `name: ...` in a struct literal passes as a field:
    telling the two apart needs a parser.)"""
    code = re.sub(r"//[^\n]*", "", text)
    n = re.escape(name)
    return any(
        re.search(p, code, re.M)
        for p in (
            rf"\b(?:fn|struct|enum|trait|type|const|static|mod|union)\s+{n}(?!\w)",
            rf"\bmacro_rules!\s*{n}(?!\w)",
            rf"^\s*(?:pub(?:\([\w:]+\))?\s+)?{n}\s*:(?!:)",
            rf"^\s*(?:#\[[^\]]*\]\s*)*{n}\s*(?:[,({{]|=(?!>)|$)",
            rf"\bpub(?:\([\w:]+\))?\s+use\b[^;]*\bas\s+{n}\b",
        )
    )


class Repo:
    def __init__(self, root):
        self.root = root
        self.files = source_files(root)
        self.text = {}
        self.crates = {"": root}
        for name in os.listdir(os.path.join(root, "crates")):
            self.crates[name.replace("-", "_")] = os.path.join(root, "crates", name)
        self.crates["attache"] = root
        self.deps = {d: path_dependencies(root, d) for d in set(self.crates.values())}

    def read(self, path):
        if path not in self.text:
            self.text[path] = open(path, encoding="utf-8").read()
        return self.text[path]

    def find_path(self, token, bases, crates):
        """A path from the root, the paragraph's directories or its crates;
        else a file of that relative path anywhere in its crates (a file
        named inside a directory the paragraph is about: `fold/` then
        `levels.rs`)."""
        token = token.rstrip("/")
        dirs = [self.root] + bases
        for c in crates + [self.root]:
            dirs += [c] + [os.path.join(c, d) for d in ("src", "tests", "scripts", "tests/e2e", "src/tests", "benches")]
        for base in dirs + [os.path.join(c, "src") for c in self.crates.values()]:
            cand = os.path.join(base, token)
            if os.path.exists(cand):
                return cand
        if "/" in token:
            return None
        for c in crates or [self.root]:
            for dirpath, dirnames, files in os.walk(c):
                dirnames[:] = [d for d in dirnames if d not in ("target", ".git")]
                for name in files + dirnames:
                    full = os.path.join(dirpath, name)
                    if full.endswith("/" + token):
                        return full
        return None

    def defined_in(self, name, files):
        """Files that define `name`, or are named after it (a test, bench or
        fuzz target: `filter_table`)."""
        every = files + [f for f in self.files if os.path.basename(f) == name + ".rs"]
        return [f for f in every if f.endswith(".rs") and (defines(self.read(f), name) or f.endswith("/" + name + ".rs"))]

    def rust_files(self, paths):
        out = []
        for p in paths:
            if os.path.isdir(p):
                for dirpath, _, files in os.walk(p):
                    out += [os.path.join(dirpath, f) for f in files if f.endswith(".rs")]
            elif p.endswith(".rs"):
                out.append(p)
        return out

    def module_file(self, crate_dir, parts):
        """The file of module `parts` in a crate, or None."""
        src = os.path.join(crate_dir, "src")
        for cand in (os.path.join(src, *parts) + ".rs", os.path.join(src, *parts, "mod.rs")):
            if os.path.exists(cand):
                return cand
        return None


def is_path(token):
    return (
        re.fullmatch(r"[\w.\-/]+", token) is not None
        and not token.startswith(("-", "."))
        and ("/" in token or token.endswith(FILE_EXT))
        and (token.endswith(FILE_EXT) or token.endswith("/"))
        and "//" not in token
    )


def is_symbol(token):
    if FOREIGN.match(token):
        return False
    if "::" in token:
        return re.fullmatch(r"[a-z_][\w]*(::[A-Za-z_]\w*)+", token) is not None
    return (
        re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+", token) is not None  # CamelCase, 2+ humps
        or re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+", token) is not None  # SCREAMING_CASE
        or re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", token) is not None  # snake_case with _
    )


def paragraphs(text):
    """(heading, paragraph text, first line) of a Markdown document; a list
    item with its continuation lines is one paragraph; code blocks are left
    out (they show output, not claims)."""
    heading, buf, start, out, fence = "", [], 0, [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        new_item = re.match(r"\s*([-*]|\d+\.)\s", line) and not line.startswith("   ")
        if line.startswith("#") or not line.strip() or new_item or line.startswith("|"):
            if buf:
                out.append((heading, " ".join(buf), start))
            buf, start = [], n
            if line.startswith("#"):
                heading = line
                continue
            if line.startswith("|"):
                out.append((heading, line, n))
                continue
        if line.strip():
            if not buf:
                start = n
            buf.append(line.strip())
    if buf:
        out.append((heading, " ".join(buf), start))
    return out


def section_crate(repo, heading, para):
    """The crate directories a paragraph is about: its heading's crate and
    any crate path it names."""
    dirs = []
    for m in re.finditer(r"crates/(attache-[\w-]+)", heading + " " + para):
        d = os.path.join(repo.root, "crates", m.group(1))
        if os.path.isdir(d) and d not in dirs:
            dirs.append(d)
    if "The CLI" in heading or "`src/`" in heading:
        dirs.append(repo.root)
    return dirs


def check_doc(repo, doc):
    problems = []
    rel = os.path.relpath(doc, repo.root)
    # A document about one crate (docs/filter.md) cites its files from the
    # crate's root: the crates it names anywhere are every paragraph's.
    strict = os.path.basename(doc) == "ARCHITECTURE.md"
    whole = [] if strict else section_crate(repo, "", repo.read(doc))
    section, seen = None, []
    for heading, para, line in paragraphs(repo.read(doc)):
        if heading != section:
            # A walkthrough's later steps cite files of the crates its
            # earlier steps named.
            section, seen = heading, []
        tokens = re.findall(r"`([^`\n]+)`", para)
        tokens = [t for t in tokens if strict or not is_path(t) or t.endswith(CODE_EXT)]
        crates = section_crate(repo, heading, para)
        seen += [c for c in crates if c not in seen]
        crates += [c for c in seen + whole if c not in crates]
        bases = []
        named = []
        for token in tokens:
            if is_path(token):
                found = repo.find_path(token, bases, crates)
                if found is None:
                    problems.append(f"{rel}:{line}: path `{token}` does not exist")
                else:
                    named.append(found)
                    bases.append(found if os.path.isdir(found) else os.path.dirname(found))
        # Where the paragraph says a symbol is: the files it names, their
        # crates and the section's crate, and the crates those depend on (a
        # controller paragraph names the core's `EntryMemo`); the contract's
        # types are every crate's (`crate::contract`).
        owners = set(crates) | {c for c in repo.crates.values() for f in named if f.startswith(c + "/src")}
        owners |= {d for c in list(owners) for d in repo.deps.get(c, [])}
        if "attache_contract" in repo.crates:
            owners.add(repo.crates["attache_contract"])
        scope = repo.rust_files(named + [os.path.join(c, "src") for c in owners if c != repo.root])
        if repo.root in owners:
            scope += repo.rust_files([os.path.join(repo.root, "src")])
        for token in tokens:
            if not is_symbol(token):
                continue
            # docs/ name Envoy's and Kubernetes' words too: only a path into
            # a crate of the workspace is a claim about code there.
            if not strict and not ("::" in token and token.split("::")[0] in repo.crates):
                continue
            if "::" in token:
                problem = check_rust_path(repo, token, crates)
                if problem:
                    problems.append(f"{rel}:{line}: `{token}`: {problem}")
                continue
            files = scope if (named or crates) else repo.files
            if not repo.defined_in(token, files):
                where = sorted({os.path.relpath(c, repo.root) or "src" for c in owners})
                problems.append(f"{rel}:{line}: `{token}` is not found in {', '.join(where)} or the files the paragraph names")
    return problems


def check_rust_path(repo, token, crates):
    parts = token.split("::")
    if parts[0] in repo.crates and parts[0] != "":
        crate_dirs, parts = [repo.crates[parts[0]]], parts[1:]
    elif parts[0] in ("crate", "self", "super"):
        return None
    else:
        crate_dirs = crates or list(repo.crates.values())
    for crate in crate_dirs:
        # The longest prefix that is a module; the rest must be defined in it.
        for n in range(len(parts), -1, -1):
            mod = repo.module_file(crate, parts[:n]) if n else None
            if n == 0:
                mod = next(
                    (f for f in ("src/lib.rs", "src/main.rs") if os.path.exists(os.path.join(crate, f))),
                    None,
                )
                mod = os.path.join(crate, mod) if mod else None
            if mod:
                rest = parts[n:]
                if not rest or defines(repo.read(mod), rest[0]):
                    return None
                # A module re-exporting from a child names it in `pub use`.
                here = os.path.dirname(mod)
                files = repo.rust_files([here]) if mod.endswith(("mod.rs", "lib.rs")) else [mod]
                if repo.defined_in(rest[0], files):
                    return None
                break
    return "no such module or item in " + ", ".join(os.path.relpath(c, repo.root) or "." for c in crate_dirs)


def documents(root):
    docs = [os.path.join(root, "ARCHITECTURE.md")]
    for dirpath, _, files in os.walk(os.path.join(root, "docs")):
        docs += [os.path.join(dirpath, f) for f in sorted(files) if f.endswith(".md")]
    return docs


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "crates", "attache-core", "src", "model"))
        os.makedirs(os.path.join(tmp, "docs"))
        open(os.path.join(tmp, "crates", "attache-core", "src", "lib.rs"), "w").write("pub mod model;\n")
        open(os.path.join(tmp, "crates", "attache-core", "src", "model", "mod.rs"), "w").write(
            "pub mod policy;\n"
        )
        open(os.path.join(tmp, "crates", "attache-core", "src", "model", "policy.rs"), "w").write(
            "pub const KINDS: &[u8] = &[];\npub fn read_doc() -> UsedOnly { todo!() }\n"
            "pub enum Kind {\n    #[default]\n    RoutePolicy,\n    PeerKind(u8),\n}\n"
            "pub struct Row {\n    pub max_ancestors: u8,\n}\nfn f(k: Kind) { match k { Kind::OtherKind => {} } }\n"
        )
        arch = os.path.join(tmp, "ARCHITECTURE.md")
        good = (
            "### `crates/attache-core`\n\n- `model/policy.rs` has `KINDS` and `read_doc`;"
            " `attache_core::model::policy::KINDS`.\n"
        )
        open(arch, "w").write(good)
        repo = Repo(tmp)
        assert check_doc(repo, arch) == [], check_doc(repo, arch)
        open(arch, "w").write(good + "- `model/kinds.rs` has `ROUTE_KINDS`.\n- `model/policy.rs` has `TARGET_KINDS`.\n")
        repo = Repo(tmp)
        bad = check_doc(repo, arch)
        assert any("`model/kinds.rs` does not exist" in p for p in bad), bad
        assert any("`TARGET_KINDS` is not found" in p for p in bad), bad
        open(arch, "w").write("- `attache_core::model::kinds::ROUTE_KINDS`\n")
        repo = Repo(tmp)
        bad = check_doc(repo, arch)
        assert len(bad) == 1 and "no such module or item" in bad[0], bad
        # Definitions, not occurrences: a variant and a field are defined; a
        # name the file only uses (a return type, a match arm) is not.
        open(arch, "w").write("- `model/policy.rs`: `PeerKind`, `max_ancestors`.\n")
        assert check_doc(Repo(tmp), arch) == [], check_doc(Repo(tmp), arch)
        for used in ("UsedOnly", "OtherKind"):
            open(arch, "w").write(f"- `model/policy.rs` defines `{used}`.\n")
            bad = check_doc(Repo(tmp), arch)
            assert len(bad) == 1 and f"`{used}` is not found" in bad[0], bad
    print(
        "docs_map self-test: a missing path, a symbol not where the map says, a wrong path "
        "and a name the file only uses (not defines) all fail"
    )


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    repo = Repo(ROOT)
    problems = []
    for doc in documents(ROOT):
        problems += check_doc(repo, doc)
    for p in problems:
        print(p)
    if problems:
        print(f"docs_map: {len(problems)} claim(s) in the map do not hold (scripts/docs_map.py)")
        return 1
    print(f"docs_map: every backticked path and symbol in {len(documents(ROOT))} documents is where they say")
    return 0


if __name__ == "__main__":
    sys.exit(main())
