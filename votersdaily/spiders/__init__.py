"""One module per source, plus the ingest spider and the distributed workers (the laundromat spider is
:mod:`votersdaily.laundromat.spider`)."""
