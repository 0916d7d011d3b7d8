"""Plumbing the three products share (the event spiders, the ingest, the laundromat).

The neutral home for what is not one product's own, so that no product imports another's internals:
a module here imports nothing from ``votersdaily.spiders``, ``votersdaily.ingest`` or
``votersdaily.laundromat``. One module per concern:

* :mod:`.warc_writer`: writing gzipped WARC files (the event spiders' source archive, the ingest's WARC
  output), what a full disk does to them;
* :mod:`.warc_reader`: reading them back, naming every damaged record by file and offset.
* :mod:`.hosts`: the ``host`` / ``host:port`` lists of the fetch policies (the ingest's and the
  laundromat's allowed and private hosts), one shape and one parser;
* :mod:`.environment`: settings an operator gives in the environment, one resolver for all of them;
* :mod:`.full_disk`: an output folder whose disk is full, said as the folder's fault, not a document's;
* :mod:`.json_text`: JSON text of many small values by one reused encoder (the write path's hot loop).
"""
