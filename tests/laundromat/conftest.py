"""The laundromat's crawls may follow links from crawled content to the local test site, and only
to it: its ``host:port`` is on ``LAUNDROMAT_PRIVATE_HOSTS`` (every other loopback port stays refused)."""

from __future__ import annotations

import pytest


def private_hosts(site) -> str:
    return "LAUNDROMAT_PRIVATE_HOSTS=127.0.0.1:%d" % site.port


@pytest.fixture
def crawl(crawl, request):
    if "site" not in request.fixturenames:
        return crawl
    site = request.getfixturevalue("site")

    def _crawl(spider, urls, store_uri, *extra, env=None):
        return crawl(spider, urls, store_uri, "-s", private_hosts(site), *extra, env=env)

    return _crawl
