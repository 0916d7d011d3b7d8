"""The id finders of votersdaily.sources.canonical_ids, one class of spelling or boundary per test.

The strings are the spellings the sources use (each quoted from a recording where one has it: the
file is named) and the near misses a finder must not take for an id. The spiders' tests
(tests/spiders/test_event_ids.py) check the same finders on whole recorded documents.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from votersdaily.schema import ID_FORMS
from votersdaily.sources.canonical_ids import (
    BILL_IDS,
    DOCKETS,
    EVIDENCE,
    PUBLIC_LAWS,
    FoundId,
    bill_in_link,
    bill_label,
    bill_of_thomas_code,
    bills_in_designation,
    bills_in_text,
    docket_label,
    docket_of,
    dockets_in,
    house_committee_ids,
    house_rolls_in_text,
    id_keys,
    named_in_text,
    nomination_id,
    nominations_in_text,
    public_laws_in_text,
    senate_committee_ids,
    vote_id,
)
from votersdaily.sources.congress import session_year, sitting_on


def ids(found: list[FoundId]) -> list[str]:
    return [f.id for f in found]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("H.R. 1234", "hr1234-119"),  # house_floor_summary/20260902.xml
        ("H R 1234", "hr1234-119"),  # the Clerk's legis-num, house_clerk_index/ROLL_000.asp
        ("HR1234", "hr1234-119"),
        ("HR 188", "hr188-119"),  # house_committee_meeting/meeting-115955.xml legis-num
        ("H. Res. 5", "hres5-119"),  # house_floor_summary/20250103.xml
        ("H.Res. 826", "hres826-119"),
        ("H RES 1142", "hres1142-119"),
        ("HRES1142", "hres1142-119"),
        ("H.J.Res. 7", "hjres7-119"),
        ("H.J. Res. 210", "hjres210-119"),  # house_docs_floor/billsthisweek_20260914.xml
        ("H. J. Res. 76", "hjres76-119"),
        ("H J RES 7", "hjres7-119"),
        ("H. Con. Res. 93", "hconres93-119"),  # billsthisweek_20260914.xml
        ("H CON RES 3", "hconres3-119"),
        ("S. 47", "s47-119"),
        ("S.5038", "s5038-119"),  # senate_hearings/hearings_2026-07-30_wayback.xml matter
        ("S.790", "s790-119"),  # billsthisweek_20260914.xml legis-num
        ("S.Res. 532", "sres532-119"),  # senate_vote_menu/senate-vote-menu-119-1.xml
        ("S. Res. 532", "sres532-119"),
        ("S.J.Res. 82", "sjres82-119"),  # senate-vote-menu-119-1.xml issue
        ("S. J. Res. 82", "sjres82-119"),  # senate-vote-menu-119-1.xml title
        ("S.Con.Res. 3", "sconres3-119"),
        ("S. Con. Res. 3", "sconres3-119"),  # house_floor_summary/20250103.xml
        ("SCONRES3", "sconres3-119"),
        ("H.R.\u00a01234", "hr1234-119"),  # a no-break space
        ("H.R. 12345", "hr12345-119"),
    ],
)
def test_every_spelling_of_a_bill_is_found(text, expected):
    assert ids(bills_in_text("the House considered %s today." % text, "f", 119)) == [expected]
    assert ids(bills_in_designation(text, "f", 119)) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "H.Amdt. 123",
        "S.Amdt. 23",
        "S. Amdt. 23",
        "Coons Amdt. No. 23",  # senate-vote-menu-119-1.xml
        "Tlaib of Michigan Amendment No. 11",  # house_roll_call/clerk-2023-roll037-committee.excerpt.xml
        "the amendment numbered 5 printed in the report",
        "Section 1234",
        "sec. 1234",
        "H.R. Rept. 119-5",
        "H. Rept. 119-825",  # billsthisweek_20260914.xml subitem
        "S. Rept. 119-12",
        "H. Doc. 119-3",
        "S. Hrg. 118-5",
        "S. Prt. 118-2",
        "Rules Committee Print 119-41",  # billsthisweek_20260914.xml subitem
        "Official Transcript 118-30",  # meeting-115955.xml
        "Public Law 119-21",
        "49 Stat. 1895",  # white_house/presidential-actions_feed.xml
        "Joint Resolution 115 of June 23, 1936",  # presidential-actions_feed.xml
        "600 U. S. 570",
        "600 U.S. 570",
        "7 U.S.C. 181",
        "H.R. _____",  # meeting-115955.xml
        "H.R. 123456",
        "S. 5th",
        "S 2403 in running text",
        "Schedule S 5",
        "h.r. 1234",
        "H. 1234",
        "chapter 8 of title 5, United States Code",  # billsthisweek_20260914.xml
        "clause 5(d) of Rule XX",
    ],
)
def test_what_is_no_bill_is_not_found(text):
    assert bills_in_text(text, "f", 119) == []


def test_the_clerks_legis_num_is_a_designation_where_running_text_is_not():
    assert ids(bills_in_designation("S 2403", "legis-num", 119)) == ["s2403-119"]  # roll314.xml
    assert bills_in_text("S 2403", "f", 119) == []
    # A field with more words is read as text; the Clerk's non-bill legis-nums name nothing.
    assert ids(bills_in_designation("Senate amendments to H.R. 5334", "legis-num", 119)) == ["hr5334-119"]
    for word in ("QUORUM", "MOTION", "JOURNAL", "ADJOURN", ""):
        assert bills_in_designation(word, "legis-num", 119) == []


def test_a_stated_congress_wins_over_the_dates():
    (found,) = bills_in_text("pursuant to S. Con. Res. 1, 119th Congress and the order", "f", 118)
    assert (found.id, found.explicit, found.text) == ("sconres1-119", True, "S. Con. Res. 1, 119th Congress")
    assert ids(bills_in_text("H.R. 5 of the 118th Congress", "f", 119)) == ["hr5-118"]
    assert ids(bills_in_text("H.R. 5 (118th Congress)", "f", 119)) == ["hr5-118"]
    (implicit,) = bills_in_text("H.R. 5", "f", 119)
    assert implicit.explicit is False
    assert bills_in_text("H.R. 5", "f", None) == []  # no Congress to give it
    assert ids(bills_in_text("H.R. 5, 118th Congress", "f", None)) == ["hr5-118"]


def test_lists_and_punctuation_around_a_designation():
    text = "Rule provides for consideration of H.R. 1501, H.R. 9436, H. Res. 1490 and H.R. 4795."
    assert ids(bills_in_text(text, "f", 119)) == ["hr1501-119", "hr9436-119", "hres1490-119", "hr4795-119"]
    text = "providing for consideration of the bill (H.R. 9576) to establish"  # billsthisweek
    assert ids(bills_in_text(text, "f", 119)) == ["hr9576-119"]
    assert ids(bills_in_text("—H.R. 4660—Commerce", "f", 113)) == ["hr4660-113"]  # sample_hearing.xml
    assert ids(bills_in_text("• H.R. 934 (Rep. McClintock)", "f", 118)) == ["hr934-118"]


def test_a_comma_before_three_last_digits_separates_thousands():
    """ "H.R. 1,234" was read as hr1. No text recorded here writes a bill number with a separator (a
    grep of /work/shared, tests/fixtures and votersdaily/recordings finds none): the first text is a
    derived variant of billsthisweek's real line above, its numbers written with separators."""
    text = "Rule provides for consideration of H.R. 1,501, H.R. 9,436, H. Res. 1,490 and H.R. 4,795."
    assert ids(bills_in_text(text, "f", 119)) == ["hr1501-119", "hr9436-119", "hres1490-119", "hr4795-119"]
    assert ids(bills_in_text("H.R. 12,345", "f", 119)) == ["hr12345-119"]
    assert ids(bills_in_designation("H.R. 1,234", "legis-num", 119)) == ["hr1234-119"]
    (stated,) = bills_in_text("S. 1,234, 118th Congress", "f", 119)
    assert (stated.id, stated.explicit, stated.text) == ("s1234-118", True, "S. 1,234, 118th Congress")
    # A comma and a space end the number (a list; a pin cite, "577 U. S. 364, 372" in slip_2015.html):
    # never one bill of both numbers' digits. Nor digits that cannot be a bill number's.
    assert ids(bills_in_text("H.R. 1, 234", "f", 119)) == ["hr1-119"]
    for text in ("H.R. 1,234,567", "H.R. 1,2345"):
        assert "hr1234-119" not in ids(bills_in_text(text, "f", 119))


