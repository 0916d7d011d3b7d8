"""The one check of a URL an operator gives says the URL probably meant, where one fits."""

from __future__ import annotations

import pytest

from votersdaily.plumbing.inputs import checked_url

HTTP = ("http", "https")
ANY = ("http", "https", "file")


@pytest.mark.parametrize(
    ("given", "schemes", "hint"),
    [
        ("htps://example.org/a.pdf", HTTP, "; did you mean https://example.org/a.pdf?"),
        ("HTTP//example.org/a", HTTP, "; did you mean http://example.org/a?"),
        ("example.org", HTTP, "; did you mean http(s)://example.org?"),
        ("localhost:8080/x.nt", ANY, "; did you mean http(s)://localhost:8080/x.nt?"),
        ("roll314.xml", ANY, ""),  # a file's name, not a host's
        ("mailto:clerk@example.org", HTTP, ""),
        ("ftp://example.org/a.nt", ANY, ""),
        ("x" * 300 + ".org", HTTP, "; did you mean http(s)://%s?" % ("x" * 300 + ".org")),  # no OSError
    ],
)
def test_a_url_that_is_none_says_the_one_meant(given, schemes, hint):
    with pytest.raises(ValueError) as refused:
        checked_url(given, "url", schemes, local=True)
    assert str(refused.value).endswith("%r%s" % (given[:80], hint) if len(given) <= 80 else hint)


def test_a_file_there_is_named_by_its_file_url_or_as_no_url(tmp_path, monkeypatch):
    (tmp_path / "roll314.xml").write_text("<rollcall-vote/>")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"; did you mean %s\?$" % (tmp_path / "roll314.xml").as_uri()):
        checked_url("roll314.xml", "url", ANY, local=True)
    with pytest.raises(ValueError, match=r"; that is a file here, not a URL$"):
        checked_url("roll314.xml", "url", HTTP, local=True)
    # a value read from data (a requests file's base_url) never tells what files are here
    with pytest.raises(ValueError, match=r"not an http\(s\) URL: 'roll314.xml'$"):
        checked_url("roll314.xml", "base_url", HTTP)
