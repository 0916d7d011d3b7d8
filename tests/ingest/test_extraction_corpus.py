"""The extraction processes' shortcuts give what the plain path gives, byte for byte, on every recorded
document: pypdf's named encoding tables decoded once per process and its hex strings read in C
(votersdaily/ingest/pdf_pypdf.py), htmldate's whole-page date passes skipped where they cannot match
(votersdaily/ingest/datesearch.py)."""

from __future__ import annotations

import io
import pickle
import random
import re

import pytest

from tests.conftest import shared_file
from tests.ingest.conftest import recorded_pdfs


@pytest.fixture
def pypdf_own():
    """``with pypdf_own():`` runs pypdf as it is installed (the plain path), the shortcuts back after."""
    import contextlib

    from votersdaily.ingest import pdf_pypdf

    @contextlib.contextmanager
    def own():
        pdf_pypdf.uninstall()
        try:
            yield
        finally:
            pdf_pypdf.install()

    return own


def test_the_shortcuts_are_in_use_with_the_installed_pypdf():
    """A pypdf that moved or changed the functions replaced would silently lose the shortcuts: this
    says so (then check the replacements against its new code)."""
    import pypdf._text_extraction._text_extractor as per_page
    import pypdf.generic._data_structures as objects
    from htmldate import core

    from votersdaily.ingest import datesearch, htmlbody, pdf, pdf_pypdf

    assert pdf.extract_pdf and htmlbody.extract_body, "importing the extraction installs the shortcuts"
    assert per_page.encoding_dict_from_named_encoding is pdf_pypdf.named_encoding_table
    assert objects.read_hex_string_from_stream is pdf_pypdf.read_hex_string
    assert isinstance(core.SIMPLE_PATTERN, datesearch.Prefiltered) and datesearch.install()


def test_pdf_text_and_metadata_are_pypdfs_own_on_every_recorded_pdf(pypdf_own, monkeypatch):
    """Every recorded PDF (the benchmark's among them), read in one order and then backwards (a
    table one PDF's font changes must not reach the next): the same ``pdf_meta`` and text as pypdf
    on its own, compared as pickled bytes. pypdf reads the text here as it does where poppler gives
    none (``pdftotext`` taken away; poppler's text is held to pdftotext in test_pdf_text.py)."""
    from votersdaily.ingest import pdftext
    from votersdaily.ingest.pdf import extract_pdf

    monkeypatch.setattr(pdftext, "PDFTOTEXT", None)

    pdfs = recorded_pdfs()
    ours = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    backwards = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in reversed(pdfs)}
    with pypdf_own():
        own = {name: pickle.dumps(extract_pdf(blob, thumbnail=False)) for name, blob in pdfs}
    assert ours == own and backwards == own
    texts = [pickle.loads(own[name])[1] for name, _ in pdfs]
    assert sum(1 for text in texts if text.strip()) >= 10, "the corpus has text to compare"
    assert {pickle.loads(own[name])[0].get("text_extractor") for name, _ in pdfs} <= {"pypdf", None}


def _read(reader, data: bytes, at: int) -> tuple[object, int]:
    """(the string read or the error's type and text, where the stream was left)."""
    stream = io.BytesIO(data)
    stream.seek(at)
    try:
        value: object = reader(stream)
        value = (type(value).__name__, value.original_bytes if hasattr(value, "original_bytes") else value)
    except Exception as exc:
        value = (type(exc).__name__, str(exc))
    return value, stream.tell()


