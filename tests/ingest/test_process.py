"""What a worker process makes of a landing page."""

from __future__ import annotations

from votersdaily.ingest import hops as H


def test_publisher_rule_yielding_the_page_falls_through():
    """An American Archivist ``/doi/abs/`` page: the ``/doi/10.`` rewrite gives the page itself;
    the ``/doi/pdf/`` anchor is followed instead (the anchor as sandcrawler's html.py quotes the
    publisher's markup; the rest of this page is plumbing), so a pdf ingest hops on, no link-loop."""
    from votersdaily.ingest.process import analyse_landing

    url = "https://americanarchivist.org/doi/abs/10.17723/aarc.62.2.j475270470145630"
    page = (
        b"<html><head><title>Abstract</title></head><body><p>Abstract.</p>"
        b'<a href="/doi/pdf/10.17723/aarc.62.2.j475270470145630" target="_blank">PDF</a></body></html>'
    )
    landing, _ = analyse_landing(page, url, "pdf")
    assert landing.next_hop == {
        "pdf_url": "https://americanarchivist.org/doi/pdf/10.17723/aarc.62.2.j475270470145630",
        "technique": "publisher-href",
    }
    state = H.new_state({"base_url": url, "ingest_type": "pdf"})
    assert H.next_hop(state, landing.next_hop["pdf_url"], 8)[1] is None
    # no anchor: the generic rules after it (here the "<url>.pdf" guess), never the page itself
    guess = b'<html><body><a href="%s.pdf">PDF</a></body></html>' % url.encode()
    assert analyse_landing(guess, url, "pdf")[0].next_hop["technique"] == "guess-url-plus-pdf"
    assert analyse_landing(b"<html><body><p>x</p></body></html>", url, "pdf")[0].next_hop == {}
    # a /doi/10. page keeps the direct rewrite
    direct = "https://americanarchivist.org/doi/10.17723/aarc.62.2.j475270470145630"
    assert analyse_landing(page, direct, "pdf")[0].next_hop["technique"] == "archivist-url"
