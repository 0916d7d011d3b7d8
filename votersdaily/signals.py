"""Signals of the framework (Scrapy's own are in ``scrapy.signals``)."""

#: A source could not be fetched or parsed: ``failure`` (a Twisted Failure), ``url``, ``spider``.
source_failed = object()
