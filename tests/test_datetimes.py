"""Datetime normalisation to ISO 8601 UTC, DST edges of America/New_York included."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from votersdaily.datetimes import localize, normalise, parse_partial_date

NY = "America/New_York"


@pytest.mark.parametrize(
    "value, expected",
    [
        # Eastern daylight time (UTC-4) and standard time (UTC-5).
        (datetime(2026, 9, 16, 19, 5), "2026-09-16T23:05:00Z"),
        (datetime(2026, 1, 26, 17, 23), "2026-01-26T22:23:00Z"),
        # Last minute before spring-forward (EST) and first minute after (EDT).
        (datetime(2026, 3, 8, 1, 59), "2026-03-08T06:59:00Z"),
        (datetime(2026, 3, 8, 3, 0), "2026-03-08T07:00:00Z"),
        # Text in the source's own format, no offset.
        ("16-Sep-2026 19:05", "2026-09-16T23:05:00Z"),
        ("November 17, 2004,  05:48 PM", "2004-11-17T22:48:00Z"),
        # Offsets given by the source are honoured, whatever the source zone.
        ("Wed, 22 Jul 2026 14:37:21 GMT", "2026-07-22T14:37:21Z"),
        ("Tue, 29 Sep 2026 21:23:48 +0000", "2026-09-29T21:23:48Z"),
        ("2026-10-05T16:00:00-04:00", "2026-10-05T20:00:00Z"),
        (
            datetime(2026, 10, 5, 16, 0, 59, 999999, tzinfo=timezone(timedelta(hours=-4))),
            "2026-10-05T20:00:59Z",
        ),
    ],
)
def test_converts_to_utc(value, expected):
    result = normalise(value, NY)
    assert result.iso == expected
    assert not result.all_day and result.dst_note is None


def test_repeated_hour_takes_the_first_occurrence():
    # 2026-11-01 01:30 happens twice in New York: 05:30Z (EDT) then 06:30Z (EST).
    result = normalise(datetime(2026, 11, 1, 1, 30), NY)
    assert result.iso == "2026-11-01T05:30:00Z"
    assert result.dst_note == "ambiguous"


def test_skipped_hour_moves_forward():
    # 2026-03-08 02:30 never happens in New York; the clock jumps from 02:00 EST to 03:00 EDT.
    result = normalise(datetime(2026, 3, 8, 2, 30), NY)
    assert result.iso == "2026-03-08T07:30:00Z"
    assert result.dst_note == "nonexistent"


def test_pytz_is_used_with_localize_not_tzinfo():
    aware, _ = localize(datetime(2026, 7, 1, 12, 0), NY)
    # tzinfo=pytz zone would give the LMT offset -4:56; localize gives EDT.
    assert aware.utcoffset() == timedelta(hours=-4)


@pytest.mark.parametrize("value", [date(2026, 9, 14), "2026-09-14", "September 14, 2026", "09/14/26"])
def test_date_only_is_all_day_on_the_local_date(value):
    result = normalise(value, NY)
    assert result.iso == "2026-09-14T00:00:00Z"
    assert result.all_day


def test_midnight_with_a_time_is_not_all_day():
    result = normalise("2026-09-14 00:00", NY)
    assert result.iso == "2026-09-14T04:00:00Z" and not result.all_day


@pytest.mark.parametrize("value", ["", "   ", "not a date", "31-Feb-2026 10:00"])
def test_garbage_is_a_clear_error(value):
    with pytest.raises(ValueError):
        normalise(value, NY)


def test_unknown_zone_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown IANA time zone"):
        normalise(datetime(2026, 1, 1, 12), "America/Gotham")


@pytest.mark.parametrize("zone", [NY, "Australia/Lord_Howe", "Asia/Kathmandu", "Europe/Dublin"])
def test_to_utc_agrees_with_pytz_at_every_half_hour_of_a_year(zone):
    """The per-hour offset cache against the exact pytz path (whose DST rules the tests above pin),
    transitions (whole- and half-hour) included."""
    from votersdaily import datetimes

    def reference(naive):
        return datetimes._localize_exact(naive, zone)

    datetimes._HOUR_CACHE.clear()
    wall = datetime(2026, 1, 1, 0, 15, 7)
    notes = set()
    while wall.year == 2026:
        expected, note = reference(wall)
        assert datetimes.to_utc(wall, zone) == (expected.astimezone(UTC), note), wall
        aware, aware_note = localize(wall, zone)
        assert (aware, aware.utcoffset(), aware_note) == (expected, expected.utcoffset(), note), wall
        notes.add(note)
        wall += timedelta(minutes=30)
    assert notes >= ({None} if zone == "Asia/Kathmandu" else {None, "ambiguous", "nonexistent"})


# -- a date is never completed with parts its text does not give ------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "2017",  # a year
        "2017-01",  # a year and month
        "2017/01",
        "January 2017",
        "Jan 2017 10:00",
        "26 January",  # a day and month without a year: never this year or any other
        "Jan 26 10:00 AM",
        "Monday",  # a weekday: no date at all
        "5 PM",  # a time: no date at all
    ],
)
def test_a_datetime_text_without_its_whole_date_is_refused(value):
    """dateutil fills what a text lacks from its default (today's date when none is given)."""
    with pytest.raises(ValueError, match=r"gives no (year|month|day)"):
        normalise(value, NY)


@pytest.mark.parametrize(
    "text, iso",
    [
        ("2017", "2017"),
        ("2017/01", "2017-01"),
        ("2017-01", "2017-01"),
        ("January 2017", "2017-01"),
        ("Jan. 2017", "2017-01"),
        ("1/2017", "2017-01"),
        ("Apr 22, 2019", "2019-04-22"),
        ("2019-04-18T10:00:00Z", "2019-04-18"),
    ],
)
def test_partial_dates_keep_their_precision(text, iso):
    partial = parse_partial_date(text)
    assert partial.iso() == iso and partial.year == int(iso[:4])
    assert (partial.to_date() is None) == (len(iso) < 10)


@pytest.mark.parametrize("text", ["26 January", "Jan 26", "Monday", "", "not a date"])
def test_a_partial_date_without_a_year_is_refused(text):
    with pytest.raises(ValueError):
        parse_partial_date(text)


def test_the_day_a_partial_date_is_read_changes_nothing(dateutil_today):
    """The same texts read "on" two different days (dateutil's own clock moved) read the same:
    nothing comes from today."""
    readings = set()
    for today in (datetime(2017, 1, 26, 9, 30), datetime(2031, 12, 31, 23, 59)):
        dateutil_today(today)
        readings.add((parse_partial_date("2017/01").iso(), parse_partial_date("January 2017").iso()))
        with pytest.raises(ValueError):
            normalise("26 January", NY)
    assert readings == {("2017-01", "2017-01")}


def test_a_remembered_normalisation_is_the_one_made_afresh():
    """``normalise`` remembers what it made of a date or a datetime (``datetimes._normalised_value``):
    each value, asked after an equal one was (the same instant in another zone, the same wall time
    with the other ``fold``, a date and the datetime of its midnight), answers what it answers alone:
    the days of 2026, every half hour of the two DST changes in New York (a skipped and a repeated
    hour), aware values in fixed offsets and pytz zones."""
    import itertools
    from datetime import date, datetime, timedelta, timezone

    import pytz

    from votersdaily.datetimes import _normalise, _normalised_value

    _normalised_value.cache_clear()
    values: list = [date(2026, 1, 1) + timedelta(days=n) for n in range(365)]
    values += [datetime.combine(day, datetime.min.time()) for day in values[:60]]  # equal-hash midnights
    for start in (datetime(2026, 3, 8, 0, 0), datetime(2026, 11, 1, 0, 0)):
        for step in range(10):
            wall = start + timedelta(minutes=30 * step)
            values += [wall, wall.replace(fold=1)]
            values += [wall.replace(tzinfo=timezone(timedelta(hours=h))) for h in (-5, -4, 0, 2)]
            values.append(pytz.timezone(NY).localize(wall, is_dst=False))
            values.append(pytz.timezone("Europe/Berlin").localize(wall))
    asked = list(itertools.chain(values, reversed(values)))
    for zone in (NY, "UTC", "Asia/Kolkata"):
        remembered = [normalise(value, zone) for value in asked]
        assert remembered == [_normalise(value, zone) for value in asked], zone
    assert _normalised_value.cache_info().hits > len(values)
    assert normalise(date(2026, 3, 8), NY).all_day and not normalise(datetime(2026, 3, 8), NY).all_day
