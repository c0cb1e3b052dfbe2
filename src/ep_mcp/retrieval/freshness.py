"""Freshness fields of a hit (SPEC §4.1): age, past the refresh cycle, expired. "Today" is given."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_DURATION = re.compile(
    r"^P(?:(?P<y>\d+(?:\.\d+)?)Y)?(?:(?P<mo>\d+(?:\.\d+)?)M)?(?:(?P<w>\d+(?:\.\d+)?)W)?"
    r"(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<mi>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)
_DAYS = {"y": 365.0, "mo": 30.0, "w": 7.0, "d": 1.0, "h": 1 / 24, "mi": 1 / 1440, "s": 1 / 86400}


@dataclass(frozen=True)
class Freshness:
    verified_age_days: int | None
    age_stale: bool
    expired: bool
    expires_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verified_age_days": self.verified_age_days,
            "age_stale": self.age_stale,
            "expired": self.expired,
            "expires_at": self.expires_at,
        }


def parse_duration_days(text: str | None) -> float | None:
    """ISO-8601 duration in days (P90D, P3M, P1Y2M, P2W, PT12H); years 365, months 30 days.
    A bare number counts as days. None when absent or unreadable."""
    if text is None:
        return None
    raw = str(text).strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    m = _DURATION.match(raw)
    if not m or raw.upper() in ("P", "PT"):
        return None
    return sum(float(v) * _DAYS[k] for k, v in m.groupdict().items() if v)


def parse_date(text: Any) -> dt.date | None:
    """A date from YAML (date, datetime or ISO string with optional time/zone), else None."""
    if isinstance(text, dt.datetime):
        return text.date()
    if isinstance(text, dt.date):
        return text
    if not isinstance(text, str) or not text.strip():
        return None
    raw = text.strip()
    try:
        return dt.date.fromisoformat(raw[:10])
    except ValueError:
        return None


def freshness(
    verified_at: Any,
    refresh: str | None,
    refresh_cycle: str | None,
    expires_at: Any,
    today: dt.date,
) -> Freshness:
    """Age in whole days since ``verified_at``; stale when older than the file's ``refresh``
    (else the manifest's ``refresh_cycle``); expired once ``expires_at`` is before today."""
    verified = parse_date(verified_at)
    age = (today - verified).days if verified is not None else None
    limit = parse_duration_days(refresh)
    if limit is None:
        limit = parse_duration_days(refresh_cycle)
    stale = age is not None and limit is not None and age > limit
    expiry = parse_date(expires_at)
    expired = expiry is not None and expiry < today
    shown = expiry.isoformat() if expiry is not None else (str(expires_at) if expires_at else None)
    return Freshness(age, stale, expired, shown)


@lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are shown differently
def _remembered(
    verified_at: Any, refresh: Any, refresh_cycle: Any, expires_at: Any, today: dt.date
) -> Freshness:
    return freshness(verified_at, refresh, refresh_cycle, expires_at, today)


def freshness_of(
    verified_at: Any,
    refresh: str | None,
    refresh_cycle: str | None,
    expires_at: Any,
    today: dt.date,
) -> Freshness:
    """``freshness``, computed once per distinct set of values (a query judges a few dozen
    chunks of a few files, the same ones query after query); ``Freshness`` is frozen, so it is
    shared. A value that cannot be a key (a list where a pack should have written a date) is
    judged afresh."""
    try:
        return _remembered(verified_at, refresh, refresh_cycle, expires_at, today)
    except TypeError:  # unhashable
        return freshness(verified_at, refresh, refresh_cycle, expires_at, today)
