#!/usr/bin/env bash
# Crawlee's PlaywrightCrawler against Spiderling's rendering tier, on the same
# client-rendered shop, in one run of `spiderling bench --rendered`.
#
#   bash bench/crawlee/run.sh [--pages N] [--concurrency C]   (1000, 8)
#
# 1. installs pinned crawlee and playwright into target/crawlee-bench, once, without
#    Playwright's browser download: both crawlers drive the system's Chromium
#    (`CHROMIUM`, else /usr/bin/chromium);
# 2. builds the release `spiderling`;
# 3. runs `spiderling bench --rendered --crawlee shop.mjs`: the shop served once per
#    contender, render-always, render-auto and Crawlee each a child process whose whole
#    tree's memory (Pss, browsers included) is sampled every 100 ms.
set -euo pipefail

CRAWLEE_VERSION=3.18.1
PLAYWRIGHT_VERSION=1.65.1

pages=1000
concurrency=8
while [[ $# -gt 0 ]]; do
    case $1 in
        --pages) pages=${2:?--pages needs a value}; shift 2 ;;
        --concurrency) concurrency=${2:?--concurrency needs a value}; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$root/target/crawlee-bench
spiderling=${CARGO_TARGET_DIR:-$root/target}/release/spiderling

command -v node >/dev/null || { echo "error: node (Node.js 18 or later) is needed for Crawlee" >&2; exit 1; }
mkdir -p "$work"
if ! (cd "$work" && node -e "process.exit(require('crawlee/package.json').version === '$CRAWLEE_VERSION' ? 0 : 1)") 2>/dev/null; then
    echo "installing crawlee $CRAWLEE_VERSION and playwright $PLAYWRIGHT_VERSION into $work" >&2
    printf '{ "name": "crawlee-bench", "private": true, "type": "module" }\n' >"$work/package.json"
    (cd "$work" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --silent \
        "crawlee@$CRAWLEE_VERSION" "playwright@$PLAYWRIGHT_VERSION")
fi
# The script beside its node_modules, where node resolves its imports.
cp "$here/shop.mjs" "$work/shop.mjs"

(cd "$root" && cargo build --release --quiet -p spider-cli)
"$spiderling" bench --rendered --crawlee "$work/shop.mjs" --pages "$pages" --concurrency "$concurrency"
