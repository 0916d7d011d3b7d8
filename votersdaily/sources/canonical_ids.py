"""Canonical ids of what an event is about, each with the evidence that named it.

The ids are the civic-data world's (unitedstates/congress): bills and resolutions ``hr1234-119``
(types ``hr hres hjres hconres s sres sjres sconres``), Public Laws ``119-21``, roll calls
``h314-119.2026`` (chamber, roll number, Congress, the year its session began), nominations
``PN123-119`` (a partition the Senate split off: ``PN615-2-119``), committees as
congress-legislators names them (``HSII``, ``HSII10``, ``SSJU22``) and Supreme Court dockets as the
Court's docket writes them (``24-123``, applications ``23A456``, original actions ``22O141``). The
forms are :data:`votersdaily.schema.ID_FORMS`.

Every finder is a pure function returning :class:`FoundId` records: the id, the event key it goes
under, the source field that gave it and the exact text there. A number alone is never an id: a
bill needs its designation ("H.R.", "S. Con. Res."), a law its "Public Law", a roll call its "Roll
no.", so "Section 1234", "Rules Committee Print 119-41", "H. Rept. 119-825", "S.Amdt. 23", "49 Stat.
1895" or a Supreme Court citation "600 U. S. 570" name nothing here.

The Congress of a bill comes, best first, from the fragment itself (a congress.gov link, "S. Con.
Res. 1, 119th Congress"), from the source's own congress field, or from the date
(:func:`votersdaily.sources.congress.sitting_on`). Within one event a Congress the source states
outright wins over one taken from the date for the same bill.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from votersdaily.schema import ID_FORMS

#: The event keys of ids, in the order an event lists them.
BILL_IDS, PUBLIC_LAWS, VOTE_IDS, NOMINATION_IDS, DOCKETS, COMMITTEE_IDS = (
    "bill_ids",
    "public_laws",
    "vote_ids",
    "nomination_ids",
    "dockets",
    "committee_ids",
)
#: Where each id of an event was found (a list of :meth:`FoundId.evidence`).
EVIDENCE = "id_evidence"

#: A designation, dots and spaces removed, upper case → the bill type of the id.
BILL_TYPES = {
    "HR": "hr",
    "HRES": "hres",
    "HJRES": "hjres",
    "HCONRES": "hconres",
    "S": "s",
    "SRES": "sres",
    "SJRES": "sjres",
    "SCONRES": "sconres",
}
#: The type as written in running text (the Clerk's and congress.gov's), for labels.
BILL_TYPE_NAMES = {
    "hr": "H.R.",
    "hres": "H.Res.",
    "hjres": "H.J.Res.",
    "hconres": "H.Con.Res.",
    "s": "S.",
    "sres": "S.Res.",
    "sjres": "S.J.Res.",
    "sconres": "S.Con.Res.",
}
#: congress.gov's path segment of each type (``/bill/119th-congress/house-joint-resolution/1``).
CONGRESS_GOV_TYPES = {
    "house-bill": "hr",
    "house-resolution": "hres",
    "house-joint-resolution": "hjres",
    "house-concurrent-resolution": "hconres",
    "senate-bill": "s",
    "senate-resolution": "sres",
    "senate-joint-resolution": "sjres",
    "senate-concurrent-resolution": "sconres",
}
CONGRESS_GOV_PATHS = {bill_type: path for path, bill_type in CONGRESS_GOV_TYPES.items()}
#: The two-letter type codes of THOMAS, which the Senate's committee schedule keeps in
#: ``AssociatedDocument/@document_prefix`` (``SN`` 47 is S. 47); ``PN`` is a nomination.
THOMAS_TYPES = {
    "HR": "hr",
    "HE": "hres",
    "HJ": "hjres",
    "HC": "hconres",
    "SN": "s",
    "SE": "sres",
    "SJ": "sjres",
    "SC": "sconres",
}

#: A designation and its number. Not glued to a word, a dot or an initial before it ("U.S. 1", "U. S.
#: 570": Supreme Court citations), not followed by more digits, a dash and digits (a report, a law) or
#: an ordinal; "S. Con. Res. 1, 119th Congress" states its Congress. A comma straight before three
#: last digits separates thousands ("H.R. 1,234" is hr1234); one with a space after it ends the number
#: ("H.R. 1, 234": a list, or a pin cite as in "577 U. S. 364, 372"). The look-behinds follow the
#: first letter (they look back over it), so the pattern starts with a character set and the regex
#: engine skips to the next H or S instead of testing them at every position (3x faster on a page).
DESIGNATION_RE = re.compile(
    r"""
    (?P<designation>[HS](?<![\w.&'’-][HS])(?<![A-Z]\.\s[HS])(?:\.?\s?(?:Con|CON|Res|RES|J|R))*\.?)
    \s?(?P<number>[1-9][0-9]?,[0-9]{3}(?!,?[0-9])|[1-9][0-9]{0,4})
    (?![0-9]|[-–.][0-9]|\s?(?:st|nd|rd|th)\b)
    (?:(?:,\s?|\s\(|\s(?:of\s)?(?:the\s)?)(?P<congress>[1-9][0-9]{0,2})(?:st|nd|rd|th)\sCongress)?
    """,
    re.VERBOSE,
)
#: Public Laws and nominations start with a literal for the same reason.
PUBLIC_LAW_RE = re.compile(
    r"P(?<![\w.]P)(?:ublic\s+Laws?|ub\.\s?L\.|\.\s?L\.)(?:\s+No\.)?\s?"
    r"(?P<congress>[1-9][0-9]{0,2})[-–](?P<number>[1-9][0-9]{0,3})(?![0-9])"
)
NOMINATION_RE = re.compile(r"PN(?<![\w-]PN)\s?(?P<number>[1-9][0-9]{0,4})(?:-(?P<part>[0-9]{1,3}))?(?![0-9])")
#: "(Roll no. 414)", "Roll call 2 - Election of the Speaker" in the House floor summary.
HOUSE_ROLL_RE = re.compile(r"\bRoll\s*(?:no\.?|call)\s+(?:No\.\s?)?(?P<roll>[1-9][0-9]{0,3})(?![0-9])", re.I)
#: A congress.gov bill page: any host of congress.gov, the Congress, the type, the number, then its end
#: or a sub-page (``/text``), a query or a fragment.
CONGRESS_GOV_BILL_RE = re.compile(
    r"https?://(?:[a-z0-9-]+\.)*congress\.gov/bill/(?P<congress>[1-9][0-9]{0,2})(?:st|nd|rd|th)?(?:-congress)?"
    r"/(?P<type>[a-z-]+)/(?P<number>[1-9][0-9]{0,4})(?=[/?#]|$)",
    re.I,
)
#: A Supreme Court docket as the listings write it: "24-123", "No. 24-123", "23A456", "25a319",
#: "156, Orig.", "141-Orig", and the docket site's own "22O141"; what follows it may be a note
#: ("10-1491 (Reargued)", "20A34(1)", "11-398-Monday": a case argued over three days), not more digits.
DOCKET_RE = re.compile(
    r"""
    (?<![\w-])(?:No\.\s?)?
    (?:
        (?P<term>[0-9]{2})-(?P<number>[0-9]{1,5})
      | (?P<application_term>[0-9]{2})\s?(?P<letter>[AaMm])\s?(?P<application>[0-9]{1,5})
      | (?P<original>[0-9]{1,4}),?\s?-?\s?Orig(?:inal)?\.?
      | 22O(?P<docketed_original>[0-9]{1,4})
    )
    (?!\w|-[0-9])
    """,
    re.VERBOSE | re.IGNORECASE,
)
#: The Court files every original action on its docket site under "22O" and the case's number.
ORIGINAL_PREFIX = "22O"
#: docs.house.gov's committee letters (``II00``, subcommittee ``II10``) → congress-legislators ids.
HOUSE_COMMITTEES = {
    "AG": "HSAG",
    "AP": "HSAP",
    "AS": "HSAS",
    "BA": "HSBA",
    "BU": "HSBU",
    "ED": "HSED",
    "FA": "HSFA",
    "GO": "HSGO",
    "HA": "HSHA",
    "HM": "HSHM",
    "IF": "HSIF",
    "IG": "HLIG",  # the Permanent Select Committee on Intelligence
    "II": "HSII",
    "JU": "HSJU",
    "PW": "HSPW",
    "RU": "HSRU",
    "SM": "HSSM",
    "SO": "HSSO",
    "SY": "HSSY",
    "VR": "HSVR",
    "WM": "HSWM",
}
HOUSE_CODE_RE = re.compile(r"(?P<letters>[A-Z]{2})(?P<sub>[0-9]{2})")
#: The Senate's ``cmte_code`` (``SSJU22``, ``SLIA00``, ``JCSE00``): committee and subcommittee.
SENATE_CODE_RE = re.compile(r"(?P<committee>[SJ][A-Z]{3})(?P<sub>[0-9]{2})")


@dataclass(frozen=True, slots=True)
class FoundId:
    """One id a source names: the event key it goes under, where it was read and what said it."""

    key: str
    id: str
    #: The source field (``legis-num``, ``action_description``) or link (``…/a[@rel='bill']/@href``).
    field: str
    #: The exact text in that field that named it.
    text: str
    #: False when the Congress was taken from the date or the source's congress field, not the text.
    explicit: bool = True

    @property
    def evidence(self) -> dict[str, str]:
        return {"key": self.key, "id": self.id, "field": self.field, "text": self.text}


# -- bills, resolutions and laws -------------------------------------------------------------------


def bill_id(bill_type: str, number: int | str, congress: int) -> str:
    """``hr1234-119``; ``number`` may separate thousands (``"1,234"``)."""
    return "%s%d-%d" % (bill_type, int(str(number).replace(",", "")), congress)


def bill_type_of(designation: str) -> str | None:
    """``"H. J. Res."``, ``"H J RES"``, ``"HJRES"`` → ``"hjres"``; None for what is no bill type."""
    return BILL_TYPES.get(re.sub(r"[.\s]", "", designation).upper())


def _bill(match: re.Match[str], field: str, congress: int | None, *, loose: bool) -> FoundId | None:
    designation = match.group("designation")
    bill_type = bill_type_of(designation)
    if bill_type is None or (bill_type == "s" and "." not in designation and not loose):
        return None  # "S 5" in running text is no bill ("Schedule S 5"); the Clerk's field is
    stated = match.group("congress")
    of_congress = int(stated) if stated else congress
    if of_congress is None:
        return None
    return FoundId(
        BILL_IDS,
        bill_id(bill_type, match.group("number"), of_congress),
        field,
        match.group(0).strip(),
        explicit=stated is not None,
    )


def bills_in_text(text: str, field: str, congress: int | None) -> list[FoundId]:
    """The bills and resolutions running text names, in order; ``congress`` for those that do not
    state theirs (None: only those that do)."""
    found = []
    for match in DESIGNATION_RE.finditer(text or ""):
        bill = _bill(match, field, congress, loose=False)
        if bill is not None:
            found.append(bill)
    return found


def bills_in_designation(text: str, field: str, congress: int | None) -> list[FoundId]:
    """A field that holds a designation (``legis-num``: ``"H R 21"``, ``"S 2403"``, ``"HR 188"``,
    ``"H.J. Res. 210"``): the bill it names; a field with more words ("Senate amendments to H.R.
    5334", "QUORUM") is read as running text."""
    text = " ".join((text or "").split())
    if not text:
        return []
    match = DESIGNATION_RE.fullmatch(text)
    if match is not None:
        bill = _bill(match, field, congress, loose=True)
        return [bill] if bill is not None else []
    return bills_in_text(text, field, congress)


def bill_of_thomas_code(code: str, number: str, field: str, congress: int, text: str) -> FoundId | None:
    """A bill named by its THOMAS type code and number (``SN``, ``5038``), or None for another code."""
    bill_type = THOMAS_TYPES.get((code or "").strip().upper())
    digits = (number or "").strip()
    if bill_type is None or not digits.isdigit() or int(digits) == 0:
        return None
    return FoundId(BILL_IDS, bill_id(bill_type, digits, congress), field, text)


def bill_in_link(href: str, field: str) -> FoundId | None:
    """A congress.gov bill page (``https://www.congress.gov/bill/119th-congress/house-bill/1501``):
    the link states the Congress."""
    href = (href or "").strip()
    match = CONGRESS_GOV_BILL_RE.match(href)
    bill_type = CONGRESS_GOV_TYPES.get(match.group("type")) if match else None
    if match is None or bill_type is None:
        return None
    return FoundId(
        BILL_IDS, bill_id(bill_type, match.group("number"), int(match.group("congress"))), field, href
    )


def public_laws_in_text(text: str, field: str) -> list[FoundId]:
    """ "Public Law 119-21", "Pub. L. No. 119-21", "P.L. 119-21" → ``119-21`` (kept apart from bills)."""
    return [
        FoundId(PUBLIC_LAWS, "%d-%d" % (int(m.group("congress")), int(m.group("number"))), field, m.group(0))
        for m in PUBLIC_LAW_RE.finditer(text or "")
    ]


def bill_id_of(text: str) -> str | None:
    """``text`` as a canonical bill id, in any case (``HR1234-119`` → ``hr1234-119``), or None."""
    value = (text or "").strip().lower()
    return value if ID_FORMS[BILL_IDS].fullmatch(value) else None


def named_in_text(text: str, field: str, congress: int | None, *, nominations: bool = False) -> list[FoundId]:
    """What running text names: its bills and Public Laws, and (Senate and White House text) the
    nominations it cites by number."""
    found = bills_in_text(text, field, congress) + public_laws_in_text(text, field)
    return found + nominations_in_text(text, field, congress) if nominations else found


def bill_label(bill: str) -> str:
    """``s2403-119`` → ``S. 2403 (119th Congress)``."""
    match = re.fullmatch(r"([a-z]+)([0-9]+)-([0-9]+)", bill)
    if match is None or match.group(1) not in BILL_TYPE_NAMES:
        return bill
    return "%s %s (%s Congress)" % (
        BILL_TYPE_NAMES[match.group(1)],
        match.group(2),
        ordinal(int(match.group(3))),
    )


def bill_url(bill: str) -> str | None:
    """The bill's congress.gov page (``s2403-119`` → ``…/bill/119th-congress/senate-bill/2403``)."""
    match = re.fullmatch(r"([a-z]+)([0-9]+)-([0-9]+)", bill)
    path = CONGRESS_GOV_PATHS.get(match.group(1)) if match else None
    if match is None or path is None:
        return None
    return "https://www.congress.gov/bill/%s-congress/%s/%s" % (
        ordinal(int(match.group(3))),
        path,
        match.group(2),
    )


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return "%d%s" % (n, suffix)


# -- roll calls ----------------------------------------------------------------------------------


def vote_id(chamber: str, roll: int, congress: int, session_year: int) -> str:
    """``h314-119.2026``: the year is the one the session began in, as the source's congress and
    session say (a vote cast on 1 or 2 January before the new session keeps the old year)."""
    return "%s%d-%d.%d" % (chamber, roll, congress, session_year)


def house_rolls_in_text(text: str, field: str, congress: int, session_year: int) -> list[FoundId]:
    """The House roll calls a floor action cites ("(Roll no. 414)"), in the action's session."""
    if "oll" not in text and "OLL" not in text:  # most actions cite none: skip the case-blind search
        return []
    return [
        FoundId(VOTE_IDS, vote_id("h", int(m.group("roll")), congress, session_year), field, m.group(0))
        for m in HOUSE_ROLL_RE.finditer(text or "")
    ]


# -- nominations -----------------------------------------------------------------------------------


def nomination_id(number: int | str, congress: int, partition: int | str | None = None) -> str | None:
    """``PN123-119``; a partition (``"03"``, ``2``; ``"0"`` or none: not split) → ``PN937-3-119``."""
    digits = str(number).strip()
    if not digits.isdigit() or int(digits) == 0:
        return None
    part = str(partition).strip() if partition is not None else ""
    if part and not part.isdigit():
        return None
    if part and int(part):
        return "PN%d-%d-%d" % (int(digits), int(part), int(congress))
    return "PN%d-%d" % (int(digits), int(congress))


def nominations_in_text(text: str, field: str, congress: int | None) -> list[FoundId]:
    """ "PN373", "PN615-2" as the Senate writes them, in ``congress``."""
    if congress is None:
        return []
    found = []
    for m in NOMINATION_RE.finditer(text or ""):
        nomination = nomination_id(m.group("number"), congress, m.group("part"))
        if nomination is not None:
            found.append(FoundId(NOMINATION_IDS, nomination, field, m.group(0), explicit=False))
    return found


# -- committees ----------------------------------------------------------------------------------


def house_committee_ids(code: str, field: str) -> list[FoundId]:
    """docs.house.gov ``II00`` → ``HSII``; a subcommittee ``II10`` → ``HSII`` and ``HSII10``; letters
    no House committee has give nothing."""
    match = HOUSE_CODE_RE.fullmatch((code or "").strip())
    committee = HOUSE_COMMITTEES.get(match.group("letters")) if match else None
    if match is None or committee is None:
        return []
    found = [FoundId(COMMITTEE_IDS, committee, field, code.strip())]
    if match.group("sub") != "00":
        found.append(FoundId(COMMITTEE_IDS, committee + match.group("sub"), field, code.strip()))
    return found


def senate_committee_ids(code: str, field: str) -> list[FoundId]:
    """The Senate's ``SSFR00`` → ``SSFR``; a subcommittee ``SSJU22`` → ``SSJU`` and ``SSJU22``."""
    match = SENATE_CODE_RE.fullmatch((code or "").strip())
    if match is None:
        return []
    committee = match.group("committee")
    found = [FoundId(COMMITTEE_IDS, committee, field, code.strip())]
    if match.group("sub") != "00":
        found.append(FoundId(COMMITTEE_IDS, committee + match.group("sub"), field, code.strip()))
    return found


# -- Supreme Court dockets -------------------------------------------------------------------------


def _docket(match: re.Match[str]) -> str:
    if match.group("term"):
        return "%s-%d" % (match.group("term"), int(match.group("number")))
    if match.group("application_term"):
        return "%s%s%d" % (
            match.group("application_term"),
            match.group("letter").upper(),
            int(match.group("application")),
        )
    return "%s%d" % (ORIGINAL_PREFIX, int(match.group("original") or match.group("docketed_original")))


def dockets_in(text: str, field: str) -> list[FoundId]:
    """The dockets a cell or link names, normalised ("No. 141, Orig." → ``22O141``, "25a319" →
    ``25A319``); numbers of no docket form give nothing."""
    found = []
    for match in DOCKET_RE.finditer(text or ""):
        docket = _docket(match)
        if ID_FORMS[DOCKETS].fullmatch(docket):
            found.append(FoundId(DOCKETS, docket, field, match.group(0)))
    return found


def docket_of(text: str) -> str | None:
    """``text`` as one docket in the Court's form, or None when it is not exactly one."""
    found = dockets_in(" ".join((text or "").split()), "")
    return found[0].id if len(found) == 1 and found[0].text.strip() == " ".join(text.split()) else None


def docket_keys(text: str, field: str) -> dict[str, list[Any]]:
    """A Supreme Court event's ``dockets`` (and their evidence) from its docket cell or link."""
    return id_keys(dockets_in(text, field), (DOCKETS,))


def docket_url(docket: str) -> str:
    """The case's page on the Court's docket (``…/docketfiles/html/public/23a456.html``)."""
    return "https://www.supremecourt.gov/docket/docketfiles/html/public/%s.html" % docket.lower()


def docket_label(docket: str) -> str:
    """``22O141`` → ``No. 141, Orig.``; others → ``No. 24-123``."""
    if docket.startswith(ORIGINAL_PREFIX):
        return "No. %s, Orig." % docket[len(ORIGINAL_PREFIX) :]
    return "No. %s" % docket


# -- an event's id keys ----------------------------------------------------------------------------


def id_keys(found: Iterable[FoundId], keys: Iterable[str]) -> dict[str, list[Any]]:
    """The event's id keys: each of ``keys`` (``[]`` when nothing was found), every id once in the
    order found, and :data:`EVIDENCE`, where each id was first named.

    A bill whose Congress came from the date yields to the same bill the event names with its
    Congress stated (a congress.gov link to the 118th Congress's H.R. 5 makes the text's "H.R. 5"
    that bill, not the 119th's)."""
    found = list(found)
    out: dict[str, list[Any]] = {key: [] for key in keys}
    evidence: list[dict[str, str]] = []
    out[EVIDENCE] = evidence
    if not found:  # most records name nothing
        return out
    stated = {_bill_stem(f.id): f.id for f in found if f.key == BILL_IDS and f.explicit}
    seen = set()
    for f in found:
        if f.key == BILL_IDS and not f.explicit and stated.get(_bill_stem(f.id), f.id) != f.id:
            continue
        if (f.key, f.id) in seen:
            continue
        seen.add((f.key, f.id))
        out.setdefault(f.key, []).append(f.id)
        evidence.append(f.evidence)
    return out


def _bill_stem(bill: str) -> str:
    """``hr5-118`` → ``hr5``."""
    return bill.rsplit("-", 1)[0]
