#!/usr/bin/env bash
# Spiderling, Scrapy and Crawlee against the same real rate limiters: Debian's nginx with
# `limit_req` (20 requests a second per client address, a burst of 10, `nodelay`,
# answering 503 or 429) and HAProxy's stick-table limit (20 a second, 429), each serving
# 50 pages under each of four host names (`site-N.localhost`) that the limit counts
# together. Each crawler runs with its default settings at C = 16, one at a time, each
# against a server of its own.
#
#   bash bench/rate-limits/run.sh
#
# 1. installs a pinned Scrapy into target/scrapy-venv and a pinned Crawlee into
#    target/crawlee-bench, once (nginx and haproxy come from `bash .ci/run`'s apt line);
# 2. runs the ignored test `rate_limits::spiderling_scrapy_and_crawlee_against_the_same_limiters`
#    (tests/it/rate_limits.rs), which prints one Markdown table: pages the server served
#    whole, seconds, pages a second and their share of the 20 allowed.
set -euo pipefail

SCRAPY_VERSION=2.19.0
CRAWLEE_VERSION=3.18.1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/target/scrapy-venv
work=$root/target/crawlee-bench

for tool in nginx haproxy node; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || {
        echo "error: $tool is needed (Debian: apt-get install -y nginx haproxy nodejs npm)" >&2
        exit 1
    }
done
if ! "$venv/bin/scrapy" version 2>/dev/null | grep -qx "Scrapy $SCRAPY_VERSION"; then
    echo "installing Scrapy $SCRAPY_VERSION into $venv" >&2
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "scrapy==$SCRAPY_VERSION"
fi
mkdir -p "$work"
if ! (cd "$work" && node -e "process.exit(require('crawlee/package.json').version === '$CRAWLEE_VERSION' ? 0 : 1)") 2>/dev/null; then
    echo "installing crawlee $CRAWLEE_VERSION into $work" >&2
    printf '{ "name": "crawlee-bench", "private": true, "type": "module" }\n' >"$work/package.json"
    (cd "$work" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --silent "crawlee@$CRAWLEE_VERSION")
fi
# The script beside its node_modules, where node resolves its imports.
cp "$here/pages.mjs" "$work/pages.mjs"

cd "$root"
SCRAPY=$venv/bin/scrapy CRAWLEE=$work cargo test -q -p spiderling --test it -- \
    --ignored --exact rate_limits::spiderling_scrapy_and_crawlee_against_the_same_limiters --nocapture
