#!/usr/bin/env bash
# Idempotent set-up shared by `npm start` and `npm test`:
#   1. Debian packages the switch needs (and, with --test, those only the tests need);
#   2. npm dependencies when node_modules is missing or older than package-lock.json.
# Database migration and the first-run demo account happen in the switch itself (main.ts).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=start
[ "${1:-}" = "--test" ] && mode=test

runtime_pkgs="rtpengine-daemon redis-server espeak-ng sox libsox-fmt-mp3 openssl pocketsphinx pocketsphinx-en-us"
test_pkgs="sip-tester kamailio haproxy postgresql baresip-core chromium tcpdump sngrep iproute2 iptables procps systemd"
pkgs="$runtime_pkgs"
[ "$mode" = test ] && pkgs="$pkgs $test_pkgs"

missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "simu setup: installing Debian packages:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null
  else
    echo "simu setup: missing Debian packages:$missing" >&2
    echo "run as root:  apt-get update && apt-get install -y$missing" >&2
    exit 1
  fi
fi

# One set-up at a time: a second `npm start` or `npm test` waits here instead of racing `npm ci`.
exec 9>.simu-setup.lock
flock 9

stamp=node_modules/.simu-lock-stamp
want=$(sha256sum package-lock.json package.json | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "simu setup: installing npm dependencies (first run builds better-sqlite3 and libxmljs2, about 3 minutes)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$want" > "$stamp"
fi