@pytest.mark.parametrize(
    "href, expected",
    [
        ("https://www.congress.gov/bill/119th-congress/house-bill/1501", "hr1501-119"),
        ("https://www.congress.gov/bill/119th-congress/house-resolution/179", "hres179-119"),
        ("https://www.congress.gov/bill/119th-congress/house-joint-resolution/1", "hjres1-119"),
        ("https://www.congress.gov/bill/119th-congress/house-concurrent-resolution/1", "hconres1-119"),
        ("https://www.congress.gov/bill/119th-congress/senate-bill/3257", "s3257-119"),
        ("https://www.congress.gov/bill/119th-congress/senate-resolution/5", "sres5-119"),
        ("https://www.congress.gov/bill/118th-congress/senate-joint-resolution/5/text", "sjres5-118"),
        ("https://www.congress.gov/bill/119th-congress/senate-concurrent-resolution/3", "sconres3-119"),
    ],
)
def test_a_congress_gov_link_states_its_bill_and_congress(href, expected):
    found = bill_in_link(href, "a/@href")
    assert found is not None and (found.id, found.explicit, found.text) == (expected, True, href)


@pytest.mark.parametrize(
    "code, expected",
    [
        ("SN", "s47-119"),
        ("HR", "hr47-119"),
        ("SE", "sres47-119"),
        ("HE", "hres47-119"),
        ("SJ", "sjres47-119"),
        ("HJ", "hjres47-119"),
        ("SC", "sconres47-119"),
        ("HC", "hconres47-119"),
    ],
)
def test_thomas_type_codes_name_bills(code, expected):
    """The Senate committee schedule's ``document_prefix`` (hearings_2026-07-30_wayback.xml: ``SN``)."""
    found = bill_of_thomas_code(code, "47", "f", 119, "%s 47" % code)
    assert found is not None and found.id == expected


