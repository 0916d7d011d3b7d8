"""Canonical ids on every spider's events, from the recordings the project ships.

How the expected lists were made: by reading each recorded document (votersdaily/recordings/gov/,
the same files as ../shared/fixtures/gov) and writing down every bill, resolution, Public Law, roll
call, nomination, committee and docket it names, in the Congress the document or its date puts it
in; near misses are listed where a document has them ("H. Rept. 119-825" is a report, "Public Law
107-89" a law, "H.R. _____" no number). Each event not listed has no id of that kind. The evidence
of an id (which field, which text) is checked where the tests say. Forms no recording holds (the
Clerk's ``H J RES`` in a roll call, a Senate vote on a joint resolution or a nomination, a roll
call of 2 January) are derived variants of a real recording, each saying what it changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree
from scrapy.http import HtmlResponse, TextResponse, XmlResponse

from tests.conftest import recording
from tests.spiders.gov_support import parse
from votersdaily.recordings import recording_path
from votersdaily.schema import ID_FORMS
from votersdaily.sources.canonical_ids import (
    EVIDENCE,
    bills_in_designation,
    named_in_text,
    nominations_in_text,
)
from votersdaily.spiders.base import EventSpider
from votersdaily.spiders.federal_register import FederalRegisterSpider
from votersdaily.spiders.house_committee_meetings import HouseCommitteeMeetingsSpider
from votersdaily.spiders.house_floor import HouseFloorSpider
from votersdaily.spiders.house_floor_schedule import HouseFloorScheduleSpider
from votersdaily.spiders.house_votes import HouseVotesSpider
from votersdaily.spiders.senate_committee_hearings import SenateCommitteeHearingsSpider
from votersdaily.spiders.senate_floor_schedule import SenateFloorScheduleSpider
from votersdaily.spiders.senate_votes import SenateVotesSpider
from votersdaily.spiders.supreme_court_arguments import SupremeCourtArgumentsSpider
from votersdaily.spiders.supreme_court_opinions import SupremeCourtOpinionsSpider
from votersdaily.spiders.supreme_court_orders import SupremeCourtOrdersSpider
from votersdaily.spiders.white_house import WhiteHouseSpider

RESPONSES = {".xml": XmlResponse, ".html": HtmlResponse, ".json": TextResponse}


def recorded_events(cls: type[EventSpider], only: str | None = None) -> list[dict]:
    """The events of the spider's recordings (or of the one named ``only``), through the pipelines."""
    events = []
    for name, upstream in cls.recordings.items():
        if only is not None and not name.endswith(only):
            continue
        path = recording_path(name)
        events += parse(cls, path, path.resolve().as_uri(), RESPONSES[path.suffix], upstream=upstream).events
    return [dict(e) for e in events]


def derived_events(cls: type[EventSpider], name: str, body: bytes) -> list[dict]:
    upstream = cls.recordings[name]
    return [dict(e) for e in parse(cls, body, upstream, RESPONSES[Path(name).suffix]).events]


def ids_by_key(events: list[dict], *keys: str) -> dict[str, tuple]:
    """unique_key → the ids of ``keys``, for the events that have any."""
    out = {}
    for event in events:
        values = tuple(event[k] for k in keys)
        if any(values):
            out[event["unique_key"]] = values if len(keys) > 1 else values[0]
    return out


def evidence(event: dict, some_id: str) -> tuple[str, str]:
    (found,) = [e for e in event[EVIDENCE] if e["id"] == some_id]
    return found["field"], found["text"]


def check_every_id(events: list[dict], keys: tuple[str, ...]) -> None:
    """Every spider's events carry its id keys (lists, [] when none), in the contract's forms, and
    every id has its evidence: a field and a text that is in the event's source_text."""
    for event in events:
        listed = {(e["key"], e["id"]) for e in event[EVIDENCE]}
        for key in keys:
            assert isinstance(event[key], list), (key, event["unique_key"])
            assert all(ID_FORMS[key].fullmatch(i) for i in event[key])
            assert {(key, i) for i in event[key]} <= listed
        for found in event[EVIDENCE]:
            assert found["field"] and found["text"]
            words = found["text"].split()
            assert all(word.replace("&", "&amp;") in event["source_text"] for word in words), found


# -- House floor summary -------------------------------------------------------------------------

