"""The event spiders, one module per source, on :mod:`.base` (the ingest spider is
:mod:`votersdaily.ingest.spider`, the laundromat spider :mod:`votersdaily.laundromat.spider`, the Redis-fed
workers :mod:`votersdaily.distributed.worker_spiders`)."""
