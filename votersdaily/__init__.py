"""votersdaily: a Scrapy framework that scrapes public-affairs sources into CouchDB with provenance."""

__version__ = "0.1.0"
