#!/usr/bin/env bash
# All set-up on a fresh machine (idempotent, fast when everything is there already):
# Debian packages, Python packages, and the pinned PouchDB Server used by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# raptor2-utils (rapper) and serdi: the references of benchmarks/laundromat.py; iproute2: the three-node rehearsal;
# poppler-utils and libpoppler-private-dev: the ingest's page-0 thumbnails and PDF text (votersdaily/ingest/_page0.cc,
# compiled on poppler's headers; pdftoppm and pdftotext where it is not built).
APT_PACKAGES=(redis-server raptor2-utils serdi libmagic1 chromium poppler-utils libpoppler-private-dev iproute2)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The package itself, editable (its dependencies from pyproject.toml, a `votersdaily` command, and the
# laundromat's compiled fast path built in place; without a C compiler the pure-Python path runs).
# Again only when pyproject.toml or setup.py changed, or the package is not this checkout's.
stamp=build/setup-installed
wanted="$(cat pyproject.toml setup.py | sha256sum | cut -c1-16) $(command -v python3)"
installed_from=$(cd / && python3 -c "import votersdaily, os; print(os.path.dirname(os.path.dirname(votersdaily.__file__)))" 2>/dev/null || true)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || [ "$installed_from" != "$PWD" ]; then
  python3 -m pip install -q --disable-pip-version-check -e ".[dev]"
  mkdir -p build && echo "$wanted" > "$stamp"
fi

# Rebuilds the compiled module when its C source is newer than the build (after a pull).
python3 scripts/build_native.py || echo "setup: continuing without the compiled fast path" >&2

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

# The rdfa.info RDFa 1.1 test suite (XML host: manifest, inputs, SPARQL ASK queries;
# tests/laundromat/test_conformance_rdfa.py), as the pinned Debian source package librdfa-java
# carries it. Source packages come through apt-get with the machine's own Debian sources read as
# deb-src, in a private apt state under a temporary folder (the system's apt setup is not changed).
RDFA_SUITE=w3c-suites/rdfa-1.1-xml
if [ ! -f "$RDFA_SUITE/manifest" ]; then
  tmp=$(mktemp -d)
  mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && { sed 's/^Types:.*$/Types: deb-src/' "$f"; echo; } >> "$tmp/parts/src.sources"
  done
  [ -f /etc/apt/sources.list ] && sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > "$tmp/parts/src.list"
  apt_src=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/parts"
    -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache")
  apt-get "${apt_src[@]}" update -qq >/dev/null 2>&1 || true
  # Only the upstream tarball is needed (and checked); a missing Debian patch tarball is no matter.
  (cd "$tmp/src" && apt-get "${apt_src[@]}" source --download-only -qq librdfa-java=1.0.0~BETA1-3 >/dev/null 2>&1) || true
  orig="$tmp/src/librdfa-java_1.0.0~BETA1.orig.tar.gz"
  echo "4c88c082de0fa26da6c6266720a6fd8a8ef6fd010c8600d56858cf6d5393c5c8  $orig" | sha256sum -c --quiet
  suite=java-rdfa-java-rdfa-parent-1.0.0-BETA1/rdfa-module/src/test/resources/conformance2
  tar -xzf "$orig" -C "$tmp" "$suite/rdfa1.1/xml/manifest" "$suite/test-cases/rdfa1.1/xml"
  mkdir -p "$RDFA_SUITE"
  mv "$tmp/$suite/rdfa1.1/xml/manifest" "$tmp/$suite"/test-cases/rdfa1.1/xml/* "$RDFA_SUITE/"
  rm -rf "$tmp"
fi
