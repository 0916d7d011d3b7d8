"""Scrapy commands of the project (``COMMANDS_MODULE``): one module per command, named for it.

``crawl`` replaces Scrapy's own so that ``scrapy crawl`` checks its settings before any work and
exits with a status that says how the run went (see :mod:`.crawl`).
"""
