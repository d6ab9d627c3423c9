"""Print the Scrapy run next to `spiderling bench`'s, and check that Scrapy crawled the
whole site once; exit 1 when it did not.

    python report.py DIR

DIR holds what run.sh wrote: sandbox.log (the site's size and, once stopped, the
requests it answered), stats.json (Scrapy's stats), items.jsonl (Scrapy's items),
peak.json (Scrapy's process: wall, CPU, peak RSS) and bench.json (`spiderling bench --json`).
"""

import json
import re
import sys
from pathlib import Path

# Requests a complete crawl sends besides the pages: robots.txt, and /catalogue/latest,
# answered with a redirect to a book.
EXTRA_REQUESTS = 2
TARGET_SPEED = 25.0
TARGET_MEMORY = 3.0


def sandbox_numbers(log):
    """The pages and books of the site, and the requests it answered, from its output."""
    site = re.search(r"^site: (\d+) pages \((\d+) books\)", log, re.M)
    stopped = re.search(r"^stopped after (\d+) requests$", log, re.M)
    if site is None or stopped is None:
        sys.exit(f"error: the sandbox's output lacks its size or its request count:\n{log}")
    return int(site[1]), int(site[2]), int(stopped[1])


def main(directory):
    out = Path(directory)
    pages, books, served = sandbox_numbers((out / "sandbox.log").read_text(encoding="utf-8"))
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    peak = json.loads((out / "peak.json").read_text(encoding="utf-8"))
    bench = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    with open(out / "items.jsonl", encoding="utf-8") as items_file:
        items = sum(1 for line in items_file if line.strip())

    parsed = stats.get("bench/pages_parsed", 0)
    crawl_secs = stats.get("elapsed_time_seconds", 0.0)
    scrapy = {
        "name": "scrapy",
        "pages": parsed,
        "items": items,
        "secs": crawl_secs,
        "pages_per_sec": parsed / crawl_secs if crawl_secs > 0 else 0.0,
        "cpu_per_1000": peak["cpu_secs"] * 1000 / parsed if parsed else 0.0,
        "rss_mb": peak["peak_rss_kb"] / 1024,
    }
    rows = [scrapy]
    for contender in bench["contenders"]:
        if contender["name"] in ("spiderling", "bare"):
            rows.append(
                {
                    "name": contender["name"],
                    "pages": contender["pages"],
                    "items": contender["items"],
                    "secs": contender["elapsed_secs"],
                    "pages_per_sec": contender["pages_per_sec"],
                    "cpu_per_1000": contender["cpu_secs_per_1000_pages"],
                    "rss_mb": contender["peak_rss_mb"],
                }
            )
    setup = bench["setup"]
    print(
        f"site: {setup['expected_pages']} pages ({setup['books']} books), {setup['page_kb']} KiB each, "
        f"{setup['latency_ms']} ms latency; C = {setup['concurrency']}\n"
    )
    print(f"{'contender':<11} {'pages':>7} {'items':>7} {'secs':>8} {'pages/s':>9} {'CPU s/1000':>11} {'RSS MB':>8}")
    for r in rows:
        print(
            f"{r['name']:<11} {r['pages']:>7} {r['items']:>7} {r['secs']:>8.2f} {r['pages_per_sec']:>9.0f} "
            f"{r['cpu_per_1000']:>11.3f} {r['rss_mb']:>8.1f}"
        )
    spiderling = next((r for r in rows if r["name"] == "spiderling"), None)
    print()
    if spiderling is not None and scrapy["pages_per_sec"] > 0 and spiderling["rss_mb"] > 0:
        speed = spiderling["pages_per_sec"] / scrapy["pages_per_sec"]
        memory = scrapy["rss_mb"] / spiderling["rss_mb"]
        print(f"spiderling / scrapy pages/s:     {speed:.2f} (target ≥ {TARGET_SPEED:.0f})")
        print(f"scrapy / spiderling peak RSS:    {memory:.2f} (target ≥ {TARGET_MEMORY:.0f})")
    print(
        f"scrapy process: {peak['wall_secs']:.2f} s wall (start-up included), "
        f"{peak['cpu_secs']:.2f} CPU s; finish reason {stats.get('finish_reason')}"
    )
    print(
        f"scrapy requests: {stats.get('downloader/request_count', 0)} sent, {served} answered by the site "
        f"({pages} pages + {EXTRA_REQUESTS} expected), {stats.get('offsite/filtered', 0)} off-site links dropped, "
        f"{stats.get('dupefilter/filtered', 0)} repeats dropped, "
        f"{stats.get('robotstxt/forbidden', 0)} forbidden by robots.txt"
    )

    failures = []
    if stats.get("finish_reason") != "finished":
        failures.append(f"Scrapy stopped for {stats.get('finish_reason')!r}, not 'finished'")
    if parsed != pages:
        failures.append(f"Scrapy parsed {parsed} pages of {pages}")
    if items != books:
        failures.append(f"Scrapy wrote {items} items for {books} books")
    if served != pages + EXTRA_REQUESTS:
        failures.append(f"the site answered {served} requests, not {pages + EXTRA_REQUESTS}: repeats or strays")
    if stats.get("downloader/request_count") != served:
        failures.append("Scrapy sent requests the site did not answer: it went elsewhere")
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
