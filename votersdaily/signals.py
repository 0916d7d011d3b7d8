"""Signals of the framework (Scrapy's own are in ``scrapy.signals``)."""

from __future__ import annotations

from typing import Any

from twisted.python.failure import Failure

#: A source could not be fetched or parsed, or the run failed for another part: ``failure`` (a Twisted
#: Failure), ``url``, ``spider``, and ``where`` (what failed, the run log's ``errors[].where``):
#: ``download`` when not given; ``store`` (down, refusing), ``queue`` (Redis), ``output`` (a full
#: folder), ``input`` (no usable request or seed), ``start`` (the crawl could not begin).
source_failed = object()

#: One input of the run was rejected (e.g. a malformed ingest request among valid ones): ``failure``,
#: ``url`` (where the input came from), ``spider``. The run log lists it (``rejected_count``,
#: ``rejected``) without failing the run: the other inputs were processed.
input_rejected = object()


def report_unusable_input(spider: Any, where: str, exc: Exception, *, fatal: bool) -> None:
    """One input of ``spider``'s run it cannot use (an ingest request, a laundromat seed, at ``where``):
    ``fatal`` (no input is usable, or their file cannot be read) fails the run as :data:`source_failed`
    ``where="input"``, rather than end a run that did nothing ``success``; else :data:`input_rejected`
    (the run log lists it, the other inputs go on)."""
    if fatal:
        spider.crawler.signals.send_catch_log(
            source_failed, failure=Failure(exc), url=where, spider=spider, where="input"
        )
    else:
        spider.crawler.signals.send_catch_log(input_rejected, failure=Failure(exc), url=where, spider=spider)


#: The run log document is being built: ``doc`` (the dict about to be written; receivers add their
#: own keys to it), ``spider``. Components report what they did (the archive file, a reparse's
#: withdrawals) this way instead of through stat names.
run_log_building = object()

#: A record of a reply could not become an event and was dropped (the rest of the reply is kept):
#: ``response``, ``reason`` (``record:<exception>``), ``message``, ``spider``; ``link`` True when the
#: record is a listing's link to a document (the reply's other links were followed: a listing is
#: not a reply of events whose every record was dropped).
record_dropped = object()

#: A replayed listing names documents that are not recorded beside it (they were skipped): ``listing``
#: (its URL), ``missing`` (file names), ``spider``. The run log counts them (``not_beside_count``), so
#: a replay that found nothing for that reason is not called empty.
documents_not_beside = object()

#: Part of the source archive could not be read back, or stored events could not be checked against it
#: (a reparse skips what it cannot read and reads on): ``exception`` (a
#: :class:`~votersdaily.plumbing.warc_reader.DamagedWarc` naming the file and offset, or
#: :class:`~votersdaily.reparse.UnverifiedEvents`), ``spider``. The run log lists it among its errors
#: (``where: archive``), so the run does not end ``success``.
archive_unreadable = object()

#: A second interrupt stops the reactor while the spider is still opening (its pipelines waiting for
#: the store: votersdaily/interrupts.py): ``spider``. It has had no ``spider_opened``, so none of the
#: reactor-shutdown triggers an open spider has: the run log spools its record on this one.
stopped_while_opening = object()

#: An interrupt left ``request`` unfetched (dropped while it waited for the downloader, or a
#: laundromat download cut short): a Redis-fed worker gives it back to its queue instead of acking
#: it (docs/workers.md).
request_not_fetched = object()

#: A request's callback or item pipeline failed because a service it needs was away (a Redis-fed
#: worker's store did not answer; docs/workers.md): ``request``, ``spider``. The failure is that
#: outage's, not the run's: the run log leaves it out of its errors (the component that waited the
#: outage out records it in the run log), and the request runs again, which counts as any run does.
outage_met = object()