#: By reading the three files: the bills each floor action names (its action_item, its links, its
#: text) and the roll calls it cites; every other action names none.
FLOOR = {
    # 20261001.xml: the Clerk's message names five measures the Senate acted on.
    "119-45148": (["s3257-119", "s3258-119", "s240-119", "s283-119", "hr2388-119"], []),
    # 20260902.xml
    "119-42557": (["hres179-119"], []),
    "119-42556": (["hr1114-119"], []),
    "119-42559": (["hr4586-119"], []),
    "119-42550": (["hr1501-119"], []),
    "119-42549": (["hr1501-119"], ["h294-119.2026"]),
    "119-42546": (["hr1501-119"], []),
    "119-42544": (["hjres1-119"], ["h293-119.2026"]),
    "119-42542": (["hjres1-119"], []),
    "119-42548": (["hjres1-119", "hr1501-119"], []),
    "119-42538": (["hr1501-119"], []),
    "119-42537": (["hr1501-119"], []),
    "119-42536": (["hr1501-119"], []),
    "119-42533": (["hr1501-119", "hr9436-119", "hres1490-119", "hr4795-119"], []),
    "119-42532": (["hr1501-119", "hres1499-119"], []),
    "119-42531": (["hjres1-119"], []),
    "119-42529": (["hjres1-119"], []),
    "119-42528": (["hjres1-119"], []),
    "119-42527": (["hjres1-119"], []),
    # 20250103.xml: the 118th Congress's last morning, then the 119th's first day.
    "118-51332": (["hres5-118"], []),  # "Pursuant to section 3(z) of H. Res. 5" at 11:02, the 118th's rules
    "119-9": ([], ["h1-119.2025"]),
    "119-39": ([], ["h2-119.2025"]),
    **{"119-%d" % n: (["hres1-119"], []) for n in (23, 24, 25, 26, 27)},
    **{"119-%d" % n: (["hres2-119"], []) for n in (29, 30, 31)},
    **{"119-%d" % n: (["hres3-119"], []) for n in (32, 33, 34, 35)},
    **{"119-%d" % n: (["hres4-119"], []) for n in (36, 37, 38)},
    **{"119-%d" % n: (["hres5-119"], []) for n in (40, 41, 50, 51, 53, 55, 57, 61)},
    "119-54": (["hres5-119"], ["h3-119.2025"]),
    "119-58": (["hres5-119"], ["h4-119.2025"]),
    "119-60": (["hres5-119"], ["h5-119.2025"]),
    "119-46": (["sconres1-119", "sconres2-119", "sconres3-119"], []),
    **{"119-%d" % n: (["hres6-119"], []) for n in (62, 63, 64)},
    **{"119-%d" % n: (["hconres1-119"], []) for n in (65, 66, 67, 79)},
    **{"119-%d" % n: (["sconres1-119"], []) for n in (68, 69, 70, 86)},
    **{"119-%d" % n: (["sconres2-119"], []) for n in (71, 72, 73)},
    **{"119-%d" % n: (["sconres3-119"], []) for n in (74, 75, 76, 77)},
}


@pytest.fixture(scope="module")
def floor():
    return recorded_events(HouseFloorSpider)


def test_house_floor_bills_and_roll_calls(floor):
    assert ids_by_key(floor, "bill_ids", "vote_ids") == {k: tuple(v) for k, v in FLOOR.items()}
    assert not any(e["public_laws"] for e in floor)
    check_every_id(floor, ("bill_ids", "public_laws", "vote_ids"))


def test_house_floor_evidence(floor):
    events = {e["unique_key"]: e for e in floor}
    # The measure under consideration, named only in action_item ("Motion to reconsider laid on the table").
    assert evidence(events["119-42550"], "hr1501-119") == ("action_item", "H.R. 1501")
    # A bill link states its Congress.
    assert evidence(events["119-45148"], "s3257-119") == (
        ".//action_description//a[@rel='bill']",
        "https://www.congress.gov/bill/119th-congress/senate-bill/3257",
    )
    # Text without a link: "pursuant to H. Con. Res. 1, clause 12 of rule I".
    assert evidence(events["119-79"], "hconres1-119") == ("action_description", "H. Con. Res. 1")
    # Before noon on 3 January 2025 the 118th Congress sat: its H. Res. 5, not the 119th's.
    assert evidence(events["118-51332"], "hres5-118") == ("action_description", "H. Res. 5")
    assert evidence(events["119-60"], "h5-119.2025") == ("action_description", "Roll no. 5")


