"""The CouchDB map functions (JavaScript, run here under Node) emit exactly what the embedded store's
view specs compute, so both backends answer the same queries."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support.services import REPO
from votersdaily.store.base import StoreError
from votersdaily.store.views import VIEWS, design_document, view_keys

SAMPLES = [
    {
        "_id": "a",
        "datetime": "2026-09-16T23:05:00Z",
        "branch": "Legislative",
        "entity": "Senate",
        "parser_name": "senate_votes",
        "unique_key": "119-1-659",
        "committee_code": "SSAF",
    },
    {
        "_id": "b",
        "datetime": "2026-09-16T23:05:00Z",
        "branch": "Executive",
        "entity": "White House",
        "parser_name": "white_house",
        "unique_key": "51617",
    },
    {"_id": "c", "title": "no datetime", "parser_name": "x", "unique_key": "1"},
    # by_parser_provenance's values: a pointer into the archive, a null mark (kept, as JSON keeps
    # it), an event its crawl could not archive (false kept) with the three marks.
    {
        "_id": "p1",
        "datetime": "2026-09-16T23:05:00Z",
        "parser_name": "house_votes",
        "unique_key": "2026-314",
        "parser_version": "1.2",
        "warc_file": "house_votes-20261002T180000Z-00000.warc.gz",
        "warc_offset": 12345,
        "warc_record_id": "<urn:uuid:6a1f0c5e-3f0e-4c39-9d0a-51d2c7d1c6b1>",
        "replaced_by": None,
    },
    {
        "_id": "p2",
        "parser_name": "house_votes",
        "unique_key": "2026-315",
        "archived": False,
        "superseded_by": "2026-09-17T00:00:00Z-house_votes-2026-315",
        "withdrawn_by": "house_votes 1.3",
        "replaced_by": "x",
    },
    {"_id": "d", "datetime": None, "branch": "Judicial"},
    {"_id": "e", "datetime": "2026-01-01T00:00:00Z", "unique_key": 7, "parser_name": "p"},
    {
        "_id": "l1",
        "parser_name": "house_votes",
        "access_datetime": "2026-10-02T18:00:00Z",
        "result": "success",
    },
    {
        "_id": "l2",
        "parser_name": "house_votes",
        "access_datetime": "2026-10-02T19:00:00Z",
        "result": "ErrorPage",
    },
    {"_id": "l3", "access_datetime": "2026-10-02T20:00:00Z"},
    # Ids (by_bill, by_docket, by_vote): a list, a string, odd members and duplicates, no datetime.
    {
        "_id": "i1",
        "datetime": "2026-09-16T23:05:00Z",
        "bill_ids": ["s2403-119", "hr1-119"],
        "vote_id": "h314-119.2026",
        "dockets": [],
    },
    {"_id": "i2", "datetime": "2026-09-02T20:50:15Z", "vote_ids": ["h294-119.2026", "h294-119.2026"]},
    {"_id": "i3", "datetime": "2026-09-02T20:50:15Z", "bill_ids": "hr9-119", "vote_id": ["h1-119.2025"]},
    {
        "_id": "i4",
        "datetime": "2026-09-02T20:50:15Z",
        "bill_ids": [7, None, ["hr2-119"], {"a": 1}, "hr3-119"],
    },
    {"_id": "i5", "bill_ids": ["hr4-119"], "dockets": ["24-123"], "vote_id": "s1-119.2025"},
    {"_id": "i6", "datetime": "2023-06-30T00:00:00Z", "dockets": ["21-476", "22O156"], "vote_ids": None},
]

RUNNER = r"""
const vm = require("vm");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {keys: {}, values: {}};
for (const [name, source] of Object.entries(input.maps)) {
  out.keys[name] = [];
  out.values[name] = [];
  for (const doc of input.docs) {
    const keys = [];
    const values = [];
    const sandbox = {emit: (k, v) => { keys.push(k); values.push(v === undefined ? null : v); }};
    const fn = vm.runInNewContext("(" + source + ")", sandbox);
    fn(JSON.parse(JSON.stringify(doc)));
    out.keys[name].push(keys);
    out.values[name].push(values);
  }
}
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.parametrize("db", sorted(VIEWS))
def test_js_map_functions_match_the_specs(db):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (scripts/setup.sh installs what CI needs)")
    design = design_document(db)
    assert design is not None and set(design["views"]) == set(VIEWS[db]), (
        "couchdb_views/%s and VIEWS disagree" % db
    )
    maps = {name: view["map"] for name, view in design["views"].items()}
    answer = subprocess.run(
        [node, "-e", RUNNER],
        input=json.dumps({"maps": maps, "docs": SAMPLES}),
        capture_output=True,
        text=True,
        check=True,
    )
    answered = json.loads(answer.stdout)
    emitted = answered["keys"]
    for name, spec in VIEWS[db].items():
        expected = [view_keys(spec, doc) for doc in SAMPLES]
        assert emitted[name] == expected, name
        # What JSON carries of each value (the view's rows go over HTTP as JSON): the same.
        values = [[json.loads(json.dumps(spec.value(doc)))] * len(view_keys(spec, doc)) for doc in SAMPLES]
        assert answered["values"][name] == values, name
    if db == "vd_events":  # the samples reach every branch of the id views' maps
        emitted_ids = {
            name: [k for keys in emitted[name] for k in keys] for name in ("by_bill", "by_docket", "by_vote")
        }
        assert emitted_ids == {
            "by_bill": [
                ["s2403-119", "2026-09-16T23:05:00Z"],
                ["hr1-119", "2026-09-16T23:05:00Z"],
                ["hr9-119", "2026-09-02T20:50:15Z"],
                ["hr3-119", "2026-09-02T20:50:15Z"],
            ],
            "by_docket": [["21-476", "2023-06-30T00:00:00Z"], ["22O156", "2023-06-30T00:00:00Z"]],
            "by_vote": [
                ["h314-119.2026", "2026-09-16T23:05:00Z"],
                ["h294-119.2026", "2026-09-02T20:50:15Z"],  # i2 names it twice: one row
                ["h1-119.2025", "2026-09-02T20:50:15Z"],
            ],
        }


