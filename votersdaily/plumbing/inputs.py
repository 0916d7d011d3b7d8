"""Operators' input files (ingest request files, laundromat seed lists, URL lists), read line by line
within a bound, so one huge line never fills memory and one bad line never stops the file; the
characters no input field may hold; the URLs of a spider's ``-a url=`` argument (comma-separated);
the one check of a URL an operator gives; and the spider arguments (``-a NAME=VALUE``) a spider takes,
with the one check of each kind of value they take (a word of a closed set, yes or no, a whole
number), so that a mistyped value is refused before the run, as a usage error, not a failed run."""

from __future__ import annotations

import difflib
import inspect
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

#: C0 and C1 control characters and lone surrogates (which have no UTF-8 form).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
#: Characters of a URL an operator gives.
MAX_URL = 8192
#: The same, but tab, line feed and carriage return allowed (free text).
CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class BadLine(ValueError):
    """A line of an input file that cannot be read: longer than the bound, or not UTF-8."""


class NotAFileOfLines(OSError):
    """An input named by a path that is a device or a socket, not a file (``/dev/zero`` never ends
    and has no line end: read line by line it held the process for good, deaf to Ctrl-C)."""


def readable_kind(mode: int) -> bool:
    """Whether a file of this ``st_mode`` is one lines are read from: a regular file or a pipe."""
    return stat.S_ISREG(mode) or stat.S_ISFIFO(mode)


def bounded_lines(path: str | Path, max_bytes: int) -> Iterator[tuple[int, str | BadLine]]:
    """``(line number, text without its line end)`` for every line of ``path``, or a :class:`BadLine`
    for one longer than ``max_bytes`` (skipped without being held whole) or not UTF-8;
    :class:`NotAFileOfLines` for a device or a socket."""
    with open(path, "rb") as handle:
        if not readable_kind(os.fstat(handle.fileno()).st_mode):
            raise NotAFileOfLines("it is a device or a socket, not a file of lines")
        lineno = 0
        while line := handle.readline(max_bytes + 1):
            lineno += 1
            if len(line) > max_bytes and not line.endswith(b"\n"):
                while (rest := handle.readline(max_bytes)) and not rest.endswith(b"\n"):
                    pass
                yield lineno, BadLine("line is longer than %d bytes" % max_bytes)
                continue
            try:
                yield lineno, line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield lineno, BadLine("line is not UTF-8: %s" % exc)


def listed_lines(path: str | Path, max_bytes: int) -> Iterator[tuple[str, str | BadLine]]:
    """``("<path>:<line>", text or BadLine)`` for the entries of a list file: one per line, blank
    lines and ``#`` comments skipped."""
    for lineno, line in bounded_lines(path, max_bytes):
        if isinstance(line, BadLine) or (line.strip() and not line.lstrip().startswith("#")):
            yield "%s:%d" % (path, lineno), line


Raw = TypeVar("Raw")
Checked = TypeVar("Checked")


def checked_inputs(
    found: Iterable[tuple[str, Raw | Exception]], check: Callable[[Raw], Checked]
) -> Iterator[tuple[str, Checked | ValueError]]:
    """``(where, checked value, or the ValueError why not)`` for each input: an error found while
    reading it (a bad line) is passed on, a value ``check`` refuses becomes its error."""
    for where, value in found:
        if isinstance(value, Exception):
            yield where, value if isinstance(value, ValueError) else ValueError(str(value))
            continue
        try:
            yield where, check(value)
        except ValueError as exc:
            yield where, exc


def _no_constant(name: str) -> Any:
    raise ValueError("%s is no JSON number" % name)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("%s is too large for a JSON number a store holds" % shown(text, 40))
    return number