def test_house_floor_roll_calls_agree_with_the_clerks_links(floor):
    """The vote links (``vote.asp?year=2025&rollnumber=5``) give the same roll and session year."""
    for event in floor:
        cited = {"h%d-%d.%d" % (v["roll_call"], event["congress"], v["year"]) for v in event["votes"]}
        assert cited == set(event["vote_ids"]), event["unique_key"]


# -- House roll calls ---------------------------------------------------------------------------

ROLL314 = "gov/house_roll_call/roll314.xml"


def test_house_roll_calls():
    events = recorded_events(HouseVotesSpider)
    assert {e["unique_key"]: (e["vote_id"], e["bill_ids"]) for e in events} == {
        "119-2-314": ("h314-119.2026", ["s2403-119"]),  # <legis-num>S 2403</legis-num>
        "118-1-37": ("h37-118.2023", ["hr21-118"]),  # an amendment to H R 21: the bill, not amendment 18
        "118-1-2": ("h2-118.2023", []),  # the election of the Speaker names no bill
    }
    by_key = {e["unique_key"]: e for e in events}
    assert evidence(by_key["119-2-314"], "s2403-119") == ("legis-num", "S 2403")
    assert evidence(by_key["118-1-37"], "hr21-118") == ("legis-num", "H R 21")
    assert by_key["118-1-37"]["amendment_num"] == "18" and not by_key["118-1-37"]["public_laws"]
    assert by_key["119-2-314"]["member_votes"][0]["name_id"]  # the Clerk's own (bioguide) id, kept
    check_every_id(events, ("bill_ids", "public_laws"))


def test_a_roll_call_of_2_january_keeps_its_sessions_year():
    """Derived from roll314.xml: cast on 2 January 2027, still the 119th Congress's 2nd session (the
    file says so), so the vote is of the session that began in 2026."""
    body = recording(ROLL314).read_bytes().replace(b"16-Sep-2026", b"2-Jan-2027")
    (event,) = derived_events(HouseVotesSpider, ROLL314, body)
    assert event["datetime"] == "2027-01-03T00:05:00Z" and event["vote_id"] == "h314-119.2026"


def test_the_clerks_joint_resolution_spelling():
    """Derived from roll314.xml: its legis-num in the Clerk's spelling of a joint resolution."""
    body = recording(ROLL314).read_bytes().replace(b"<legis-num>S 2403<", b"<legis-num>H J RES 7<")
    (event,) = derived_events(HouseVotesSpider, ROLL314, body)
    assert event["bill_ids"] == ["hjres7-119"] and evidence(event, "hjres7-119") == ("legis-num", "H J RES 7")


# -- Senate votes and the vote menu ---------------------------------------------------------------

SENATE_VOTE = "gov/senate_vote/senate-vote-108-2-00213.xml"


def test_senate_vote():
    (event,) = recorded_events(SenateVotesSpider)
    assert event["vote_id"] == "s213-108.2004"  # <congress_year>2004</congress_year>
    assert event["bill_ids"] == ["s2986-108"] and event["nomination_ids"] == []
    assert evidence(event, "s2986-108") == ("document", "S. 2986")
    assert event["member_votes"][0]["lis_member_id"] == "S213"  # the Senate's own id, kept
    check_every_id([event], ("bill_ids", "nomination_ids", "public_laws"))


def test_a_senate_vote_of_2_january_keeps_its_sessions_year():
    """Derived: the recorded vote moved to 2 January 2005, before the 109th Congress convened; the
    file still says congress 108, session 2, congress_year 2004."""
    body = (
        recording(SENATE_VOTE)
        .read_bytes()
        .replace(b"November 17, 2004,  05:48 PM", b"January 2, 2005,  05:48 PM")
    )
    (event,) = derived_events(SenateVotesSpider, SENATE_VOTE, body)
    assert event["datetime"].startswith("2005-01-02") and event["vote_id"] == "s213-108.2004"