@pytest.mark.parametrize("db", sorted(VIEWS))
def test_the_embedded_stores_view_rows_are_what_the_specs_emit(db):
    """The embedded store's rows (``_view_rows_of``: ids looked for first, fields read once) are each
    spec's keys, padded, for the samples above and every event of the real recordings."""
    from tests.test_schema import recorded_events
    from votersdaily.store.embedded import MAX_KEY_PARTS, _view_rows_of

    docs = SAMPLES + [{"_id": "r%d" % i, **event} for i, event in enumerate(recorded_events())]
    extract = _view_rows_of(db)
    for doc in docs:
        rows: list = []
        extract("the-db", doc["_id"], doc, rows)
        expected = [
            ("the-db", view, *key, *[""] * (MAX_KEY_PARTS - len(key)), doc["_id"], spec.value(doc))
            for view, spec in VIEWS[db].items()
            for key in spec.keys(doc)
        ]
        assert [(*row[:-1], None if row[-1] is None else json.loads(row[-1])) for row in rows] == expected, (
            doc["_id"]
        )


def test_the_embedded_stores_view_rows_as_tuples_are_its_query_rows(tmp_path):
    """``EmbeddedStore.view_rows`` (what a reparse reads of 200,000 events: tuples, the values parsed
    as one JSON text) answers each view's key ranges with the rows, keys, values and revisions
    ``query`` answers, for the samples above and every event of the real recordings."""
    from tests.test_schema import recorded_events
    from votersdaily.store.embedded import EmbeddedStore

    store = EmbeddedStore(str(tmp_path / "rows.db"))
    try:
        for db in sorted(VIEWS):
            store.ensure_db(db)
            store.install_views(db)
            docs = SAMPLES + [{"_id": "r%d" % i, **event} for i, event in enumerate(recorded_events())]
            assert all("rev" in answer for answer in store.bulk_docs(db, [dict(doc) for doc in docs]))
            for view, spec in VIEWS[db].items():
                every = store.query(db, view, include_docs=False)
                assert every, (db, view)
                low, high = every[len(every) // 3].key, every[2 * len(every) // 3].key
                if spec.width > 1:  # a prefix and CouchDB's {} high key too
                    ranges = [(low, high), (low[:1], [*low[:1], {}])]
                else:
                    ranges = [(low, high), (None, None)]
                for startkey, endkey in ranges:
                    for revisions in (False, True):
                        rows = store.query(
                            db, view, startkey=startkey, endkey=endkey, include_docs=revisions, fields=()
                        )
                        expected = [
                            (row.id, row.key, row.value, row.doc["_rev"] if row.doc else None) for row in rows
                        ]
                        got = store.view_rows(db, view, startkey=startkey, endkey=endkey, revisions=revisions)
                        assert got == expected, (db, view, startkey, revisions)
                        assert all(isinstance(one[3], str) == revisions for one in got)
                        if spec.width == 2 and endkey == [*low[:1], {}]:  # a parser's rows, keys cut
                            assert store.rows_of_first_key(db, view, low[0], revisions=revisions) == [
                                (doc_id, key[1], value, rev) for doc_id, key, value, rev in expected
                            ], (db, view, revisions)
                if spec.width != 2:
                    with pytest.raises(StoreError, match="not keyed by two strings"):
                        store.rows_of_first_key(db, view, "x")
    finally:
        store.close()


def test_an_event_naming_an_id_twice_is_stored_with_its_neighbours_and_listed_once(store):
    """An event that names its vote twice (as ``vote_id`` and in ``vote_ids``) and its bill twice: the
    embedded store holds a key of a document once, so such an event used to fail the whole batch
    (SQLite's unique constraint) and take its neighbours with it. Each id now gives one row, on both
    stores. The events are real recorded ones; the doubled ids are derived here."""
    from tests.test_schema import recorded_events
    from votersdaily import schema
    from votersdaily.store.upsert import upsert

    voted = [event for event in recorded_events() if event.get("vote_ids") and event.get("bill_ids")]
    assert len(voted) >= 3
    docs = []
    for event in voted[:3]:
        doc = dict(event, _id=schema.event_id(event["datetime"], event["parser_name"], event["unique_key"]))
        docs.append(doc)
    doubled = docs[1]
    doubled["vote_id"] = doubled["vote_ids"][0]
    doubled["bill_ids"] = [*doubled["bill_ids"], *doubled["bill_ids"]]
    store.ensure_db(schema.EVENTS_DB)
    store.install_views(schema.EVENTS_DB)
    result = upsert(store, schema.EVENTS_DB, docs)
    assert not result.failed and store.count(schema.EVENTS_DB) == len(docs)
    vote, bill = doubled["vote_id"], doubled["bill_ids"][0]
    by_vote = store.query(schema.EVENTS_DB, "by_vote", startkey=[vote], endkey=[vote, {}], include_docs=False)
    by_bill = store.query(schema.EVENTS_DB, "by_bill", startkey=[bill], endkey=[bill, {}], include_docs=False)
    assert [row.id for row in by_vote].count(doubled["_id"]) == 1
    assert [row.id for row in by_bill].count(doubled["_id"]) == 1


def test_an_installed_package_reads_its_own_design_documents_not_a_neighbours(tmp_path):
    """Installed (a wheel, ``pip install --target``), the package's views are its ``_couchdb_views``.
    It used to take any ``couchdb_views`` folder beside the package (``site-packages/couchdb_views``,
    ``/opt/app/couchdb_views`` of another CouchDB application) for a checkout's, and push those."""
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "votersdaily",
        site / "votersdaily",
        ignore=shutil.ignore_patterns("__pycache__", "recordings", "*.so"),
    )
    shutil.copytree(REPO / "couchdb_views", site / "votersdaily" / "_couchdb_views")
    decoy = site / "couchdb_views" / "vd_events" / "views" / "by_datetime"
    decoy.mkdir(parents=True)
    (decoy / "map.js").write_text("function (doc) { emit('not votersdaily', null); }\n")
    shown = subprocess.run(
        [sys.executable, "-c", "from votersdaily.store import views; print(views.VIEWS_DIR)"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shown == str(site / "votersdaily" / "_couchdb_views")
