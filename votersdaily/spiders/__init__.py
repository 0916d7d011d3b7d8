"""The event spiders, one module per source, on :mod:`.base`, plus the laundromat spider (the ingest spider
is :mod:`votersdaily.ingest.spider`, the Redis-fed workers :mod:`votersdaily.distributed.worker_spiders`)."""
