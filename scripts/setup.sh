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

# The laundromat's compiled fast path (C; the pure-Python path is used if it cannot be built).
python3 scripts/build_native.py || echo "setup: continuing without the compiled fast path" >&2

if [ ! -x node_modules/.bin/pouchdb-server ]; then
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
