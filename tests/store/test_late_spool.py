"""A spooled copy delivered late never replaces a version of its document observed later.

A spool is delivered when its store takes documents again: by the next run on the same machine, or by
``flush``, maybe hours later and after runs on other machines (scrapyd nodes, each with its own
spool) wrote newer versions of the same events; a file whose document the store refused is delivered
again, whole, by every later flush. Before, each delivery wrote its copies over whatever was stored.

The events are real recorded ones; the newer versions are derived from them and say so where they
are made: the House Clerk's roll call 314 with its description corrected, and recorded events
retitled. The store is the session's real PouchDB Server, or the embedded one.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.store.test_spool import ROLL, docs, spooled_records
from tests.store.test_told_unchanged import (  # noqa: F401 - parser_events: a fixture
    encoded,
    parser_events,
    rescheduled,
)
from tests.support.cli_main import run_main
from votersdaily import schema
from votersdaily.store import open_store
from votersdaily.store.identity import identity_of
from votersdaily.store.reschedules import RescheduleTracker
from votersdaily.store.spool import Spool
from votersdaily.store.upsert import observed_later, upsert

DB = schema.EVENTS_DB
AT = schema.EVENT_OBSERVED_AT
EARLY, LATE = "2026-09-17T08:00:00Z", "2026-09-17T09:00:00Z"


def observed(event: dict[str, Any], when: str, **changes: Any) -> dict[str, Any]:
    """Derived: ``event`` as observed at ``when`` (with ``changes``: another version of it)."""
    return dict(encoded(dict(event, **changes)), **{AT: when})


def test_a_spool_delivered_after_another_node_wrote_a_newer_version_keeps_the_newer(crawl, pouchdb, tmp_path):
    """Node A's crawl of roll call 314 at 08:00 could not reach the store (a wrong password) and
    spooled it; node B's crawl at 09:00, after the Clerk corrected the vote's description, stored the
    correction; then node A's ``flush``. Before, the flush put the 08:00 version back."""
    pouchdb.reset()
    corrected = tmp_path / "roll314.xml"  # derived from the recording: its <vote-desc> corrected
    original = ROLL.read_bytes()
    corrected.write_bytes(
        original.replace(b"Retire through Ownership Act<", b"Retire through Ownership Act of 2026<")
    )
    assert corrected.read_bytes() != original
    node_a = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool-a"), "VOTERSDAILY_FROZEN_NOW": EARLY}
    node_b = {"VOTERSDAILY_SPOOL_DIR": str(tmp_path / "spool-b"), "VOTERSDAILY_FROZEN_NOW": LATE}
    wrong = "http://nobody-%s:wrong@127.0.0.1:%d/" % (uuid.uuid4().hex[:8], pouchdb.port)
    assert crawl("house_votes", ROLL, wrong, env=node_a).returncode == 4  # spooled
    [spooled] = [r["doc"] for r in spooled_records(tmp_path / "spool-a") if r["db"] == DB]
    assert crawl("house_votes", corrected, pouchdb.url, env=node_b).returncode == 0
    [newer] = docs(pouchdb.url, DB)
    assert newer["_id"] == spooled["_id"] and newer["title"] != spooled["title"]

    flushed = run_main("flush", store_uri=pouchdb.url, env=node_a)

    assert flushed.returncode == 0, flushed.stderr
    [kept] = docs(pouchdb.url, DB)
    assert (kept["title"], kept[AT], kept["_rev"]) == (newer["title"], LATE, newer["_rev"])
    assert (
        "kept the store's version of 1 documents: it was observed later than the spooled copy (a newer run "
        "wrote it meanwhile), e.g. %s" % newer["_id"] in flushed.stderr
    )
    assert "updated=0" in flushed.stdout
    assert len(docs(pouchdb.url, schema.LOG_DB)) == 2  # node A's run log is delivered: its own id
    assert not list((tmp_path / "spool-a").iterdir())


def test_a_spool_file_delivered_again_never_puts_back_what_a_newer_run_replaced(
    parser_events,  # noqa: F811 - the fixture
    pouchdb,
    tmp_path,
):
    """A file of three events whose first the store refused (a ``validate_doc_update``) stays spooled,
    whole, for the next flush. A newer run then changed the second; the next flush, the refusal
    lifted, delivered the whole file again and put the second's spooled version back."""
    pouchdb.reset()
    store = open_store(pouchdb.url)
    try:
        store.ensure_db(DB)
        store.install_views(DB)
        first, second, third = (observed(event, EARLY) for event in parser_events[:3])
        guard = {
            "_id": "_design/guard",
            "validate_doc_update": "function (doc) { if (doc._id === %r) { throw({forbidden: 'not yet'}); } }"
            % first["_id"],
        }
        [answer] = store.bulk_docs(DB, [guard])
        spool = Spool(tmp_path / "spool")
        spool.write(identity_of(store), DB, [first, second, third], schema.VOLATILE_EVENT_KEYS, newer_by=AT)
        env = {"VOTERSDAILY_SPOOL_DIR": str(spool.directory)}
        assert run_main("flush", store_uri=pouchdb.url, env=env).returncode == 1  # the first refused
        newer_run = upsert(
            store, DB, [observed(parser_events[1], LATE, title="Retitled")], schema.VOLATILE_EVENT_KEYS
        )
        assert newer_run.updated == [second["_id"]]
        store.bulk_docs(DB, [dict(guard, _rev=answer["rev"], _deleted=True)])

        again = run_main("flush", store_uri=pouchdb.url, env=env)

        assert again.returncode == 0, again.stderr
        assert (store.get(DB, second["_id"])["title"], store.get(DB, second["_id"])[AT]) == ("Retitled", LATE)
        assert store.get(DB, first["_id"])[AT] == EARLY  # delivered at last
        assert "unchanged=1 failed=0" in again.stdout  # the third, as the first flush left it
        assert "kept the store's version of 1 documents" in again.stderr
        assert not spool.pending()
    finally:
        store.close()


