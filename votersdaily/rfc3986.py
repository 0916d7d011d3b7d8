"""The pieces of RFC 3986 that several layers need, written once.

Dot-segment removal (§5.2.4) serves the laundromat's seed keys and the ingest's URL cleaning;
userinfo (§3.2.1, where ``user:password`` is deprecated and "should not be rendered as clear
text") is masked for anything shown and kept out of the base URL an HTTP client sends to.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, literally (a path where no segment starts with ``.`` has no dot segment)."""
    if "/." not in path and not path.startswith("."):
        return path
    inp = path
    out: list[str] = []
    while inp:
        if inp.startswith("../"):
            inp = inp[3:]
        elif inp.startswith("./"):
            inp = inp[2:]
        elif inp.startswith("/./"):
            inp = "/" + inp[3:]
        elif inp == "/.":
            inp = "/"
        elif inp.startswith("/../"):
            inp = "/" + inp[4:]
            if out:
                out.pop()
        elif inp == "/..":
            inp = "/"
            if out:
                out.pop()
        elif inp in (".", ".."):
            inp = ""
        else:
            start = 1 if inp.startswith("/") else 0
            cut = inp.find("/", start)
            if cut < 0:
                cut = len(inp)
            out.append(inp[:cut])
            inp = inp[cut:]
    return "".join(out)


def mask_uri(uri: str) -> str:
    """``uri`` with any password replaced by ``***``: the only form of a URI that may be logged
    (also of one that does not parse, a bad IPv6 literal: the message saying so must not leak it)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", uri)
    if parts.password is None:
        return uri
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc="%s:***@%s" % (user, hostport)))


def service_base(uri: str) -> tuple[str, tuple[str, str] | None]:
    """The base URL of an HTTP service (no credentials, query or fragment; the path ends in ``/``)
    and the percent-decoded ``(user, password)`` its userinfo held, for HTTP basic auth."""
    # Imported here: the store and the laundromat's workers use this module, not Scrapy (0.2 s to import).
    from scrapy.utils.url import strip_url

    parts = urlsplit(strip_url(uri, strip_credentials=True, strip_default_port=False))
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
    userinfo = urlsplit(uri)
    if not userinfo.username:
        return base, None
    return base, (unquote(userinfo.username), unquote(userinfo.password or ""))