def test_a_senate_vote_on_a_joint_resolution_and_on_a_nomination():
    """Derived: the recorded vote's document made a joint resolution (document_type "S.J.Res."), then
    a partitioned nomination as the 119th Congress's vote menu lists one (PN615-2)."""
    body = recording(SENATE_VOTE).read_bytes()
    joint = body.replace(b"<document_type>S.</document_type>", b"<document_type>S.J.Res.</document_type>")
    (event,) = derived_events(SenateVotesSpider, SENATE_VOTE, joint)
    assert event["bill_ids"] == ["sjres2986-108", "s2986-108"]  # the document, then the question's text
    nomination = body.replace(b"<document_type>S.</document_type>", b"<document_type>PN</document_type>")
    nomination = nomination.replace(b"<document_number>2986<", b"<document_number>615-2<")
    (event,) = derived_events(SenateVotesSpider, SENATE_VOTE, nomination)
    assert event["nomination_ids"] == ["PN615-2-108"] and evidence(event, "PN615-2-108") == (
        "document",
        "PN615-2",
    )


def test_the_vote_menus_issues():
    """senate-vote-menu-119-1.xml is a listing, not events; each vote's issues (an en bloc vote has
    one per matter) and title, read by the finders the Senate votes use, give: four nominations
    (partitioned ones keep their part), the en bloc confirmation of 97 nominations "as provided for
    under the provisions of S. Res. 532", S.J.Res. 82 (issue and title) and S. 5 four times; "Coons
    Amdt. No. 23" and "Cornyn Amdt. No. 14" are amendments to S. 5, no bills."""
    menu = etree.parse(str(recording("gov/senate_vote_menu/senate-vote-menu-119-1.xml"))).getroot()
    congress = int(menu.findtext("congress"))
    found = {}
    for vote in menu.iterfind("votes/vote"):
        ids = []
        for issue in vote.iter("issue"):
            ids += [f.id for f in nominations_in_text(issue.text or "", "issue", congress)]
            ids += [f.id for f in bills_in_designation(issue.text or "", "issue", congress)]
        ids += [
            f.id for f in named_in_text(vote.findtext("title") or "", "title", congress, nominations=True)
        ]
        found[vote.findtext("vote_number")] = ids
    assert len(found) == 10
    assert [found[n] for n in ("00659", "00658", "00657", "00656")] == [
        ["PN373-119"],
        ["PN615-2-119"],
        ["PN12-1-119"],
        ["PN499-11-119"],
    ]
    (en_bloc,) = [ids for ids in found.values() if len(ids) > 2]
    assert len(en_bloc) == 98 and en_bloc[-1] == "sres532-119" and en_bloc[0] == "PN416-9-119"
    assert all(i.startswith("PN") and i.endswith("-119") for i in en_bloc[:-1])
    rest = sorted(tuple(ids) for ids in found.values() if ids and ids[0][0] != "P")
    assert rest == [
        ("s5-119",),
        ("s5-119",),
        ("s5-119", "s5-119"),
        ("s5-119", "s5-119"),
        ("sjres82-119", "sjres82-119"),
    ]


# -- House committee meetings, the weekly floor schedule ------------------------------------------


def test_house_committee_meetings():
    events = recorded_events(HouseCommitteeMeetingsSpider)
    assert ids_by_key(events, "bill_ids", "committee_ids") == {
        # meeting-115955.xml: eight bill documents (legis-num "HR 188"…) and the title's H.R. 1450,
        # which has no document; "H.R. _____" (five bills without numbers yet) names none.
        "115955": (
            [
                "hr188-118",
                "hr934-118",
                "hr2997-118",
                "hr1726-118",
                "hr3522-118",
                "hr3499-118",
                "hr3389-118",
                "hr3396-118",
                "hr1450-118",
            ],
            ["HSII", "HSII10"],
        ),
        # sample_hearing.xml: the Rules Committee on H.R. 4435 and H.R. 4660 of the 113th Congress.
        "102252": (["hr4435-113", "hr4660-113"], ["HSRU"]),
    }
    by_key = {e["unique_key"]: e for e in events}
    assert evidence(by_key["115955"], "hr188-118") == ("meeting-document/legis-num", "HR 188")
    assert evidence(by_key["115955"], "hr1450-118") == ("meeting-title", "H.R. 1450")
    assert evidence(by_key["115955"], "HSII10") == ("committee-name/@id", "II10")
    assert by_key["115955"]["committee_code"] == "II00"  # the feed's code keeps its meaning
    check_every_id(events, ("bill_ids", "public_laws", "committee_ids"))


