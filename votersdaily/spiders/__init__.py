"""One module per source, plus the ingest and laundromat spiders."""
