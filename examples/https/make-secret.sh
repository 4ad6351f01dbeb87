#!/usr/bin/env bash
# Makes a self-signed certificate for shop.example.com and writes it as the
# kubernetes.io/tls Secret infra/shop-cert (20-secret.yaml, mode 0600: it
# holds the private key), into DIR (default: this directory). Run it again to
# rotate: `attache watch --xds-dir` rewrites the SDS file and Envoy serves the
# new certificate, no restart.
#
#   examples/https/make-secret.sh [DIR]
set -euo pipefail
dir="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 30 \
  -subj /CN=shop.example.com -addext subjectAltName=DNS:shop.example.com 2>/dev/null
indent() { sed 's/^/    /' "$1"; }
umask 077
{
  printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-cert\n  namespace: infra\ntype: kubernetes.io/tls\nstringData:\n'
  printf '  tls.crt: |\n'; indent "$tmp/tls.crt"
  printf '  tls.key: |\n'; indent "$tmp/tls.key"
} > "$dir/20-secret.yaml.tmp"
mv "$dir/20-secret.yaml.tmp" "$dir/20-secret.yaml"
cp "$tmp/tls.crt" "$dir/shop-cert.pem"
echo "wrote $dir/20-secret.yaml (and the certificate alone, for curl --cacert, in shop-cert.pem)"