#: billsthisweek_20260914.xml, item id → the bill of its legis-num, read by eye ("S. 283 ", "S.790 ",
#: "H.J. Res. 210", "H. Con. Res. 93", "Senate amendments to H.R. 5334"); the rule H. Res. 1530 below.
SCHEDULE = {
    "409734": "s283-119",
    "409735": "s759-119",
    "409736": "hr309-119",
    "409737": "hr4931-119",
    "409738": "hr5063-119",
    "409739": "hr6021-119",
    "409740": "hr8121-119",
    "409741": "hr8454-119",
    "409742": "hr741-119",
    "409743": "s240-119",
    "409744": "hr2406-119",
    "409745": "s550-119",
    "409746": "hr6893-119",
    "409747": "hr7889-119",
    "409748": "hr8658-119",
    "409749": "s790-119",
    "409792": "hr3276-119",
    "409793": "hr3925-119",
    "409794": "s603-119",
    "409795": "hr4219-119",
    "409750": "hr2317-119",
    "409751": "hr9497-119",
    "409752": "hr9086-119",
    "409753": "hr7730-119",
    "409754": "hr7834-119",
    "409755": "hr9191-119",
    "409756": "hr5109-119",
    "409757": "hr5517-119",
    "409758": "hr7436-119",
    "409759": "hr7443-119",
    "409760": "hr9327-119",
    "409761": "hr9382-119",
    "409762": "hr9394-119",
    "409763": "hr9496-119",
    "409764": "hr9498-119",
    "409765": "hr9501-119",
    "409766": "hr9499-119",
    "409767": "hr9360-119",
    "409768": "hr9342-119",
    "409769": "hr10204-119",
    "409770": "s766-119",
    "409771": "hr7365-119",
    "409772": "hr9570-119",
    "409773": "hr6006-119",
    "409774": "hr2978-119",
    "409775": "hr8278-119",
    "409790": "hr10167-119",
    "409776": "hr10159-119",
    "409777": "s195-119",
    "409778": "s2398-119",
    "409779": "hr979-119",
    "409780": "hr6633-119",
    "409781": "hr9332-119",
    "409782": "hr9339-119",
    "409783": "hr9616-119",
    "409784": "hr9617-119",
    "409785": "hr9615-119",
    "409786": "hr2140-119",
    "409787": "hr1266-119",
    "409788": "hr2004-119",
    "409789": "hr8005-119",
    "409791": "hr2846-119",
    "409799": "s2403-119",
    "409800": "hr8775-119",
    "409801": "hr9723-119",
    "409802": "hr7890-119",
    "409803": "hr4646-119",
    "409806": "hr9340-119",
    "409807": "hr9500-119",
    "409808": "hr8193-119",
    "409809": "hr1342-119",
    "409796": "hjres210-119",
    "409797": "hjres213-119",
    "409798": "hr9576-119",
    "409805": "hr10326-119",
    "409810": "hr5334-119",
    "409811": "hconres93-119",
}


def test_house_floor_schedule():
    events = recorded_events(HouseFloorScheduleSpider)
    expected = {item: [bill] for item, bill in SCHEDULE.items()}
    # The rule provides for H.R. 9576, H.R. 10326, H.J. Res. 210 and 213 and the Senate amendments to
    # H.R. 5334; its subitem "H. Rept. 119-825" is a report, the others' "Rules Committee Print
    # 119-41" a print: no bills.
    expected["409812"] = [
        "hres1530-119",
        "hr9576-119",
        "hr10326-119",
        "hjres210-119",
        "hjres213-119",
        "hr5334-119",
    ]
    assert ids_by_key(events, "bill_ids") == expected
    assert len(expected) == len(events) == 78
    by_key = {e["unique_key"]: e for e in events}
    assert evidence(by_key["409749"], "s790-119") == ("legis-num", "S.790")
    assert evidence(by_key["409812"], "hr9576-119") == ("floor-text", "H.R. 9576")
    assert evidence(by_key["409798"], "hr9576-119") == ("legis-num", "H.R. 9576")
    check_every_id(events, ("bill_ids", "public_laws"))


# -- Senate committee hearings ------------------------------------------------------------------


