"""The bench's work, written as a Scrapy user would: crawl the demo bookshop that
`spiderling sandbox` serves, emit one book per book page (title, price, availability,
as spider-cli/src/bench/work.rs does) and follow every `a[href]` that is a web URL.

Staying on the site, robots.txt and deduplication of URL spellings are Scrapy's own
(allowed_domains, ROBOTSTXT_OBEY, the default dupefilter), as they are Spiderling's.
Run by run.sh with `scrapy runspider`; the settings come from the command line.

    scrapy runspider bookshop.py -a start_url=http://127.0.0.1:PORT/ -a stats=stats.json
"""

import json
from datetime import datetime, timezone

import scrapy


def text(response, css):
    """The first element's text, every descendant's, trimmed; None when there is none."""
    first = response.css(css)
    if not first:
        return None
    return "".join(first[0].xpath(".//text()").getall()).strip()


class Bookshop(scrapy.Spider):
    name = "bookshop"
    allowed_domains = ["127.0.0.1"]

    def __init__(self, start_url, stats, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start_url]
        self.stats_path = stats

    def parse(self, response):
        self.crawler.stats.inc_value("bench/pages_parsed")
        title, price = text(response, "h1.title"), text(response, "p.price")
        if title is not None and price is not None:
            yield {"title": title, "price": price, "availability": text(response, "p.availability")}
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            # mailto: and the like are not pages (Scrapy refuses a Request for them).
            if url.startswith(("http://", "https://")):
                yield scrapy.Request(url, callback=self.parse)

    def closed(self, reason):
        # The stats as JSON for run.sh; Scrapy only logs them, and adds the finish reason
        # and the crawl's time after this call: both are added here the same way.
        stats = self.crawler.stats.get_stats()
        elapsed = (datetime.now(tz=timezone.utc) - stats["start_time"]).total_seconds()
        record = dict(stats, finish_reason=reason, elapsed_time_seconds=elapsed)
        with open(self.stats_path, "w", encoding="utf-8") as out:
            json.dump(record, out, default=str, indent=1, sort_keys=True)