def test_hex_strings_read_as_pypdf_reads_them(pypdf_own):
    """Every ``<`` of every recorded PDF's bytes that does not open a dictionary (their ids and
    information dictionaries; content streams are compressed there and covered above), and
    variants derived from the recorded dummy.pdf's /Author string: whitespace of each kind between
    digits, an odd count, lower case, a byte that is no digit, a string cut before its ``>``, an
    empty string, the end of the stream. The same value (type and bytes), or the same error, and
    the stream left at the same place."""
    from pypdf.generic._utils import read_hex_string_from_stream

    from votersdaily.ingest import pdf_pypdf

    author = b"<FEFF004500760061006E00670065006C006F0073>"
    cases = [
        (author, 0),
        (author.replace(b"00", b"0 0\n").replace(b"FE", b"F\x00E\t", 1) + b" tail", 0),
        (author[:-2] + b">", 0),  # an odd number of digits
        (author.lower(), 0),
        (author[:9] + b"G" + author[10:], 0),  # a byte that is no hex digit
        (author[:9] + b"(" + author[10:], 0),
        (author[:-1], 0),  # cut before the ">"
        (b"<>", 0),
        (b"<", 0),
        (b"", 0),
        (b"x<41>", 1),
        (b"<41>", 4),  # at the end of the stream
    ]
    for _, blob in recorded_pdfs():
        cases += [
            (blob, m.start())
            for m in re.finditer(rb"<(?!<)", blob)
            if m.start() == 0 or blob[m.start() - 1] != 60
        ]
    assert len(cases) > 60
    for data, at in cases:
        assert _read(pdf_pypdf.read_hex_string, data, at) == _read(read_hex_string_from_stream, data, at), (
            data[at : at + 60],
            at,
        )


def test_a_shared_table_is_a_fresh_copy_each_time():
    """pypdf writes into a font's table (a ToUnicode map's codes below 256): each caller gets its
    own copy of the process's decoded table, equal to what pypdf would build."""
    from pypdf import _codecs

    from votersdaily.ingest.pdf_pypdf import named_encoding_table

    first = named_encoding_table("cp1252")
    first[0x41] = "changed"
    second = named_encoding_table("cp1252")
    assert second == _codecs.encoding_dict_from_named_encoding("cp1252") and second is not first
    assert second[0x41] == "A" and second[0x80] == "\u20ac"


#: Every recorded HTML page: the scholarly articles and the gov pages (FIXTURES.md in each folder).
RECORDED_HTML = (
    "fixtures/inplace/scholarly/elife_article.html",
    "fixtures/inplace/scholarly/first_monday_ojs3_fulltext.html",
    "fixtures/inplace/scholarly/genders_g58_fairlie.html",
    "fixtures/inplace/scholarly/plos_one_article.html",
    "fixtures/gov/supreme_court/scotus_slip_example.html",
    "fixtures/gov/supreme_court/scotus_orders_home.html",
    "fixtures/gov/supreme_court/scotus_oral_args_example.html",
    "fixtures/gov/supreme_court/scotus_relating_2025.html",
    "fixtures/inplace/gov/supreme_court/scotus_relating_example.html",
    "fixtures/gov/house_docs_floor/billsthisweek_20260928_NEGATIVE_file_not_found.html",
)


def recorded_pages() -> list[tuple[str, str]]:
    """(name, text) of every recorded HTML page and of six of the benchmark's articles (their own
    words, no date: benchmarks/ingest.py), decoded as the ingest decodes them."""
    from benchmarks.ingest import article
    from votersdaily.ingest.htmldoc import parse_html

    pages = [
        (rel, parse_html(shared_file(rel).read_bytes(), "https://example.org/", "text/html").text)
        for rel in RECORDED_HTML
    ]
    return pages + [("benchmark article %d" % i, article(i, 5 + i % 6)) for i in range(6)]


@pytest.fixture
def htmldate_own():
    """``with htmldate_own():`` runs htmldate's passes as it ships them, the prefilters back after."""
    import contextlib

    from votersdaily.ingest import datesearch

    @contextlib.contextmanager
    def own():
        datesearch.uninstall()
        try:
            yield
        finally:
            datesearch.install()

    return own