def test_senate_committee_hearings():
    events = recorded_events(SenateCommitteeHearingsSpider)
    assert ids_by_key(events, "bill_ids", "nomination_ids") == {
        # HELP's business meeting: ten bills (prefix SN) and three nominations, the 937 split off
        # as partition "03"; the matter names the same bills as "S.5038".
        "338684": (
            [
                "s2511-119",
                "s3010-119",
                "s3097-119",
                "s3333-119",
                "s3589-119",
                "s4097-119",
                "s4689-119",
                "s4965-119",
                "s5038-119",
                "s5046-119",
            ],
            ["PN1129-119", "PN932-119", "PN937-3-119"],
        ),
        # Foreign Relations: three nominations (partitions "18", "05", none).
        "338688": ([], ["PN1022-18-119", "PN1098-5-119", "PN874-119"]),
        # Commerce's markup: five bills and the Coast Guard's three nominations.
        "338704": (
            ["s1748-119", "s4199-119", "s4407-119", "s5171-119", "s737-119"],
            ["PN1174-119", "PN1175-119", "PN1176-119"],
        ),
    }
    committees = {e["unique_key"]: e["committee_ids"] for e in events}
    assert committees["338684"] == ["SSHR"] and committees["338698"] == ["SSJU", "SSJU22"]
    assert committees["338692"] == ["JCSE"]
    assert all(c for c in committees.values())  # every meeting has its committee's code
    by_key = {e["unique_key"]: e for e in events}
    assert evidence(by_key["338684"], "s5038-119") == (
        "AssociatedDocument/@document_prefix @document_num",
        "SN 5038",
    )
    assert evidence(by_key["338684"], "PN937-3-119") == (
        "AssociatedDocument/@document_prefix @document_num",
        "PN 937",
    )
    assert evidence(by_key["338698"], "SSJU22") == ("cmte_code", "SSJU22")
    check_every_id(events, ("bill_ids", "nomination_ids", "public_laws", "committee_ids"))


def test_a_hearing_on_a_resolution():
    """Derived from hearings_2026-07-30_wayback.xml: HELP's first bill (SN 2511) given THOMAS's code of
    a Senate resolution, SE, and Commerce's S.737 its code of a House joint resolution, HJ."""
    name = "gov/senate_hearings/hearings_2026-07-30_wayback.xml"
    body = recording(name).read_bytes()
    body = body.replace(
        b'document_num="2511" document_prefix="SN"', b'document_num="2511" document_prefix="SE"'
    )
    body = body.replace(
        b'document_num="737" document_prefix="SN"', b'document_num="737" document_prefix="HJ"'
    )
    events = {e["unique_key"]: e for e in derived_events(SenateCommitteeHearingsSpider, name, body)}
    assert events["338684"]["bill_ids"][0] == "sres2511-119"
    assert evidence(events["338684"], "sres2511-119") == (
        "AssociatedDocument/@document_prefix @document_num",
        "SE 2511",
    )
    # The matter still says "S.737": both the document's resolution and the matter's bill are named.
    assert {"hjres737-119", "s737-119"} <= set(events["338704"]["bill_ids"])


# -- White House, Federal Register, Senate floor schedule --------------------------------------------


def test_white_house():
    events = recorded_events(WhiteHouseSpider)
    # Three proclamations cite a Public Law in their text; no post names a bill by its number or a
    # nomination by its Senate number ("Nominations Sent to the Senate" lists names); "(49 Stat.
    # 1895 as amended)" and "Joint Resolution 115 of June 23, 1936" in the Gold Star proclamation
    # name no id.
    assert ids_by_key(events, "public_laws") == {
        "49961": ["107-89"],
        "49783": ["67-51"],
        "49151": ["103-465"],
    }
    assert not any(e["bill_ids"] or e["nomination_ids"] for e in events)
    by_key = {e["unique_key"]: e for e in events}
    assert evidence(by_key["49961"], "107-89") == ("content:encoded", "Public Law 107-89")
    check_every_id(events, ("bill_ids", "public_laws", "nomination_ids"))


def test_federal_register_and_senate_floor_schedule_name_no_ids():
    """Thirty Federal Register documents: no title or abstract names a bill or a law by number. The
    Senate's convening times name nothing and carry no id keys."""
    events = recorded_events(FederalRegisterSpider)
    assert len(events) == 30 and not any(e["bill_ids"] or e["public_laws"] for e in events)
    check_every_id(events, ("bill_ids", "public_laws"))
    for event in recorded_events(SenateFloorScheduleSpider):
        assert not set(event) & set(ID_FORMS)


