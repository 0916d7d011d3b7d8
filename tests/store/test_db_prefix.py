"""``VOTERSDAILY_DB_PREFIX``: every database the project creates or reads carries the deployment's
prefix on the server, on both backends, and two deployments on one server never see each other's
data. Every database reaches the server through a store's methods; the backends
name it through ``votersdaily.store.names.database_name``.
"""

from __future__ import annotations

import base64
import os

import pytest

from tests.conftest import REPO, recording
from tests.support.cli_main import run_main
from votersdaily.cli.views import project_databases
from votersdaily.defaults import DEFAULTS
from votersdaily.store import StoreError, open_store
from votersdaily.store.couch import CouchStore
from votersdaily.store.embedded import EmbeddedStore
from votersdaily.store.names import PREFIX_ENV, db_prefix

#: Under $VOTERSDAILY_TEST_COUCHDB this test process already has a prefix (tests/conftest.py).
OWN = os.environ.get(PREFIX_ENV, "")


def names_on_server(uri: str) -> set[str]:
    """Every database of the server (or file), as the server names them, within this test process's."""
    raw = CouchStore(uri) if uri.startswith("http") else EmbeddedStore(EmbeddedStore.path_of(uri))
    try:
        return {name for name in raw.list_dbs() if name.startswith(OWN)}
    finally:
        raw.close()


def test_every_store_call_names_the_prefixed_database(store_uri, monkeypatch):
    monkeypatch.setenv(PREFIX_ENV, OWN + "staging_")
    store = open_store(store_uri)
    assert not store.has_db("vd_events")
    store.install_views("vd_events")  # creates it
    store.ensure_db("ll_seeds")
    doc = {
        "_id": "2026-09-17T14:00:00Z-house_votes-1",
        "datetime": "2026-09-17T14:00:00Z",
        "parser_name": "house_votes",
        "unique_key": "1",
        "_attachments": {"a.txt": {"content_type": "text/plain", "data": base64.b64encode(b"hi").decode()}},
    }
    (answer,) = store.bulk_docs("vd_events", [doc])
    assert answer.get("ok"), answer
    store.bulk_docs("ll_seeds", [{"_id": "seed"}])
    assert store.has_db("vd_events") and store.get("vd_events", doc["_id"])["parser_name"] == "house_votes"
    assert set(store.get_many("vd_events", [doc["_id"]])) == {doc["_id"]}
    assert [d["_id"] for d in store.iter_docs("vd_events")] == [doc["_id"]]
    assert store.count("vd_events") == 1 and store.get_attachment("vd_events", doc["_id"], "a.txt") == b"hi"
    assert [row.id for row in store.query("vd_events", "by_datetime")] == [doc["_id"]]
    assert sorted(store.list_dbs()) == ["ll_seeds", "vd_events"]  # the project's names
    assert names_on_server(store_uri) == {OWN + "staging_vd_events", OWN + "staging_ll_seeds"}

    monkeypatch.setenv(PREFIX_ENV, OWN + "production_")
    other = open_store(store_uri)
    assert not other.has_db("vd_events") and other.list_dbs() == []
    other.close()
    store.drop_db("ll_seeds")
    assert names_on_server(store_uri) == {OWN + "staging_vd_events"}
    store.close()


def test_a_crawl_its_run_log_and_the_readers_use_the_setting(crawl, couch_uri, monkeypatch, frozen_now):
    """The Scrapy setting names the prefix when the environment does not."""
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    staging = OWN + "staging_"
    path = recording("gov/house_roll_call/roll314.xml")
    proc = crawl("house_votes", [path], couch_uri, "-s", "VOTERSDAILY_DB_PREFIX=" + staging)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert names_on_server(couch_uri) == {staging + "vd_events", staging + "vd_log"}
    dumped = run_main("dump", "vd_events", store_uri=couch_uri, env={PREFIX_ENV: staging})
    assert dumped.returncode == 0 and dumped.stdout.count("\n") == 1, dumped.stderr
    elsewhere = run_main("dump", "vd_events", store_uri=couch_uri, env={PREFIX_ENV: OWN + "production_"})
    assert elsewhere.returncode == 2 and elsewhere.stdout == ""


@pytest.mark.parametrize("prefix", ["Staging_", "_staging", "staging prod", "1staging"])
def test_a_prefix_that_cannot_start_a_couchdb_name_is_refused(prefix, monkeypatch):
    monkeypatch.setenv(PREFIX_ENV, prefix)
    with pytest.raises(StoreError) as refused:
        db_prefix()
    assert str(refused.value) == (
        "database prefix %r (VOTERSDAILY_DB_PREFIX) is not the start of a CouchDB database name: a "
        "lowercase letter, then lowercase letters, digits or _$()+-/" % prefix
    )


def test_the_admin_set_up_of_operations_md_names_every_database_the_project_uses():
    """docs/operations.md's `views push` and `_security` lines cover project_databases(), no more."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    block = text[text.index("Set-up, as the admin") :].split("```sh\n", 1)[1].split("```", 1)[0]
    (push,) = [line for line in block.splitlines() if " views push " in line]
    (security,) = [line for line in block.splitlines() if "_security" in line]
    expected = project_databases(DEFAULTS)
    assert push.split(" views push ", 1)[1].split() == expected
    assert security.split("'%s\\n' ", 1)[1].split(" | ", 1)[0].split() == expected
