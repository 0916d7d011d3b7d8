"""Sandcrawler-compatible ingest: follow a URL through redirects and landing pages to the terminal
document, check it is fulltext, extract metadata and text, fetch sub-resources, hash everything.

One module per concern: :mod:`.ingest_requests` (input), :mod:`.urls` (cleaning, SURT, blocklists),
:mod:`.hops` (the hop state machine), :mod:`.filemeta`, :mod:`.biblio`, :mod:`.fulltext` (landing
page → PDF), :mod:`.scope`, :mod:`.resources`, :mod:`.htmlbody`, :mod:`.pdf`, :mod:`.grobid`,
:mod:`.result` (output shapes), :mod:`.filetable`, :mod:`.blobs`, :mod:`.match`, :mod:`.warc`,
:mod:`.ssrf` and :mod:`.persist` (the store pipeline).
"""
