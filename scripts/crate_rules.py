#!/usr/bin/env python3
"""What each crate may do is a table in ARCHITECTURE.md ("What each crate may
do"); this checks the table against the code, both ways.

- Every member of the workspace (read from Cargo.toml, so a new crate is
  covered) has a row, and every row is a member.
- `unsafe`: every crate root (src/lib.rs, src/main.rs) says
  `#![forbid(unsafe_code)]` or `#![deny(unsafe_code)]`; the keyword `unsafe`
  and `allow(unsafe_code)` appear only in the files the row names, and
  each file the row names uses `unsafe` (a stale entry fails too).
- File system and network: non-test code that names an I/O API (std::fs,
  File::, tokio::net, TcpListener, axum::serve, ureq::, a kube Client, ...)
  is in a file or directory the row names, and each named one does it.
  Test code is left out: src/tests/, tests.rs, `#[cfg(test)]` modules.
- Public modules: a crate whose lib.rs has a `pub mod` has a
  "Public modules (`lib.rs`):" line in its section of the map, and that
  line lists exactly those modules.

What a grep cannot see is not checked: I/O through a library that does it
for the caller beyond the names below (a kubeconfig read by kube's
loader is named, a log file opened by a dependency is not).

  python3 scripts/crate_rules.py              # check the workspace
  python3 scripts/crate_rules.py --self-test  # prove each check fails on a bad case
"""

import os
import re
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_HEADING = "### What each crate may do"
PUBLIC_LINE = re.compile(r"Public modules \(`lib\.rs`\):(.*?)(?:\.\s|\.$|$)")
UNSAFE = re.compile(r"\bunsafe\b|allow\(unsafe_code\)")
CRATE_DENY = re.compile(r"#!\[(forbid|deny)\(unsafe_code\)\]")
# Names of APIs that read or write files, and that listen or connect.
# Types that only hold an address (`std::net::IpAddr`) are not I/O.
FS = re.compile(
    r"\bstd::fs\b|\btokio::fs\b|(?<![\w:])fs::\w|\bFile::\w|\bOpenOptions\b|\bread_dir\b"
    r"|\bKubeconfig::read|\bConfig::infer\b"
)
NET = re.compile(
    r"\bTcpListener\b|\bTcpStream\b|\bUdpSocket\b|\bUnixListener\b|\bUnixStream\b"
    r"|\btokio::net\b|\baxum::serve\b|\bhyper::server\b|\bhyper_util::server\b|\bureq::\w"
    r"|\breqwest::\w|\bkube::Client\b|\bkube::\{[^}]*\bClient\b|\bClient::try_"
)
KINDS = (("unsafe", UNSAFE), ("file system", FS), ("network", NET))


def members(root):
    """(package name, directory) of every member of the workspace."""
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        paths = tomllib.load(f)["workspace"]["members"]
    out = []
    for m in paths:
        d = os.path.normpath(os.path.join(root, m))
        with open(os.path.join(d, "Cargo.toml"), "rb") as f:
            out.append((tomllib.load(f)["package"]["name"], d))
    return sorted(out)


TOKENS = re.compile(
    r"//[^\n]*|/\*.*?\*/|(?<!\w)b?r(#*)\".*?\"\1|b?\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])'",
    re.S,
)


def strip(text):
    """Code without comments and string or char literals, read in one pass
    so that a quote in a comment opens no string (a message that says
    "unsafe" or "File::open" is not a use)."""
    return TOKENS.sub(lambda m: '""' if m.group(0).endswith(('"', "#")) else "", text)