#: Pieces of dates and of what surrounds them, for generated text: digits in every shape the passes
#: look for, their separators, copyright marks, month names, letters, a non-ASCII digit.
_PIECES = (
    *("0", "1", "2", "3", "9", "12", "19", "20", "31", "199", "1999", "2003", "2031", "2045", "20240131"),
    *("/", ".", "-", " ", "  ", ",", "\n", "T", ":", "Z", "+"),
    *("©", "&copy;", "Copyright", "copyright", "(c)", "w3.org", "of ", "th", "st", "."),
    *("January", "mars", "Dez.", "Jan", "word", "é", "\u0663", "<p>", "</a>"),
)


def _generated_texts(count: int) -> list[str]:
    draw = random.Random(20261127)
    return ["".join(draw.choice(_PIECES) for _ in range(draw.randint(1, 30))) for _ in range(count)]


def test_each_prefiltered_date_pass_finds_what_htmldates_finds():
    """Every prefiltered pass (htmldate's ``findall`` of ``search_page``, ``regex_parse``'s
    ``search``) on every recorded page, the benchmark's articles and 5,000 generated texts, from
    the start and from the middle: the same matches as htmldate's own expression."""
    from votersdaily.ingest import datesearch, htmlbody

    assert htmlbody.datesearch is datesearch  # importing htmlbody installed the prefilters

    texts = [text for _, text in recorded_pages()] + _generated_texts(5000)
    found = 0
    for name in datesearch.NEEDS:
        ours = getattr(datesearch._module(name), name)
        assert isinstance(ours, datesearch.Prefiltered), "%s is prefiltered" % name
        own = ours.pattern
        for text in texts:
            for pos in (0, len(text) // 2):
                expected = own.findall(text, pos)
                assert ours.findall(text, pos) == expected, (name, text[:200], pos)
                hit = own.search(text, pos)
                mine = ours.search(text, pos)
                assert (mine.span(), mine.groups()) == (hit.span(), hit.groups()) if hit else mine is None
                found += bool(expected)
    assert found > 1000, "the texts hold dates for every pass to find"


def test_trafilatura_gives_the_same_tei_with_the_prefiltered_date_search(htmldate_own):
    """``extract_body`` (trafilatura's TEI, its date found by htmldate) of every recorded page and
    of the benchmark's articles: the same as with htmldate's own passes, byte for byte; among them
    pages whose date only the whole-page search finds."""
    from votersdaily.ingest.htmlbody import extract_body

    pages = recorded_pages()
    ours = [extract_body(text) for _, text in pages]
    with htmldate_own():
        own = [extract_body(text) for _, text in pages]
    assert ours == own
    dated = [b["tei_xml"] for b in own if re.search(r"<date>\d{4}-\d{2}-\d{2}</date>", b.get("tei_xml", ""))]
    assert len(dated) >= 4


def test_a_pass_htmldate_changed_keeps_htmldates_own(monkeypatch):
    """A pass whose expression is not the one its prefilter was derived from (a newer htmldate) is
    left as htmldate has it, and install() says not all were prefiltered."""
    from htmldate import core

    from votersdaily.ingest import datesearch

    changed = re.compile(r"\D([0-9]{2}[/.-][0-9]{2}[/.-][0-9]{4})\D")
    monkeypatch.setattr(core, "SELECT_YMD_PATTERN", changed)
    try:
        assert datesearch.install() is False
        assert core.SELECT_YMD_PATTERN is changed
    finally:
        monkeypatch.undo()
        assert datesearch.install() is True


def test_meta_contents_are_those_of_the_meta_elements_on_every_recorded_page():
    """``HtmlDoc.meta_contents`` stops at the index for a key no meta has (the biblio asks some 100
    keys a page): on every recorded page and the benchmark's landing page, for every key the biblio
    asks and every key each page has (as written, upper case, padded), the non-empty contents of
    ``meta_elements``, in order."""
    from votersdaily.ingest.biblio import LIST_SELECTORS, SCALAR_SELECTORS
    from votersdaily.ingest.htmldoc import parse_html

    asked = {s if isinstance(s, str) else s[0] for sel in SCALAR_SELECTORS.values() for s in sel}
    asked |= {s for sel in LIST_SELECTORS.values() for s in sel}
    landing = (
        '<html><head><meta name="citation_title" content="Paper 7"><meta name="citation_pdf_url" '
        'content="/pdf/7.pdf"></head><body>x</body></html>'
    )  # benchmarks/ingest.py's landing page
    pages = [*recorded_pages(), ("benchmark landing page", landing)]
    found = 0
    for name, text in pages:
        doc = parse_html(text, "https://example.org/")
        keys = asked | set(doc.metas) | {k.upper() for k in doc.metas} | {" %s " % k for k in doc.metas}
        for key in sorted(keys):
            expected = [c for c in (m.get("content") for m in doc.meta_elements(key)) if c]
            assert doc.meta_contents(key) == expected, (name, key)
            found += bool(expected)
    assert found > 100, "the pages have metas to compare"


def _one_key_pages() -> list[tuple[str, bytes]]:
    """The benchmark's landing page (benchmarks/ingest.py) with one more meta, for each key the
    biblio asks, written as its selector writes it (``prism.eIssn``: mixed case) and its value the
    key itself (the DOI-scheme selector's meta with its scheme): alone on the page, a key is read
    whichever selectors come before it."""
    from votersdaily.ingest.biblio import LIST_SELECTORS, SCALAR_SELECTORS

    pages = []
    for selectors in (*SCALAR_SELECTORS.values(), *LIST_SELECTORS.values()):
        for selector in selectors:
            key, scheme = (selector, "") if isinstance(selector, str) else selector
            page = (
                '<html><head><meta name="citation_title" content="Paper 7"><meta name="citation_pdf_url" '
                'content="/pdf/7.pdf"><meta name="%s" content="10.5555/%s" scheme="%s"></head>'
                "<body>x</body></html>" % (key, key, scheme)
            )
            pages.append(("the landing page with %s" % key, page.encode()))
    return pages


def test_the_biblio_asks_a_page_only_for_its_own_keys_and_reads_what_asking_every_key_reads(
    monkeypatch,
):
    """``extract_biblio`` normalises its some 100 keys once and asks a page only for the keys the page
    has (``HtmlDoc.has_meta``): on every recorded HTML page, the benchmark's pages and its landing
    page with each key asked added, the same biblio as asking every key of every selector
    (``has_meta`` answering yes for each, the old way)."""
    from tests.ingest.conftest import recorded_html_pages
    from votersdaily.ingest.biblio import extract_biblio
    from votersdaily.ingest.htmldoc import HtmlDoc, parse_html

    pages = [(path.name, path.read_bytes()) for path in recorded_html_pages()]
    pages += [*_one_key_pages(), *((n, t.encode()) for n, t in recorded_pages())]
    found = 0
    for name, body in pages:
        doc = parse_html(body, "https://example.org/paper", "text/html")
        ours = extract_biblio(doc)
        with monkeypatch.context() as every_key:
            every_key.setattr(HtmlDoc, "has_meta", lambda self, key: True)
            assert extract_biblio(doc) == ours, name
        found += len(ours)
    assert found > 300, "the pages have biblio fields to compare"


def test_a_compiled_selector_selects_what_its_expression_selects_on_every_recorded_page():
    """``HtmlDoc.select`` evaluates each CSS selector's XPath compiled once: on every recorded HTML
    page, every selector of the fulltext patterns and rules and the scope's, the same elements in
    the same order as ``root.xpath`` of the expression (compiled at each call, the old way)."""
    from pathlib import Path

    from tests.ingest.conftest import recorded_html_pages
    from votersdaily.ingest import fulltext, scope
    from votersdaily.ingest.htmldoc import css_xpath, parse_html

    patterns = (
        *fulltext.PDF_PATTERNS,
        *fulltext.XML_PATTERNS,
        *fulltext.HTML_PATTERNS,
        *fulltext.COMPONENT_PATTERNS,
    )
    selectors = {p.selector for p in patterns if not fulltext._META_SEL.match(p.selector)}
    for module in (fulltext, scope):
        selectors |= set(re.findall(r'doc\.select\("([^"]+)"\)', Path(module.__file__).read_text()))
    assert len(selectors) > 50
    selected = 0
    for path in recorded_html_pages():
        doc = parse_html(path.read_bytes(), "https://example.org/", "text/html")
        for css in sorted(selectors):
            assert doc.select(css) == doc.root.xpath(css_xpath(css)), (path.name, css)
            selected += len(doc.select(css))
    assert selected > 100, "the pages have elements to compare"


def _fingerprint_texts() -> list[str]:
    """What trafilatura fingerprints (title, a space, the text) of every recorded page and the
    benchmark's articles, and generated texts: none, one word, the same word many times, a word
    an odd and an even number of times (a bit's sum at 0 sets it), punctuation only, words
    trafilatura drops (``word3_45``), non-Latin text (its own sampling path)."""
    from trafilatura import bare_extraction

    texts = []
    for _, page in recorded_pages():
        doc = bare_extraction(page, output_format="xmltei", include_formatting=True, with_metadata=True)
        if doc is not None:
            texts.append(str(doc.title) + " " + str(doc.raw_text))
    draw = random.Random(20261127)
    vocabulary = ["ingest", "landing", "pdf", "a", "of", "fingerprint", "2026", "Über", "naïve", "x1"]
    texts += [
        "",
        "word",
        " ".join(["hashing"] * 41),
        "alpha beta " * 3 + "alpha",
        "alpha beta " * 4,
        "... !!! ---",
        " ".join("word%d_%d" % (i, i) for i in range(300)),
        "中文的文本。没有空格，也没有拉丁标点。" * 3,
    ]
    texts += [" ".join(draw.choice(vocabulary) for _ in range(draw.randint(1, 400))) for _ in range(300)]
    return texts


def test_the_fingerprint_is_trafilaturas_own_on_every_recorded_page():
    """``Simhash.create_hash`` counted over all the tokens at once (votersdaily/ingest/fingerprint.py):
    on every recorded page, the benchmark's articles and generated texts, the same hash as
    trafilatura's own, at its 64 bits and at other widths (which go to trafilatura's own); and the
    TEI of every recorded page the same, byte for byte."""
    from trafilatura import deduplication

    from votersdaily.ingest import fingerprint
    from votersdaily.ingest.htmlbody import extract_body

    assert deduplication.Simhash.create_hash is fingerprint.create_hash, "importing htmlbody installs it"
    texts = _fingerprint_texts()
    pages = recorded_pages()
    widths = (64, 32, 128)
    ours = [[deduplication.Simhash(text, length=width).hash for width in widths] for text in texts]
    tei = [extract_body(text) for _, text in pages]
    fingerprint.uninstall()
    try:
        own = [[deduplication.Simhash(text, length=width).hash for width in widths] for text in texts]
        own_tei = [extract_body(text) for _, text in pages]
    finally:
        assert fingerprint.install() is True
    assert ours == own and tei == own_tei
    assert len({hashes[0] for hashes in own}) > 100, "the texts' fingerprints differ"
    assert sum('type="fingerprint"' in b.get("tei_xml", "") for b in own_tei) >= 10


def test_a_fingerprint_trafilatura_computes_otherwise_keeps_trafilaturas_own(monkeypatch):
    """A trafilatura whose ``create_hash`` gives another hash (a newer algorithm) keeps its own: the
    probe's fingerprints differ, and install() says so."""
    from trafilatura import deduplication

    from votersdaily.ingest import fingerprint

    def changed(self, inputstring):
        return 12345

    monkeypatch.setattr(fingerprint, "_OWN_CREATE_HASH", changed)
    try:
        assert fingerprint.install() is False
        assert deduplication.Simhash.create_hash is changed
    finally:
        monkeypatch.undo()
        assert fingerprint.install() is True