def strict_json(text: str) -> Any:
    """``json.loads`` of a line of an operator's file, without what Python's json takes beyond JSON:
    ``NaN``, ``Infinity`` and numbers too large for a float (read as infinite), which no store holds
    (a line holding one is a bad line, not a request the store refuses after the run took it)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def shown(value: str, chars: int = 80) -> str:
    """A value in a message: its start, never megabytes of it, control characters escaped."""
    return repr(value[:chars]) + ("... (%d characters)" % len(value) if len(value) > chars else "")


def split_urls(value: str | Iterable[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [u.strip() for u in value if u.strip()]


def checked_url(
    value: str,
    what: str = "URL",
    schemes: tuple[str, ...] = ("http", "https", "file"),
    local: bool = False,
    relative: bool = False,
) -> str:
    """``value`` stripped, or ValueError (its message starts with ``what``) when it can never be
    fetched: longer than MAX_URL, a control character in it, not a URL (a bad port or IPv6 literal),
    another scheme, or an http(s) URL without a host. (Spaces pass: a fetch percent-encodes them.)
    ``local``: the value is the operator's own argument, so a file of that name here may be named
    in the hint (never for a value read from crawled or queued data: no probing this machine's files).
    ``relative``: a relative reference (no scheme: kept, never fetched) passes these checks too."""
    value = value.strip()
    if len(value) > MAX_URL:
        raise ValueError("%s is longer than %d characters: %s" % (what, MAX_URL, shown(value)))
    if CONTROL.search(value):
        raise ValueError("%s holds a control character: %s" % (what, shown(value)))
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number in range)
    except ValueError as exc:
        raise ValueError("%s is not a URL (%s): %s" % (what, exc, shown(value))) from None
    if relative and not parts.scheme:
        return value
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        raise ValueError(
            "%s is not an %s URL: %s%s"
            % (what, _schemes(schemes), shown(value), _meant_url(value, schemes, local))
        )
    if scheme != "file" and not parts.hostname:
        raise ValueError("%s names no host: %s" % (what, shown(value)))
    if scheme == "file" and (parts.netloc not in ("", "localhost") or not parts.path.startswith("/")):
        # file://roll314.xml fetched the working folder (IsADirectoryError), file:roll314.xml was
        # Scrapy's traceback: a file: URL names an absolute path, file:///…
        raise ValueError(
            "%s is not a file: URL of an absolute path (file:///…): %s%s"
            % (what, shown(value), _meant_file(parts.netloc + parts.path) if local else "")
        )
    return value


def _meant_file(path: str) -> str:
    """``; did you mean file:///<working folder>/<path>?`` for the relative ``path`` of a file: URL
    the operator gave (never probed: the path made absolute as the shell would)."""
    return "; did you mean %s?" % Path(os.path.abspath(unquote(path))).as_uri() if path else ""


#: What a host name looks like (``example.org``): the start of a URL given without its scheme; and
#: the endings of the files the project reads, which make a name a file's (``roll314.xml``), not a host's.
_HOST_LIKE = re.compile(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(:[0-9]+)?")
_FILE_ENDINGS = re.compile(
    r".*\.(xml|json|jsonl|html?|pdf|txt|csv|ics|nt|nq|ttl|trig|rdf|owl|jsonld|gz|bz2|xz|zip|tar)",
    re.IGNORECASE,
)


def _meant_url(value: str, schemes: tuple[str, ...], local: bool) -> str:
    """``; did you mean …?`` for a URL whose scheme is misspelt (``htps://x``, ``http//x``: the
    scheme meant), or missing before a file there is (its ``file:`` URL, where one is taken) or a
    host name (``example.org/a``: ``http(s)://``); else nothing."""
    scheme, colon, rest = value.partition(":")
    if not colon and (dropped := re.fullmatch(r"(https?)//(.+)", value, re.IGNORECASE)):
        scheme, colon, rest = dropped[1], ":", "//" + dropped[2]
    if colon and rest.startswith("/") and scheme.isalpha():
        meant = difflib.get_close_matches(scheme.lower(), schemes, n=1, cutoff=0.6)
        if meant:
            return "; did you mean %s:%s?" % (meant[0], rest)
    if colon and not ("http" in schemes and re.match(r"[0-9]+(/|$)", rest)):  # not host:port
        return ""
    if local and _is_file(value):
        if "file" in schemes:
            return "; did you mean %s?" % Path(os.path.abspath(value)).as_uri()
        return "; that is a file here, not a URL"
    host = value.split("/", 1)[0]
    if "http" in schemes and (colon or (_HOST_LIKE.fullmatch(host) and not _FILE_ENDINGS.fullmatch(host))):
        return "; did you mean http(s)://%s?" % value
    return ""


def _is_file(value: str) -> bool:
    try:
        return Path(value).is_file()
    except OSError:  # a name too long
        return False


def _schemes(schemes: tuple[str, ...]) -> str:
    """``http(s) or file:`` for ``("http", "https", "file")``."""
    names = [s + ":" for s in schemes if s not in ("http", "https")]
    if "http" in schemes and "https" in schemes:
        names.insert(0, "http(s)")
    return " or ".join(names)


class BadSpiderArgument(ValueError):
    """A spider argument the spider does not take, or a value it cannot use: a usage error, said
    before the crawl starts (both crawl commands build the spider first)."""


def url_argument(spider: str, value: str | None, schemes: tuple[str, ...], left_out: str) -> list[str]:
    """The URLs of a spider's ``-a url=`` (comma-separated), each checked by :func:`checked_url`
    before the run: a typo (``htps://``, no scheme) is a usage error, not a failed run. An empty
    value (``-a url=$UNSET``) is one too, never read as the argument left out (``left_out`` says
    what that does)."""
    urls = split_urls(value)
    if value is not None and not urls:
        raise BadSpiderArgument("%s: -a url= is empty; give a URL, or leave it out %s" % (spider, left_out))
    for given in urls:
        checked_url(given, "url", schemes, local=True)
    return urls


def input_file(spider: str, argument: str, value: str) -> Path:
    """The absolute path of the input file a spider argument names (``-a requests=FILE``, relative
    to the folder the command runs from), or :class:`BadSpiderArgument` naming the argument and the
    file when it is absent, a folder or cannot be opened: a usage error before the run, not a run
    that fails. Only a regular file is opened (a pipe's lines are the run's)."""
    path = Path(os.path.abspath(value))
    problem = None
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        problem = "does not exist"
    except (OSError, ValueError) as exc:  # ValueError: a NUL character
        problem = "cannot be read: %s" % (getattr(exc, "strerror", None) or exc)
    else:
        if stat.S_ISDIR(mode):
            problem = "is a folder, not a file"
        elif not readable_kind(mode):
            problem = "is a device or a socket, not a file"
        elif stat.S_ISREG(mode):
            try:
                open(path, "rb").close()
            except OSError as exc:
                problem = "cannot be read: %s" % (exc.strerror or exc)
    if problem:
        raise BadSpiderArgument("%s: -a %s=%s: %s %s" % (spider, argument, value, path, problem))
    return path


def spider_argument_names(spidercls: type) -> set[str]:
    """The spider arguments (``-a NAME=VALUE``) a spider class takes: the keyword parameters of the
    ``__init__`` of each of its classes but Scrapy's own (whose ``**kwargs`` takes anything, as
    attributes no code of the project reads)."""
    names = set()
    for klass in spidercls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass.__module__.split(".")[0] in ("scrapy", "builtins"):
            continue
        names |= {
            p.name
            for p in inspect.signature(init).parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
        }
    return names


def unknown_spider_arguments(spidercls: type, given: dict[str, Any]) -> str | None:
    """The line saying which of the ``given`` spider arguments the spider does not take (a typo,
    ``-a ulr=…``, would otherwise be an attribute nothing reads: the run goes on without it), naming
    the ones it takes; None when it takes them all. ``name`` and scrapyd's ``_job`` are Scrapy's."""
    takes = spider_argument_names(spidercls)
    unknown = sorted(k for k in given if k not in takes and k != "name" and not k.startswith("_"))
    if not unknown:
        return None
    return "%s takes no argument %s; it takes: %s" % (
        getattr(spidercls, "name", spidercls.__name__),
        ", ".join(map(repr, unknown)),
        ", ".join(sorted(takes)),
    )


#: The words of a yes-or-no spider argument (``-a offline=true``).
YES_WORDS = ("1", "true", "yes", "on")
NO_WORDS = ("0", "false", "no", "off")


def one_of(name: str, value: str, allowed: Sequence[str]) -> str:
    """A spider argument with a closed set of values (``-a ingest_type=pdf``): ``value``, or a
    ValueError naming the argument, the values it takes and the one probably meant (a typo would
    otherwise be read as another value or fail the run)."""
    if value in allowed:
        return value
    raise ValueError(
        "%s takes %s, not %s%s" % (name, ", ".join(allowed), shown(value), meant(value, allowed))
    )


def meant(value: str, known: Iterable[str]) -> str:
    """``; did you mean …?`` naming the one of ``known`` closest to ``value`` (in any case), or
    nothing when none is close: the end of the line refusing a mistyped name."""
    folded = {word.lower(): word for word in known if word != value}  # never itself: no typo
    close = difflib.get_close_matches(value.strip().lower(), folded, n=1)
    return "; did you mean %s?" % folded[close[0]] if close else ""


def yes_or_no(name: str, value: str | bool | None) -> bool:
    """A yes-or-no spider argument (``-a offline=true``), False when not given; a word that is
    neither (``-a offline=ture``, which read as "no" and crawled the live source) is a ValueError."""
    if value is None or isinstance(value, bool):
        return bool(value)
    word = value.strip().lower()
    return one_of(name, word if word in YES_WORDS + NO_WORDS else value, YES_WORDS + NO_WORDS) in YES_WORDS


def whole_number(name: str, value: str | int | None, least: int = 0) -> int | None:
    """A whole-number spider argument (``-a year=2020``) of at least ``least``, None when not given."""
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise ValueError("%s is not a whole number: %r" % (name, value)) from None
    if number < least:
        raise ValueError("%s takes a whole number of at least %d, not %d" % (name, least, number))
    return number


def bad_spider_arguments(spidercls: type, kwargs: dict[str, Any]) -> str | None:
    """Why the spider ``spidercls`` cannot start with the spider arguments ``kwargs`` (one it does
    not take, a value it cannot use), or None: the spider is built to find out, as a crawl would
    (without a crawler: a spider's ``__init__`` reads its arguments only)."""
    unknown = unknown_spider_arguments(spidercls, kwargs)
    if unknown:
        return unknown
    try:
        spidercls(**kwargs)
    except BadSpiderArgument as exc:
        return str(exc)
    except (ValueError, TypeError) as exc:
        given = " ".join(
            "-a %s=%s" % (k, v)
            for k, v in sorted(kwargs.items())
            if not k.startswith("_") and (k != "url" or len(v) < 200)  # not scrapyd's -a _job=
        )
        return "%s cannot start with %s: %s" % (
            getattr(spidercls, "name", spidercls.__name__),
            given or "these arguments",
            exc,
        )
    return None