def without_test_blocks(code):
    """Code with every `#[cfg(test)] mod name { ... }` block removed."""
    out, pos = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{", code):
        if m.start() < pos:
            continue
        out.append(code[pos : m.start()])
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        pos = i
    return "".join(out) + code[pos:]


def code_files(crate_dir):
    """{path relative to src/: code without tests} for the crate's non-test
    sources. A module declared under `#[cfg(test)]` in a file of its own is
    left out with its directory."""
    src = os.path.join(crate_dir, "src")
    files = {}
    for dirpath, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "tests")
        for n in sorted(names):
            if n.endswith(".rs") and n != "tests.rs":
                full = os.path.join(dirpath, n)
                files[os.path.relpath(full, src)] = strip(open(full, encoding="utf-8").read())
    test_only = []
    for rel, code in files.items():
        here = os.path.dirname(rel)
        if os.path.basename(rel) not in ("mod.rs", "lib.rs", "main.rs"):
            here = rel[: -len(".rs")]
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+(\w+)\s*;", code):
            test_only.append(os.path.normpath(os.path.join(here, m.group(1))))
    return {
        rel: without_test_blocks(code)
        for rel, code in files.items()
        if not any(rel == t + ".rs" or rel.startswith(t + "/") for t in test_only)
    }


def read_table(text):
    """{crate: {kind: [paths]}} from the map's table; "none" is no path."""
    rows, inside = {}, False
    for line in text.split("\n"):
        if line.startswith("#"):
            inside = line.strip() == TABLE_HEADING
            continue
        if not inside or not line.startswith("|") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "crate" or len(cells) != 4:
            continue
        name = re.findall(r"`([^`]+)`", cells[0])[0]
        # A cell's paths end in `.rs` or `/`; other backticked words explain.
        rows[name] = {
            kind: [t for t in re.findall(r"`([^`]+)`", cell) if re.fullmatch(r"[\w/]+(\.rs|/)", t)]
            for (kind, _), cell in zip(KINDS, cells[1:])
        }
    return rows


def covered(rel, paths):
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in paths)


def check_crate(name, crate_dir, row):
    problems = []
    files = code_files(crate_dir)
    for root_file in ("lib.rs", "main.rs"):
        if root_file in files and not CRATE_DENY.search(files[root_file]):
            problems.append(
                f"{name}: src/{root_file} has no #![forbid(unsafe_code)] or #![deny(unsafe_code)]"
            )
    for kind, pattern in KINDS:
        allowed = row[kind]
        doing = sorted(rel for rel, code in files.items() if pattern.search(code))
        for rel in doing:
            if not covered(rel, allowed):
                what = pattern.search(files[rel]).group(0)
                problems.append(
                    f"{name}: src/{rel} uses {kind} (`{what}`), which the map's table "
                    f"does not allow it (ARCHITECTURE.md, \"What each crate may do\")"
                )
        for path in allowed:
            if not any(covered(rel, [path]) for rel in doing):
                problems.append(f"{name}: the map says `{path}` uses {kind}, and it does not (a stale row)")
    return problems


def check_public(text, name, crate_dir):
    """The map's list of public modules against lib.rs."""
    lib = os.path.join(crate_dir, "src", "lib.rs")
    if not os.path.exists(lib):
        return []
    declared = set(re.findall(r"^\s*pub mod (\w+)", strip(open(lib, encoding="utf-8").read()), re.M))
    section = None
    for block in re.split(r"\n(?=### )", text):
        heading = block.split("\n", 1)[0]
        if re.search(rf"`(crates/)?{re.escape(name)}`", heading):
            section = block
    claim = PUBLIC_LINE.search(section.replace("\n", " ")) if section else None
    if claim is None:
        if declared:
            return [f"{name}: lib.rs has pub mod {', '.join(sorted(declared))}; the map's section for it lists no Public modules (`lib.rs`)"]
        return []
    claimed = set(re.findall(r"`(\w+)`", claim.group(1)))
    problems = []
    if declared - claimed:
        problems.append(f"{name}: pub mod {', '.join(sorted(declared - claimed))} in lib.rs, not in the map's Public modules")
    if claimed - declared:
        problems.append(f"{name}: the map's Public modules name {', '.join(sorted(claimed - declared))}, not pub mod in lib.rs")
    return problems