def test_other_type_codes_name_no_bill():
    for code, number in (
        ("PN", "47"),
        ("HZ", "5"),
        ("SP", "23"),
        ("SR", "1"),
        ("SN", ""),
        ("SN", "0"),
        ("", "5"),
    ):
        assert bill_of_thomas_code(code, number, "f", 119, "") is None


@pytest.mark.parametrize(
    "href",
    [
        "https://www.congress.gov/amendment/119th-congress/house-amendment/5",
        "https://www.congress.gov/bill/119th-congress/house-report/5",
        "https://evil.example/bill/119th-congress/house-bill/1501",
        "http://beta.congress.gov/113/bills/hr4435/BILLS-113hr4435ih.pdf",  # a text file, not the bill
        "",
    ],
)
def test_other_links_name_no_bill(href):
    assert bill_in_link(href, "a/@href") is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(Public Law 107-89)", "107-89"),  # presidential-actions_feed.xml
        ("Public Law 119-21", "119-21"),
        ("Pub. L. 119-21", "119-21"),
        ("Pub. L. No. 119-21", "119-21"),
        ("Pub.L. 119-21", "119-21"),
        ("P.L. 119-21", "119-21"),
        ("P. L. 119–21", "119-21"),
        ("Public Laws 119-21 and", "119-21"),
    ],
)
def test_public_laws_are_kept_apart_from_bills(text, expected):
    assert ids(public_laws_in_text(text, "f")) == [expected]
    assert bills_in_text(text, "f", 119) == []
    found = named_in_text(text, "f", 119)
    assert [(f.key, f.id) for f in found] == [(PUBLIC_LAWS, expected)]


