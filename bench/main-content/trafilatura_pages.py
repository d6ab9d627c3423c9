"""Python trafilatura on the real pages: each page's text into OUT/NAME.txt, and the time
it took in all, for the Rust harness to score beside the crates (`--texts OUT`).

    python trafilatura_pages.py PAGES_DIR OUT_DIR
"""
import os
import sys
import time

import trafilatura

pages, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
names = sorted(n for n in os.listdir(pages) if os.path.exists(os.path.join(pages, n, "source.html")))
spent = 0.0
for name in names:
    with open(os.path.join(pages, name, "source.html"), "rb") as f:
        html = f.read().decode("utf-8", "replace")
    started = time.process_time()
    text = trafilatura.extract(html, url="http://fakehost/test/page.html") or ""
    spent += time.process_time() - started
    with open(os.path.join(out, name + ".txt"), "w") as f:
        f.write(text)
print(f"{len(names)} pages, {spent * 1000 / len(names):.2f} ms/page (CPU)")
