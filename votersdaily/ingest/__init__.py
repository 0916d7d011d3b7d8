"""Sandcrawler-compatible ingest: follow a URL through redirects and landing pages to the terminal
document, check it is fulltext, extract metadata and text, fetch sub-resources, hash everything.

:mod:`.spider` is the ``ingest`` spider: Scrapy plumbing that runs the rules of the other modules,
one module per concern: :mod:`.ingest_requests` (input), :mod:`.urls` (cleaning, SURT, blocklists),
:mod:`.hops` (the hop state machine, landing-page and terminal rules), :mod:`.fetch_failures` (the
status of a failed fetch), :mod:`.process` (what a worker process extracts from a hop),
:mod:`.filemeta`, :mod:`.biblio`, :mod:`.fulltext` (landing page → PDF), :mod:`.scope`,
:mod:`.resources`, :mod:`.htmlbody`, :mod:`.pdf`, :mod:`.grobid`, :mod:`.result` (output shapes),
:mod:`.filetable`, :mod:`.blobs`, :mod:`.match`, :mod:`.warc`, :mod:`.downloader_room` (room in the
downloader for sub-resources) and :mod:`.persist` (the store pipeline). Its SSRF guard is the address
policy every product shares (:mod:`votersdaily.plumbing.ssrf`).
"""