def test_statutes_and_code_citations_are_no_public_laws():
    for text in ("49 Stat. 1895", "42 Stat. 159,7 U.S.C. 181", "Private Law 119-1", "Rept. 119-825"):
        assert public_laws_in_text(text, "f") == []


def test_nominations_keep_the_senates_partition():
    menu = "PN373 PN615-2 PN12-1 PN499-11"  # senate-vote-menu-119-1.xml issues
    assert ids(nominations_in_text(menu, "issue", 119)) == [
        "PN373-119",
        "PN615-2-119",
        "PN12-1-119",
        "PN499-11-119",
    ]
    # hearings_2026-07-30_wayback.xml: partition="03", "0 " (not split) and absent.
    assert nomination_id("937", 119, "03") == "PN937-3-119"
    assert nomination_id("1129", 119, "0 ") == "PN1129-119"
    assert nomination_id("874", 119) == "PN874-119"
    assert nomination_id("", 119) is None and nomination_id("12a", 119) is None
    assert nominations_in_text("XPN12 SPN5 PN0", "f", 119) == []
    assert nominations_in_text("PN12", "f", None) == []


def test_roll_calls_a_floor_action_cites():
    text = "Agreed to by the Yeas and Nays: 215 - 209 (Roll no. 5). Roll call 2 - Election of the Speaker."
    assert ids(house_rolls_in_text(text, "d", 119, 2025)) == ["h5-119.2025", "h2-119.2025"]
    assert ids(house_rolls_in_text("(Rollcall 17)", "d", 119, 2025)) == ["h17-119.2025"]
    for text in ("Roll Call for Election of Speaker", "Rolls 5", "enrolled bills 5"):
        assert house_rolls_in_text(text, "d", 119, 2025) == []


def test_a_vote_id_carries_the_year_its_session_began():
    assert vote_id("h", 314, 119, session_year(119, 2)) == "h314-119.2026"
    # A vote cast on 2 January 2021 in the 116th Congress's 2nd session is of that session's year.
    assert vote_id("s", 292, 116, session_year(116, 2)) == "s292-116.2020"
    assert ID_FORMS["vote_ids"].fullmatch(vote_id("h", 1, 1, 1789))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("24-123", ["24-123"]),
        ("No. 24-123", ["24-123"]),
        ("24-5191", ["24-5191"]),  # scotus_relating_2025.html
        ("25A319", ["25A319"]),
        ("25a319", ["25A319"]),  # the PDF's file name
        ("22M45", ["22M45"]),
        ("156, Orig.", ["22O156"]),  # scotus_slip_example.html
        ("No. 141, Orig.", ["22O141"]),
        ("141-Orig", ["22O141"]),
        ("141 Original", ["22O141"]),
        ("141-orig", ["22O141"]),
        ("No. 141, ORIG.", ["22O141"]),
        ("22O141", ["22O141"]),
        ("21-1086, 21-1087", ["21-1086", "21-1087"]),
        ("No. 22-451 and 22-1219", ["22-451", "22-1219"]),
        ("15-1498rearg", []),  # the audio page, not the docket
        ("11-398-Monday", ["11-398"]),  # audio_2010_2013.html
        ("20A34(1)", ["20A34"]),  # relating_2020.html
        ("13A1003 (13-854)", ["13A1003", "13-854"]),  # chambers_2013.html
        ("24-123-5", []),
        ("600 U.S. 570", []),
        ("2023", []),
        ("24-0", []),
        ("", []),
    ],
)
def test_dockets_are_normalised_as_the_courts_docket_writes_them(text, expected):
    assert ids(dockets_in(text, "Docket")) == expected
    assert all(ID_FORMS[DOCKETS].fullmatch(d) for d in expected)


