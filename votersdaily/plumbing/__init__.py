"""Plumbing the three products share (the event spiders, the ingest, the laundromat).

The neutral home for what is not one product's own, so that no product imports another's internals:
a module here imports nothing from ``votersdaily.spiders``, ``votersdaily.ingest`` or
``votersdaily.laundromat``. One module per concern:

* :mod:`.warc_writer`: writing gzipped WARC files (the event spiders' source archive, the ingest's WARC
  output), what a full disk does to them;
* :mod:`.warc_reader`: reading them back, naming every damaged record by file and offset.
* :mod:`.hosts`: the ``host`` / ``host:port`` lists of the fetch policies (the ingest's and the
  laundromat's allowed and private hosts), one shape and one parser;
* :mod:`.address_policy`: which addresses untrusted data may make us fetch (no Scrapy: the
  laundromat's cleaning workers unpickle it), and its refusals;
* :mod:`.ssrf`: the policy as a Scrapy downloader middleware, with the reactor's pinned name resolver;
* :mod:`.pinned_fetch`: the policy for a blocking fetch outside the reactor (the laundromat's JSON-LD
  contexts in its cleaning workers), connecting only to the checked addresses;
* :mod:`.environment`: settings an operator gives in the environment, one resolver for all of them;
* :mod:`.inputs`: operators' input files read within a bound, the one check of a URL an operator
  gives, the URLs of a ``-a url=`` argument;
* :mod:`.full_disk`: an output folder whose disk is full, said as the folder's fault, not a document's.
"""
