"""The rate-limit bench's work, written as a Scrapy user would: from the index of each
host name, follow every link to a page under /p/ and emit its title. Scrapy's settings
are its defaults but for the ones run by the bench gives on the command line.

Names under `.localhost` are the loopback (RFC 6761), as Spiderling and browsers resolve
them; the system's resolver here does not, so `LoopbackResolver` answers them.

    scrapy runspider pages.py -a start_urls=http://site-1.localhost:PORT/,... \
        -s TWISTED_DNS_RESOLVER=pages.LoopbackResolver
"""

from urllib.parse import urlparse

import scrapy
from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer


class LoopbackResolver(CachingThreadedResolver):
    def getHostByName(self, name, timeout=None):
        if name == "localhost" or name.endswith(".localhost"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class Pages(scrapy.Spider):
    name = "pages"

    def __init__(self, start_urls, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = start_urls.split(",")
        self.allowed_domains = sorted({urlparse(url).hostname for url in self.start_urls})

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            if "/p/" in href:
                yield response.follow(href, self.parse_page)

    def parse_page(self, response):
        yield {"url": response.url, "title": response.css("h1::text").get()}
