#!/usr/bin/env bash
# Scrapy against Spiderling on the same generated site at the same concurrency.
#
#   bash bench/scrapy/run.sh [--pages N] [--concurrency C] [--page-kb S]   (20000, 64, 15)
#
# 1. installs a pinned Scrapy into target/scrapy-venv, once;
# 2. builds the release `spiderling`;
# 3. serves the site `spiderling bench` crawls with `spiderling sandbox` on a free port
#    of 127.0.0.1, crawls it with Scrapy (bookshop.py) under peak.py (wall time, CPU,
#    peak RSS), then stops the site (it prints the requests it answered);
# 4. runs `spiderling bench --json` with the same flags (Spiderling and the bare loop);
# 5. prints one table and the ratios (report.py), and fails if Scrapy missed a page,
#    fetched one twice or went anywhere but the site.
#
# Environment: PYTHON (default python3, 3.10 or later) makes the venv; SCRAPY_TIMEOUT
# (default 900) bounds the Scrapy crawl, in seconds. The files of the last run are
# left in target/scrapy-bench/.
set -euo pipefail

SCRAPY_VERSION=2.19.0

pages=20000
concurrency=64
page_kb=15
while [[ $# -gt 0 ]]; do
    case $1 in
        --pages) pages=${2:?--pages needs a value}; shift 2 ;;
        --concurrency) concurrency=${2:?--concurrency needs a value}; shift 2 ;;
        --page-kb) page_kb=${2:?--page-kb needs a value}; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for value in "$pages" "$concurrency" "$page_kb"; do
    [[ $value =~ ^[0-9]+$ ]] || { echo "error: $value is not a whole number" >&2; exit 2; }
done
timeout_secs=${SCRAPY_TIMEOUT:-900}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/target/scrapy-venv
out=$root/target/scrapy-bench
spiderling=${CARGO_TARGET_DIR:-$root/target}/release/spiderling

# 1. Scrapy, pinned, in a venv of its own.
if ! "$venv/bin/scrapy" version 2>/dev/null | grep -qx "Scrapy $SCRAPY_VERSION"; then
    echo "installing Scrapy $SCRAPY_VERSION into $venv" >&2
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "scrapy==$SCRAPY_VERSION"
fi
python=$venv/bin/python
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ next to bookshop.py

# 2. The release binary.
(cd "$root" && cargo build --release --quiet -p spider-cli)

rm -rf "$out"
mkdir -p "$out"

# 3. The site, in the background until the end of the Scrapy crawl (or of this script).
sandbox_pid=
stop_sandbox() {
    if [[ -n $sandbox_pid ]]; then
        kill -INT "$sandbox_pid" 2>/dev/null || true
        wait "$sandbox_pid" || true
        sandbox_pid=
    fi
}
trap stop_sandbox EXIT
"$spiderling" sandbox --port 0 --pages "$pages" --page-kb "$page_kb" >"$out/sandbox.log" 2>&1 &
sandbox_pid=$!
for _ in $(seq 100); do
    grep -qx 'press Ctrl-C to stop' "$out/sandbox.log" && break
    kill -0 "$sandbox_pid" 2>/dev/null || break
    sleep 0.1
done
url=$(sed -n 's|^demo bookshop at \(http://127\.0\.0\.1:[0-9]*/\)$|\1|p' "$out/sandbox.log")
if [[ -z $url ]] || ! grep -qx 'press Ctrl-C to stop' "$out/sandbox.log"; then
    echo "error: the sandbox did not come up on 127.0.0.1 within 10 s:" >&2
    cat "$out/sandbox.log" >&2
    exit 1
fi
echo "crawling $url ($(sed -n 's/^site: //p' "$out/sandbox.log")) with Scrapy at C = $concurrency" >&2

"$python" "$here/peak.py" "$out/peak.json" "$((timeout_secs + 60))" -- \
    "$venv/bin/scrapy" runspider "$here/bookshop.py" \
    -a "start_url=$url" -a "stats=$out/stats.json" \
    -O "$out/items.jsonl:jsonlines" \
    -s "CONCURRENT_REQUESTS=$concurrency" \
    -s "CONCURRENT_REQUESTS_PER_DOMAIN=$concurrency" \
    -s DOWNLOAD_DELAY=0 \
    -s AUTOTHROTTLE_ENABLED=False \
    -s ROBOTSTXT_OBEY=True \
    -s TELNETCONSOLE_ENABLED=False \
    -s REMOTE_CONTROL_ENABLED=False \
    -s LOG_LEVEL=INFO \
    -s "CLOSESPIDER_TIMEOUT=$timeout_secs" \
    >"$out/scrapy.log" 2>&1 || {
    echo "error: Scrapy failed; its log is $out/scrapy.log:" >&2
    tail -20 "$out/scrapy.log" >&2
    exit 1
}
stop_sandbox

# 4. Spiderling and the bare loop on the same site, served by the bench itself.
echo "running spiderling bench --pages $pages --concurrency $concurrency --page-kb $page_kb" >&2
timeout "$((timeout_secs + 60))" "$spiderling" bench --pages "$pages" --concurrency "$concurrency" \
    --page-kb "$page_kb" --json >"$out/bench.json"

# 5. One table.
"$python" -c 'import platform, scrapy; print(f"Scrapy {scrapy.__version__}, Python {platform.python_version()}")'
"$python" "$here/report.py" "$out"
