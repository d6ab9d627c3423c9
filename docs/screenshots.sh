#!/usr/bin/env bash
# Makes docs/dashboard.png and docs/report.png again, from real crawls: the browser tests
# of tests/dashboard.rs take them when SPIDERLING_SCREENSHOTS names a directory. The live
# dashboard is pictured during the adaptive crawl of the hostile sandbox site, after its
# first blocks; the report after a crawl of the hostile site's captcha walls and gone pages.
# Needs Chromium (Debian: apt-get install -y chromium; or set CHROMIUM to a binary).
set -euo pipefail
cd "$(dirname "$0")/.."
SPIDERLING_SCREENSHOTS="$PWD/docs" cargo test --test dashboard -- --test-threads=1
ls -l docs/dashboard.png docs/report.png
