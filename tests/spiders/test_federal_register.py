"""federal_register: the two real documents.json pages, paging through next_page_url, failure modes, crawls."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.conftest import recording
from tests.spiders.gov_support import crawl_twice, failed, ok, parse, run_logs, stored_events, truncate
from votersdaily.feeds.health import BROKEN, MANUAL, OK, classify, run_from_log, spider_health
from votersdaily.feeds.site import build_site
from votersdaily.sources.errors import ErrorPage, MalformedDocument, UnexpectedDocument
from votersdaily.spiders.federal_register import SGML_ENTITY_RE
from votersdaily.spiders.federal_register import FederalRegisterSpider as Spider
from votersdaily.store import open_store

EO = recording("gov/federal_register/documents_executive_orders.json")
NEWEST = recording("gov/federal_register/documents_newest20.json")
NOT_FOUND = recording("gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html")
EO_URL = Spider.recordings["gov/federal_register/documents_executive_orders.json"]
NEWEST_URL = Spider.recordings["gov/federal_register/documents_newest20.json"]
LIVE_HOST = b"https://www.federalregister.gov/api/v1/documents?"


@pytest.fixture(scope="module")
def newest():
    return parse(Spider, NEWEST, NEWEST_URL)


def test_executive_orders_page():
    events = parse(Spider, EO, EO_URL).events
    assert [e["unique_key"] for e in events] == [
        "2026-20321",
        "2026-20320",
        "2026-20319",
        "2026-19555",
        "2026-19417",
        "2026-19416",
        "2026-19335",
        "2026-18739",
        "2026-18738",
        "2026-18571",
    ]
    first, last = events[0], events[-1]
    assert first["datetime"] == "2026-10-02T00:00:00Z" and first["all_day"] is True
    assert first["_id"] == "2026-10-02T00:00:00Z-federal_register-2026-20321"
    assert first["title"] == "Inaugurating the Era of Super Intelligence"
    assert (first["branch"], first["entity"]) == ("Executive", "White House")
    assert (
        first["event_url"]
        == first["html_url"]
        == (
            "https://www.federalregister.gov/documents/2026/10/02/2026-20321/inaugurating-the-era-of-super-intelligence"
        )
    )
    assert first["pdf_url"] == "https://www.govinfo.gov/content/pkg/FR-2026-10-02/pdf/2026-20321.pdf"
    assert (
        first["public_inspection_pdf_url"]
        == "https://public-inspection.federalregister.gov/2026-20321.pdf?1790867710"
    )
    assert first["document_type"] == "Presidential Document" and first["publication_date"] == "2026-10-02"
    assert first["agency_names"] == ["Executive Office of the President"]
    assert (
        first["agencies"][0]["id"] == 538
        and first["agencies"][0]["slug"] == "executive-office-of-the-president"
    )
    # "abstract": null is normally provided, missing for this document
    assert first["description"] == "" and first["abstract"] == ""
    assert last["datetime"] == "2026-09-10T00:00:00Z" and last["title"] == "Supporting America's Ranchers"


def test_newest_page_types_and_entities(newest):
    assert len(newest.events) == 20
    types = Counter(e["document_type"] for e in newest.events)
    assert types == {"Notice": 12, "Presidential Document": 5, "Rule": 2, "Proposed Rule": 1}
    for e in newest.events:
        expected = "White House" if e["document_type"] == "Presidential Document" else "Federal Register"
        assert e["entity"] == expected and e["branch"] == "Executive"
        assert e["datetime"] == "2026-10-02T00:00:00Z" and e["all_day"] is True


def test_newest_page_agencies_and_abstracts(newest):
    docs = newest.by_key()
    rule = docs["2026-20281"]
    assert rule["title"] == "Global Benchmark for Efficient Drug Pricing (GLOBE) Model"
    assert rule["document_type"] == "Rule"
    assert rule["agency_names"] == [
        "Health and Human Services Department",
        "Centers for Medicare & Medicaid Services",
    ]
    foil = docs["2026-20272"]
    # The API left the SGML entity "T[uuml]rkiye" in this abstract; the title has a real "Türkiye".
    assert "Republic of Türkiye (Türkiye)" in foil["abstract"] and "[uuml]" not in foil["description"]
    assert foil["title"].startswith("Certain Aluminum Foil From the Republic of Türkiye")
    assert docs["2026-20267"]["agency_names"] == ["Agriculture Department"]


def test_sgml_entities_are_decoded_in_every_text_field(frozen_now):
    """The API left "T[uuml]rkiye" in both the abstract and the excerpts of 2026-20272 (the real
    page, as recorded); the excerpts were stored with it while the abstract was decoded. Every text
    field of every document of both real pages is held to it, not the one field first noticed."""
    events = parse(Spider, NEWEST, NEWEST_URL).events + parse(Spider, EO, EO_URL).events
    foil = next(e for e in events if e["unique_key"] == "2026-20272")
    assert "[uuml]" in json.loads(foil["source_text"])["excerpts"]  # the recording does say it
    assert foil["excerpts"] == (
        "The U.S. Department of Commerce (Commerce) determines that countervailable subsidies were "
        "provided to producers and exporters of certain aluminum foil (aluminum foil) from the "
        "Republic of Türkiye (Türkiye), during the period of review (POR)..."
    )
    for e in events:
        for key in ("title", "description", "abstract", "excerpts"):
            assert not SGML_ENTITY_RE.search(e[key] or ""), (e["unique_key"], key, e[key])


def test_source_text_is_the_result_object_as_published(newest):
    text = NEWEST.read_text("utf-8")
    results = json.loads(text)["results"]
    for e, result in zip(newest.events, results, strict=True):
        assert e["source_text"] in text
        assert json.loads(e["source_text"]) == result


def test_paging(newest):
    next_url = json.loads(NEWEST.read_text())["next_page_url"]
    # Discovery (no -a url=): the next page is followed, up to max_pages (setting default 3).
    assert [r.url for r in newest.requests] == [next_url]
    assert parse(Spider, NEWEST, NEWEST_URL, max_pages="1").requests == []
    assert parse(Spider, NEWEST, NEWEST_URL, settings={"FEDERAL_REGISTER_MAX_PAGES": 1}).requests == []
    # Given documents (-a url=) are parsed alone, their next page being on the live site ...
    assert parse(Spider, NEWEST, NEWEST_URL, given=NEWEST_URL).requests == []
    # ... unless following is asked for.
    followed = parse(Spider, NEWEST, NEWEST_URL, given=NEWEST_URL, follow="true", max_pages="2")
    assert [r.url for r in followed.requests] == [next_url]


@pytest.mark.parametrize(
    "body, exception",
    [
        (truncate(NEWEST.read_bytes()), MalformedDocument),
        (NEWEST.read_bytes().replace(b'"results":', b'"documents":', 1), UnexpectedDocument),
        (b"[" + NEWEST.read_bytes() + b"]", UnexpectedDocument),
        (NOT_FOUND.read_bytes(), ErrorPage),
    ],
    ids=["truncated", "no_results", "array_root", "html_error_page"],
)
def test_bad_documents_raise(body, exception):
    with pytest.raises(exception):
        parse(Spider, body, NEWEST_URL)


#: Derived from the real newest-20 page: the first result's publication_date nulled, as the
#: public-inspection feed lists withdrawn documents (no such page is recorded).
WITHDRAWN = NEWEST.read_bytes().replace(b'"publication_date":"2026-10-02"', b'"publication_date":null', 1)


@pytest.mark.parametrize(
    "body",
    [WITHDRAWN, NEWEST.read_bytes().replace(b'"document_number":"2026-20322"', b'"document_number":""', 1)],
    ids=["publication_date_null", "document_number_empty"],
)
def test_one_bad_record_is_dropped_the_rest_kept(body):
    """Derived variants of the real page: one record broken, the other 19 kept."""
    parsed = parse(Spider, body, NEWEST_URL)
    assert len(parsed.events) == 19 and "2026-20322" not in parsed.by_key()
    stats = parsed.spider.crawler.stats
    assert stats.get_value("events/dropped/record:UnexpectedDocument") == 1
    assert stats.get_value("events/dropped") == 1


def test_crawl_keeps_the_good_records_and_logs_the_dropped_one(crawl, tmp_path, sqlite_uri, frozen_now):
    page = tmp_path / "public_inspection.json"
    page.write_bytes(WITHDRAWN)  # derived: see WITHDRAWN
    ok(crawl("federal_register", [page], sqlite_uri))
    store = open_store(sqlite_uri)
    assert len(stored_events(store, "federal_register")) == 19
    (log,) = run_logs(store, "federal_register")
    assert (log["result"], log["insert_count"], log["dropped"]) == (
        "success",
        19,
        {"record:UnexpectedDocument": 1},
    )
    (record,) = log["dropped_records"]
    assert "2026-20322" in record["message"] and "None" in record["message"]
    # Given with -a url=, the run is by hand: shown with its drops, kept out of the verdict ...
    health = spider_health(store, "federal_register")
    assert health.status == MANUAL and health.last.note.endswith("[record:UnexpectedDocument: 1]")
    # ... and the same run coming from the live listing counts, its drop in the note.
    counted = run_from_log(dict(log, input="listing"))
    classify([counted], ratio=0.5, history=10)
    assert counted.status == OK
    assert counted.note == "1 dropped (record:UnexpectedDocument: 1), the rest stored"


def test_a_reply_whose_every_record_is_dropped_fails_the_run(crawl, tmp_path, sqlite_uri, frozen_now):
    """Derived: every publication_date of the real page nulled; the executive-orders page is fine."""
    page = tmp_path / "all_withdrawn.json"
    page.write_bytes(
        NEWEST.read_bytes().replace(b'"publication_date":"2026-10-02"', b'"publication_date":null')
    )
    proc = crawl("federal_register", [EO, page], sqlite_uri)
    assert proc.returncode == 1, proc.stderr[-2000:]  # the run failed (AllRecordsDropped)
    store = open_store(sqlite_uri)
    assert len(stored_events(store, "federal_register")) == 10  # the good reply is stored
    (log,) = run_logs(store, "federal_register")
    assert log["result"] == "AllRecordsDropped" and log["dropped"] == {"record:UnexpectedDocument": 20}
    assert log["error_message"] == "all 20 records of %s were dropped (see dropped)" % page.resolve().as_uri()
    assert log["empty"] is False and log["insert_count"] == 10
    # The health page shows the run as broken, with the reason of the drops.
    build_site(store, tmp_path / "site")
    page = (tmp_path / "site" / "health.html").read_text("utf-8")
    assert "AllRecordsDropped: all 20 records of" in page and "[record:UnexpectedDocument: 20]" in page
    # Given with -a url=, the run is by hand; from the live listing it would be broken.
    assert spider_health(store, "federal_register").status == MANUAL
    counted = run_from_log(dict(log, input="listing"))
    classify([counted], ratio=0.5, history=10)
    assert counted.status == BROKEN


def test_crawl_follows_next_page_url_up_to_max_pages(crawl, site, sqlite_uri, frozen_now):
    page1 = NEWEST.read_bytes().replace(LIVE_HOST, (site.url + "/api/v1/documents?").encode())
    site.route("/api/v1/documents.json", page1, content_type="application/json; charset=utf-8")
    site.route("/api/v1/documents", EO.read_bytes(), content_type="application/json; charset=utf-8")
    url = site.url + "/api/v1/documents.json?per_page=20&order=newest"
    # 20 + 10 documents, three of them on both pages.
    runs = crawl_twice(
        crawl, "federal_register", [url], sqlite_uri, 27, "-a", "follow=true", "-a", "max_pages=2"
    )
    # Two pages per run; the second page's next_page_url (the live site) was not followed.
    assert site.hits.get("/api/v1/documents.json?per_page=20&order=newest") == 2
    assert sum(v for k, v in site.hits.items() if k.startswith("/api/v1/documents?")) == 2
    assert runs.first["responses"] == 3  # robots.txt + 2 pages
    assert (
        runs.docs["2026-09-10T00:00:00Z-federal_register-2026-18571"]["title"]
        == "Supporting America's Ranchers"
    )


def test_crawl_of_recordings_and_a_bad_page(crawl, tmp_path, sqlite_uri):
    bad = tmp_path / "documents.json"
    bad.write_bytes(NEWEST.read_bytes().replace(b'"results":', b'"documents":', 1))
    failed(crawl("federal_register", [EO, bad], sqlite_uri))
    store = open_store(sqlite_uri)
    docs = stored_events(store, "federal_register")
    assert len(docs) == 10 and all(d["source_url"] == EO_URL for d in docs.values())
    (log,) = run_logs(store, "federal_register")
    assert log["result"] == "UnexpectedDocument" and log["insert_count"] == 10


def test_smoke():
    assert Spider.frequency_hours == 6.0
    (listing,) = Spider.listing_urls
    assert (
        listing.startswith("https://www.federalregister.gov/api/v1/documents.json?")
        and "order=newest" in listing
    )
    assert sorted(Spider.recording_urls()) == sorted([EO.resolve().as_uri(), NEWEST.resolve().as_uri()])
