import datetime as dt

import pytest

from ep_mcp.retrieval.freshness import (
    Freshness,
    freshness,
    freshness_of,
    parse_date,
    parse_duration_days,
)

TODAY = dt.date(2026, 6, 1)


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("P90D", 90),
        ("P3M", 90),
        ("P1Y", 365),
        ("P2W", 14),
        ("P1Y2M3D", 365 + 60 + 3),
        ("PT36H", 1.5),
        ("30", 30),
        ("", None),
        (None, None),
        ("P", None),
        ("soon", None),
    ],
)
def test_iso_durations_in_days(text: str | None, days: float | None) -> None:
    assert parse_duration_days(text) == (pytest.approx(days) if days is not None else None)


def test_age_in_days_since_verified() -> None:
    f = freshness("2026-05-02", None, None, None, TODAY)
    assert (f.verified_age_days, f.age_stale, f.expired) == (30, False, False)


def test_the_files_refresh_wins_over_the_manifest_cycle() -> None:
    assert freshness("2026-03-01", "P30D", "P1Y", None, TODAY).age_stale
    assert not freshness("2026-03-01", None, "P1Y", None, TODAY).age_stale
    assert freshness("2026-03-01", None, "P90D", None, TODAY).age_stale  # 92 days > 90


def test_exactly_at_the_cycle_is_not_yet_stale() -> None:
    assert not freshness("2026-03-03", None, "P90D", None, TODAY).age_stale  # 90 days


def test_expired_once_expires_at_has_passed() -> None:
    assert freshness(None, None, None, "2026-05-31", TODAY).expired
    assert not freshness(None, None, None, "2026-06-01", TODAY).expired
    assert freshness(None, None, None, "2026-05-31", TODAY).expires_at == "2026-05-31"


def test_missing_or_unreadable_dates_give_no_age() -> None:
    f = freshness("sometime", "P1D", None, "never", TODAY)
    assert (f.verified_age_days, f.age_stale, f.expired) == (None, False, False)


def test_dates_and_datetimes_from_yaml_are_accepted() -> None:
    assert freshness(dt.date(2026, 5, 31), None, None, None, TODAY).verified_age_days == 1
    stamp = dt.datetime(2026, 5, 30, 23, 0)
    assert freshness(stamp, None, None, None, TODAY).verified_age_days == 2


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("P1.5D", 1.5),
        ("PT30M", 30 / 1440),
        ("PT90S", 90 / 86400),
        ("p2w", 14),
        ("  P90D  ", 90),
        ("P1MT12H", 30.5),
        ("PT", None),
        ("P1D2M", None),  # out of order
        ("   ", None),
    ],
)
def test_more_durations(text: str, days: float | None) -> None:
    assert parse_duration_days(text) == (pytest.approx(days) if days is not None else None)


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("2026-05-02T10:00:00Z", dt.date(2026, 5, 2)),
        (" 2026-05-02 ", dt.date(2026, 5, 2)),
        (20260502, None),
        ("  ", None),
        ("2026-13-01", None),
    ],
)
def test_dates_are_read_from_the_first_ten_characters(value: object, day: dt.date | None) -> None:
    assert parse_date(value) == day


def test_an_unreadable_refresh_falls_back_to_the_manifest_cycle() -> None:
    assert freshness("2026-03-01", "soon", "P30D", None, TODAY).age_stale


def test_an_unreadable_expiry_is_shown_as_written_and_never_expires() -> None:
    f = freshness(None, None, None, "never", TODAY)
    assert (f.expired, f.expires_at) == (False, "never")
    assert freshness(None, None, None, None, TODAY).expires_at is None
    shown = freshness(None, None, None, dt.datetime(2026, 7, 1, 12, 0), TODAY).expires_at
    assert shown == "2026-07-01"


def test_freshness_as_json() -> None:
    assert freshness("2026-05-02", None, "P7D", "2026-05-01", TODAY).to_dict() == {
        "verified_age_days": 30,
        "age_stale": True,
        "expired": True,
        "expires_at": "2026-05-01",
    }


def test_freshness_is_judged_once_per_set_of_values_and_kept_apart_by_type() -> None:
    today = dt.date(2026, 6, 1)
    first = freshness_of("2026-01-01", "P30D", None, "2027-01-01", today)
    assert freshness_of("2026-01-01", "P30D", None, "2027-01-01", today) is first
    assert first == freshness("2026-01-01", "P30D", None, "2027-01-01", today)
    # equal as keys, shown differently: never mixed up
    assert freshness_of(None, None, None, 1, today).expires_at == "1"
    assert freshness_of(None, None, None, True, today).expires_at == "True"
    # a value a pack got wrong (a list) is still judged, not a TypeError
    odd = freshness_of(["2026-01-01"], None, None, None, today)
    assert odd == freshness(["2026-01-01"], None, None, None, today)


def test_a_value_that_cannot_be_a_key_leaves_the_others_judged_as_usual() -> None:
    # expires_at a list: judged afresh, and every other value still counts
    by_cycle = freshness_of("2026-05-01", None, "P10D", ["soon"], TODAY)
    assert by_cycle == Freshness(31, True, False, "['soon']")
    by_file = freshness_of("2026-05-01", "P60D", "P10D", ["soon"], TODAY)
    assert by_file == Freshness(31, False, False, "['soon']")