# -- Supreme Court ------------------------------------------------------------------------------


def test_supreme_court_dockets():
    arguments = recorded_events(SupremeCourtArgumentsSpider)
    assert {e["unique_key"]: e["dockets"] for e in arguments} == {
        "16-285": ["16-285"],
        "15-1498rearg": ["15-1498"],  # a reargument's page; the case's docket
        "16-1161": ["16-1161"],
        "15-1204rearg": ["15-1204"],
        "15-1485": ["15-1485"],
        "16-424": ["16-424"],
    }
    slip = recorded_events(SupremeCourtOpinionsSpider)
    assert len(slip) == 58
    originals = {e["case_name"]: e["dockets"] for e in slip if "Orig" in e["docket"]}
    assert originals == {"New York v. New Jersey": ["22O156"], "Delaware v. Pennsylvania": ["22O145"]}
    assert all(e["dockets"] == [e["docket"]] for e in slip if "Orig" not in e["docket"])
    orders = recorded_events(SupremeCourtOrdersSpider)
    relating = {
        e["unique_key"]: e["dockets"] for e in orders if e["order_type"] == "Opinion Relating to Orders"
    }
    assert relating == {
        "24-5191_6479.pdf": ["24-5191"],
        "25a319_i4dj.pdf": ["25A319"],
        "25a457new_j426.pdf": ["25A457"],
        "25a378_0pm1.pdf": ["25A378"],
        "24-826_10n2.pdf": ["24-826"],
        "24-1180_dc8f.pdf": ["24-1180"],
        "25-89_8n5a.pdf": ["25-89"],
    }
    # An order list names its cases only in its PDF.
    assert all(e["dockets"] == [] for e in orders if e["order_type"] != "Opinion Relating to Orders")
    by_name = {e["case_name"]: e for e in slip}
    assert evidence(by_name["New York v. New Jersey"], "22O156") == ("Docket", "156, Orig.")
    for events in (arguments, slip, orders):
        check_every_id(events, ("dockets",))


#: The docket cells of the Court's listings of earlier terms (tests/fixtures/supreme_court/, with the
#: shipped ones: tests/spiders/supreme_court_pages.py) that are more than one docket, read by eye;
#: every other cell is one docket as the Court writes it ("11-1175", "13A1003").
DOCKET_CELLS = {
    "141, Orig.": ["22O141"],  # slip_2017.html: Texas v. New Mexico
    "137, Orig": ["22O137"],  # slip_2017.html, no full stop
    "156, Orig.": ["22O156"],
    "145, Orig.": ["22O145"],
    "137-Orig": ["22O137"],  # audio_2010_2013.html
    "126-Orig": ["22O126"],  # audio_2014.html
    "20A34(1)": ["20A34"],  # relating_2020.html: the first opinion on the application
    "13A1003 (13-854)": ["13A1003", "13-854"],  # chambers_2013.html: an application and its petition
    "10-1491 (Reargued)": ["10-1491"],  # audio_2010_2013.html
    "11-398-Monday": ["11-398"],  # audio_2010_2013.html: the health-care case, argued three days
    "11-398-Tuesday": ["11-398"],
}


def test_every_supreme_court_listing_names_its_dockets():
    from tests.spiders.supreme_court_pages import PAGES

    seen = set()
    for page in PAGES:
        for event in parse(page.spider, page.path, page.url, HtmlResponse).events:
            cell = event["docket"]
            expected = DOCKET_CELLS.get(cell, [cell])
            assert event["dockets"] == expected, (page.name, cell)
            assert all(ID_FORMS["dockets"].fullmatch(d) for d in expected), (page.name, cell)
            seen.add(cell)
    assert set(DOCKET_CELLS) <= seen


def test_an_original_action_in_the_argument_listing():
    """Derived from the 2017 argument listing: its first case's link text made an original action as
    the listings write one ("141-Orig", Texas v. New Mexico's number)."""
    name = "gov/supreme_court/scotus_oral_args_example.html"
    body = recording(name).read_bytes()
    assert body.count(b">16-285<") == 1
    (first, *_) = derived_events(SupremeCourtArgumentsSpider, name, body.replace(b">16-285<", b">141-Orig<"))
    assert first["docket"] == "141-Orig" and first["dockets"] == ["22O141"]