def test_a_late_event_whose_key_moved_meanwhile_is_superseded_by_the_move_not_the_reverse(
    parser_events,  # noqa: F811 - the fixture
    pouchdb,
    tmp_path,
):
    """Node A spooled an event at 08:00; by 09:00 its source had moved it to the next day, and node B
    stored it there (another id, the same key). Before, A's flush marked B's newer event superseded by
    the spooled one, which then stood as the event's date."""
    pouchdb.reset()
    store = open_store(pouchdb.url)
    try:
        store.ensure_db(DB)
        store.install_views(DB)
        spooled = observed(parser_events[0], EARLY)
        moved = observed(rescheduled(parser_events[0]), LATE)  # derived: the same event a day later
        assert spooled["_id"] != moved["_id"] and spooled["unique_key"] == moved["unique_key"]
        spool = Spool(tmp_path / "spool")
        spool.write(identity_of(store), DB, [spooled], schema.VOLATILE_EVENT_KEYS, RescheduleTracker(), AT)
        assert upsert(store, DB, [moved], schema.VOLATILE_EVENT_KEYS).inserted == [moved["_id"]]  # node B

        flushed = run_main(
            "flush", store_uri=pouchdb.url, env={"VOTERSDAILY_SPOOL_DIR": str(spool.directory)}
        )

        assert flushed.returncode == 0, flushed.stderr
        assert store.get(DB, spooled["_id"])["superseded_by"] == moved["_id"]
        assert "superseded_by" not in store.get(DB, moved["_id"])
        assert "two live documents" not in flushed.stderr
    finally:
        store.close()


def test_a_late_write_keeps_what_was_observed_later_and_writes_what_was_observed_earlier(
    parser_events,  # noqa: F811 - the fixture
    store,
):
    """``upsert`` with ``newer_by``, on both stores: a stored version observed later stays (``older``);
    one observed earlier, or at the same second, or at no time anyone can read, is replaced; an
    unchanged one stays unchanged whatever its time."""
    store.ensure_db(DB)
    store.install_views(DB)
    events = parser_events[:5]
    stored = [
        observed(events[0], LATE),
        observed(events[1], EARLY),
        observed(events[2], EARLY),
        observed(events[3], "not a time"),
        observed(events[4], LATE),
    ]
    upsert(store, DB, stored, schema.VOLATILE_EVENT_KEYS)
    late = [
        observed(events[0], EARLY, title="Spooled"),  # the store's is newer
        observed(events[1], LATE, title="Spooled"),  # the spooled is newer
        observed(events[2], EARLY, title="Spooled"),  # the same second: the last write wins, as always
        observed(events[3], EARLY, title="Spooled"),  # no time to compare: written, as before
        observed(events[4], EARLY),  # the same content: unchanged
    ]

    result = upsert(store, DB, late, schema.VOLATILE_EVENT_KEYS, newer_by=AT)

    ids = [event["_id"] for event in late]
    assert (result.older, result.updated, result.unchanged) == ([ids[0]], ids[1:4], [ids[4]])
    assert result.counts() == {"older": 1, "updated": 3, "unchanged": 1}
    assert [store.get(DB, doc_id)["title"] == "Spooled" for doc_id in ids] == [False, True, True, True, False]
    assert store.get(DB, ids[0])[AT] == LATE


def test_of_two_copies_in_one_late_batch_the_one_observed_later_wins(parser_events, store):  # noqa: F811
    """Two spool files delivered as one batch may hold one event twice, in any order."""
    store.ensure_db(DB)
    store.install_views(DB)
    later, earlier = observed(parser_events[0], LATE, title="Later"), observed(parser_events[0], EARLY)
    for order in ([later, earlier], [earlier, later]):
        result = upsert(store, DB, order, schema.VOLATILE_EVENT_KEYS, newer_by=AT)
        assert result.duplicates == [later["_id"]]
        assert store.get(DB, later["_id"])["title"] == "Later"


@pytest.mark.parametrize(
    ("first", "second", "later"),
    [
        ("2026-09-17T09:00:00Z", "2026-09-17T08:00:00Z", True),
        (
            "2026-09-17T09:00:00+00:00",
            "2026-09-17T10:00:00+02:00",
            True,
        ),  # another offset, an earlier instant
        ("2026-09-17T08:00:00Z", "2026-09-17T08:00:00Z", False),
        ("2026-09-17T08:00:00Z", "2026-09-17T09:00:00Z", False),
        ("2026-09-17T09:00:00Z", None, False),
        ("2026-09-17T09:00:00", "2026-09-17T08:00:00Z", False),  # naive: no instant to compare
        ("yesterday", "2026-09-17T08:00:00Z", False),
    ],
)
def test_which_observation_is_later(first, second, later):
    assert observed_later(first, second) is later
