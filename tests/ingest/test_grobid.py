"""GROBID's TEI in sandcrawler's result shape."""

from __future__ import annotations

from tests.ingest.conftest import scholarly


def test_grobid_result_shape():
    """The real GROBID TEI in sandcrawler's result shape; a DERIVED copy with a biblio-glutton
    ``<idno type="fatcat">`` added to its header biblStruct gives ``fatcat_release``."""
    from votersdaily.ingest.grobid import grobid_result, quality

    tei = scholarly("23b29ea36382680716be08fc71aa81bd226e8a85.xml").read_bytes()
    result, kept = grobid_result(200, tei)
    assert kept == tei and result["status"] == "success" and result["fatcat_release"] is None
    assert result["grobid_version"] == "0.5.1-SNAPSHOT" and "grobid_version" not in result["metadata"]
    assert set(result["metadata"]["biblio"]) <= {"title", "authors", "journal", "date", "doi"}
    assert result["metadata"]["biblio"]["title"] == "DYNAMICS OF RAILWAY FREIGHT VEHICLES"
    assert quality(result) == "good"
    glutton = tei.replace(b"<biblStruct>", b'<biblStruct><idno type="fatcat">release_test</idno>', 1)
    assert glutton != tei
    assert grobid_result(200, glutton)[0]["fatcat_release"] == "release_test"
