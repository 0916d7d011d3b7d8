#!/usr/bin/env bash
# All set-up on a fresh machine (idempotent, fast when everything is there already):
# Debian packages, Python packages, and the pinned PouchDB Server used by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server raptor2-utils libmagic1 chromium poppler-utils)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt

if [ ! -x node_modules/.bin/pouchdb-server ]; then
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi

# The W3C JSON-LD 1.1 API test suite (its toRdf tests: tests/laundromat/test_conformance_jsonld.py),
# as rdflib's pinned source distribution carries it, into the git-ignored w3c-suites/.
JSONLD_SUITE=w3c-suites/json-ld-api-1.1
if [ ! -f "$JSONLD_SUITE/toRdf-manifest.jsonld" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: -d "$tmp" rdflib==7.6.0
  echo "6c831288d5e4a5a7ece85d0ccde9877d512a3d0f02d7c06455d00d6d0ea379df  $tmp/rdflib-7.6.0.tar.gz" | sha256sum -c --quiet
  tar -xzf "$tmp/rdflib-7.6.0.tar.gz" -C "$tmp" rdflib-7.6.0/test/jsonld/1.1
  mkdir -p w3c-suites && rm -rf "$JSONLD_SUITE" && mv "$tmp/rdflib-7.6.0/test/jsonld/1.1" "$JSONLD_SUITE"
  rm -rf "$tmp"
fi