def check(root):
    text = open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8").read()
    table = read_table(text)
    problems = []
    crates = members(root)
    for name, d in crates:
        if name not in table:
            problems.append(f"{name}: a workspace member with no row in ARCHITECTURE.md's \"What each crate may do\"")
            continue
        problems += check_crate(name, d, table[name])
        problems += check_public(text, name, d)
    names = {n for n, _ in crates}
    problems += [f"{n}: a row in the map's table for no workspace member" for n in table if n not in names]
    return problems, len(crates)


def self_test():
    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)

    table = (
        "# Map\n\n### `crates/a`\n\n- Public modules (`lib.rs`): `io`, `pure`. The rest is private.\n\n"
        f"{TABLE_HEADING}\n\n| crate | `unsafe` | file system | network |\n| --- | --- | --- | --- |\n"
        "| `a` | `ffi.rs` (`extern` calls) | `io.rs` | none |\n"
    )
    good = {
        "Cargo.toml": '[workspace]\nmembers = ["crates/a"]\n',
        "crates/a/Cargo.toml": '[package]\nname = "a"\n',
        "crates/a/src/lib.rs": "#![deny(unsafe_code)]\npub mod io;\npub mod pure;\nmod ffi;\n#[cfg(test)]\nmod t;\n",
        "crates/a/src/io.rs": "pub fn f() { let _ = std::fs::read(\"x\"); }\n",
        "crates/a/src/ffi.rs": "#![allow(unsafe_code)]\npub fn g() { unsafe { h() } }\n",
        # Test code may do anything; a message may say anything.
        "crates/a/src/pure.rs": '// File::open here\nfn m() -> &\'static str { "unsafe File::open" }\n'
        "#[cfg(test)]\nmod tests { fn t() { std::fs::read(\"y\"); } }\n",
        "crates/a/src/t.rs": "fn t() { let _ = std::net::TcpListener::bind(\"x\"); }\n",
        "ARCHITECTURE.md": table,
    }
    bad_cases = [
        ("crates/a/src/lib.rs", good["crates/a/src/lib.rs"].replace("#![deny(unsafe_code)]\n", ""), "has no #![forbid"),
        ("crates/a/src/pure.rs", "fn p() { unsafe { q() } }\n", "src/pure.rs uses unsafe"),
        ("crates/a/src/pure.rs", "use std::fs;\n", "src/pure.rs uses file system"),
        ("crates/a/src/pure.rs", "use kube::{Api, Client};\n", "src/pure.rs uses network"),
        ("crates/a/src/io.rs", "pub fn f() {}\n", "says `io.rs` uses file system, and it does not"),
        ("crates/a/src/lib.rs", good["crates/a/src/lib.rs"] + "pub mod extra;\n", "pub mod extra in lib.rs"),
        ("ARCHITECTURE.md", table.replace("`io`, `pure`", "`io`, `pure`, `gone`"), "name gone, not pub mod"),
        ("Cargo.toml", '[workspace]\nmembers = ["crates/a", "crates/b"]\n', "b: a workspace member with no row"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in good.items():
            write(os.path.join(tmp, rel), text)
        write(os.path.join(tmp, "crates/b/Cargo.toml"), '[package]\nname = "b"\n')
        write(os.path.join(tmp, "crates/b/src/lib.rs"), "#![forbid(unsafe_code)]\n")
        problems, _ = check(tmp)
        assert problems == [], problems
        for rel, text, expected in bad_cases:
            write(os.path.join(tmp, rel), text)
            problems, _ = check(tmp)
            assert any(expected in p for p in problems), (expected, problems)
            write(os.path.join(tmp, rel), good[rel])
        assert check(tmp)[0] == []
    print(
        f"crate_rules self-test: {len(bad_cases)} bad cases fail (no crate-level deny, unsafe, file system "
        "and network outside the table, a stale row, public modules either way, a crate with no row)"
    )


def main():
    if "--self-test" in sys.argv:
        self_test()
        return 0
    problems, n = check(ROOT)
    for p in problems:
        print(p)
    if problems:
        print(f"crate_rules: {len(problems)} rule(s) of the map's crate table do not hold (scripts/crate_rules.py)")
        return 1
    print(f"crate_rules: all {n} workspace crates do only what the map's table allows, and expose what it lists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