def test_one_docket_of_a_user_or_none():
    assert docket_of("23a456") == "23A456" and docket_of(" 24-123 ") == "24-123"
    assert docket_of("No. 141, Orig.") == "22O141"
    assert docket_of("24-123, 24-124") is None and docket_of("hr1-119") is None and docket_of("") is None


def test_committee_codes_become_congress_legislators_ids():
    assert ids(house_committee_ids("II10", "f")) == ["HSII", "HSII10"]  # meeting-115955.xml
    assert ids(house_committee_ids("RU00", "f")) == ["HSRU"]  # sample_hearing.xml
    assert ids(house_committee_ids("IG00", "f")) == ["HLIG"]
    assert house_committee_ids("ZZ00", "f") == [] and house_committee_ids("", "f") == []
    assert ids(senate_committee_ids("SSJU22", "f")) == ["SSJU", "SSJU22"]  # hearings_2026-07-30
    assert ids(senate_committee_ids("JCSE00", "f")) == ["JCSE"]
    assert senate_committee_ids("", "f") == [] and senate_committee_ids("SSJU2", "f") == []
    for found in house_committee_ids("II10", "f") + senate_committee_ids("SSJU22", "f"):
        assert ID_FORMS["committee_ids"].fullmatch(found.id)


def test_an_events_id_keys_list_each_id_once_with_where_it_was_first_named():
    found = [
        *bills_in_designation("H.R. 1501", "action_item", 119),
        *[
            f
            for f in [bill_in_link("https://www.congress.gov/bill/119th-congress/house-bill/1501", "a")]
            if f
        ],
        *named_in_text("of H.R. 1501 and Public Law 119-21", "action_description", 119),
    ]
    keys = id_keys(found, (BILL_IDS, PUBLIC_LAWS, "vote_ids"))
    assert keys[BILL_IDS] == ["hr1501-119"] and keys[PUBLIC_LAWS] == ["119-21"] and keys["vote_ids"] == []
    assert keys[EVIDENCE] == [
        {"key": BILL_IDS, "id": "hr1501-119", "field": "action_item", "text": "H.R. 1501"},
        {"key": PUBLIC_LAWS, "id": "119-21", "field": "action_description", "text": "Public Law 119-21"},
    ]


def test_a_congress_the_event_states_overrules_the_dates_for_the_same_bill():
    link = bill_in_link("https://www.congress.gov/bill/118th-congress/house-bill/5", "a/@href")
    assert link is not None
    keys = id_keys([*bills_in_text("H.R. 5 and H.R. 6", "text", 119), link], (BILL_IDS,))
    assert keys[BILL_IDS] == ["hr6-119", "hr5-118"]
    assert [e["field"] for e in keys[EVIDENCE]] == ["text", "a/@href"]


def test_the_congress_of_a_date_is_the_one_that_has_convened():
    assert sitting_on(datetime(2025, 1, 3, 11, 59)) == (118, 2)
    assert sitting_on(datetime(2025, 1, 3, 12, 0)) == (119, 1)
    assert sitting_on(date(2025, 1, 3)) == (119, 1)  # a date alone: the end of that day
    assert sitting_on(date(2025, 1, 2)) == (118, 2)
    assert sitting_on(date(2026, 1, 2)) == (119, 1)  # the 2nd session begins on 3 January too
    # An aware stamp is read at its Eastern wall time: 16:59Z on 3 January 2025 is 11:59 EST.
    assert sitting_on(datetime(2025, 1, 3, 16, 59, tzinfo=UTC)) == (118, 2)
    assert sitting_on(datetime(2025, 1, 3, 16, 59, tzinfo=timezone(timedelta(hours=-5)))) == (119, 1)


def test_labels_for_people():
    assert bill_label("s2403-119") == "S. 2403 (119th Congress)"
    assert bill_label("hconres1-111") == "H.Con.Res. 1 (111th Congress)"
    assert bill_label("hr5-112") == "H.R. 5 (112th Congress)"
    assert bill_label("hr5-113") == "H.R. 5 (113th Congress)"
    assert docket_label("22O141") == "No. 141, Orig." and docket_label("24-123") == "No. 24-123"
