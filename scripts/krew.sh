#!/usr/bin/env bash
# Builds the krew release archive of `attache` and the krew manifest that
# names it (deploy/krew/attache.yaml with its placeholders filled):
#
#   scripts/krew.sh VERSION BASE_URL OUTDIR [BINARY]
#
#   VERSION   v-prefixed semver, as krew requires (v0.1.0)
#   BASE_URL  https:// URL of the directory the archive will be served from
#   OUTDIR    gets attache_VERSION_linux_amd64.tar.gz and attache.yaml
#   BINARY    the linux/amd64 attache to ship [default: the release build]
#
# The archive holds `attache` (mode 0755) and `LICENSE` (0644) at its root,
# as plain files only: krew's extractor refuses any other tar entry type.
# It is reproducible (sorted names, mtime 0, uid/gid 0, gzip without a name
# or time), so the same binary always gives the same sha256.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -eq 3 || $# -eq 4 ]] || die "usage: scripts/krew.sh VERSION BASE_URL OUTDIR [BINARY]"
version="$1"
base_url="${2%/}"
outdir="$3"
binary="${4:-$ATTACHE_BIN}"

refuse() { die "$1"$'\n'"  hint: $2"; }
# krew parses spec.version with a required leading v and exactly three
# numeric components (sigs.k8s.io/krew internal/installation/semver).
[[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]+)?$ ]] ||
  refuse "VERSION $version is not a v-prefixed semver" "v0.1.0"
# No '&' or '|': the URL is substituted by sed below.
[[ "$base_url" =~ ^https://[A-Za-z0-9._~:/%+-]+$ ]] ||
  refuse "BASE_URL $base_url is not an https:// URL of a directory" \
    "https://github.com/OWNER/attache/releases/download/$version"
[[ -f "$binary" && -x "$binary" ]] ||
  refuse "BINARY $binary is not an executable file" "build it with cargo build --release, or pass its path"
# The manifest's one platform is linux/amd64: a 64-bit ELF for x86-64
# (e_ident's class 2 at byte 4, e_machine 0x3e at byte 18).
elf="$(od -An -tx1 -N20 "$binary" | tr -d ' \n')"
[[ "${elf:0:10}" == "7f454c4602" && "${elf:36:4}" == "3e00" ]] ||
  refuse "BINARY $binary is not a linux/amd64 executable" "krew would install it for linux/amd64; build it for x86_64-unknown-linux-gnu"

archive="attache_${version}_linux_amd64.tar.gz"
mkdir -p "$outdir"
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
install -m 0755 "$binary" "$staging/attache"
install -m 0644 "$ROOT/LICENSE" "$staging/LICENSE"
tar --format=ustar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
  -C "$staging" -cf - LICENSE attache | gzip -n >"$outdir/$archive.partial"
mv "$outdir/$archive.partial" "$outdir/$archive"
sha256="$(sha256sum "$outdir/$archive" | cut -d' ' -f1)"

sed -e "s|@VERSION@|$version|" -e "s|@URI@|$base_url/$archive|" -e "s|@SHA256@|$sha256|" \
  "$ROOT/deploy/krew/attache.yaml" >"$outdir/attache.yaml"
say "wrote $outdir/$archive (sha256 $sha256) and $outdir/attache.yaml"
say "install it: kubectl krew install --manifest=$outdir/attache.yaml --archive=$outdir/$archive"
