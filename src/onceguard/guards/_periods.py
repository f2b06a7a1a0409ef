"""Periods every replica agrees on: where the one containing an instant starts, where it ends, its name.

Without a timezone a period is aligned to the Unix epoch in UTC, except that periods of whole weeks start
on a Monday (the epoch fell on a Thursday). With a timezone, periods of whole days (and ``"day"``,
``"week"``, ``"month"``) start at local midnight, and shorter periods are counted from local midnight, so a
19:30 America/New_York job keeps one period per local day across daylight-saving changes.
"""
from __future__ import annotations

import datetime as _dt
import time
from typing import NamedTuple, Optional, Union

from ._common import Duration, milliseconds

Instant = Union[int, float, _dt.datetime, None]
Zone = Union[str, _dt.tzinfo, None]
#: A period: a duration, or a calendar period of the timezone ("day", "week", "month").
Period = Duration

_DAY_MS = 86_400_000
_WEEK_MS = 7 * _DAY_MS
_MONDAY_AFTER_EPOCH_MS = 4 * _DAY_MS  # 1970-01-05 was a Monday
_CALENDAR = {"day": 1, "daily": 1, "week": 7, "weekly": 7, "month": 0, "monthly": 0}


class Window(NamedTuple):
    """The period containing an instant: its start and end in epoch milliseconds, and its stable name."""

    start_ms: int
    end_ms: int
    name: str


def epoch_ms(now: Instant) -> int:
    if now is None:
        return int(time.time() * 1000)
    if isinstance(now, _dt.datetime):
        if now.tzinfo is None:
            # A naive datetime means different instants on replicas in different zones: refuse it.
            raise ValueError("now must be timezone-aware (replicas must agree on the period)")
        return int(round(now.timestamp() * 1000))
    return int(round(float(now) * 1000))


def _zone(tz: Zone) -> Optional[_dt.tzinfo]:
    if tz is None or isinstance(tz, _dt.tzinfo):
        return tz
    if isinstance(tz, str):
        from zoneinfo import ZoneInfo

        return ZoneInfo(tz)
    raise TypeError(f"tz must be a zone name or a tzinfo, not {type(tz).__name__}")


def _utc_name(start_ms: int) -> str:
    start = _dt.datetime.fromtimestamp(start_ms / 1000, tz=_dt.timezone.utc)
    if start_ms % 1000:
        return start.strftime("%Y-%m-%dT%H:%M:%S.") + f"{start_ms % 1000:03d}Z"
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")


def _local_midnight(day: _dt.date, zone: _dt.tzinfo) -> _dt.datetime:
    return _dt.datetime(day.year, day.month, day.day, tzinfo=zone)


def _ms(moment: _dt.datetime) -> int:
    return int(round(moment.timestamp() * 1000))


def window(period: Period, now: Instant = None, tz: Zone = None) -> Window:
    """The period of ``period`` that contains ``now`` (default: the current time)."""
    at_ms = epoch_ms(now)
    zone = _zone(tz)
    calendar_days = _CALENDAR.get(period.strip().lower()) if isinstance(period, str) else None
    if calendar_days is None:
        period_ms = milliseconds(period, "period")
    else:
        period_ms = calendar_days * _DAY_MS
    if zone is None:
        if calendar_days == 0:
            zone = _dt.timezone.utc
        else:
            offset = _MONDAY_AFTER_EPOCH_MS if period_ms % _WEEK_MS == 0 else 0
            start_ms = (at_ms - offset) // period_ms * period_ms + offset
            return Window(start_ms, start_ms + period_ms, _utc_name(start_ms))
    local = _dt.datetime.fromtimestamp(at_ms / 1000, tz=zone)
    if calendar_days == 0:  # a calendar month of the zone
        first = local.date().replace(day=1)
        following = (first + _dt.timedelta(days=32)).replace(day=1)
        start, end = _local_midnight(first, zone), _local_midnight(following, zone)
        return Window(_ms(start), _ms(end), start.isoformat())
    if period_ms % _DAY_MS == 0:  # whole local days; weeks from Monday
        days = period_ms // _DAY_MS
        anchor = _dt.date(1970, 1, 5) if days % 7 == 0 else _dt.date(1970, 1, 1)
        first = anchor + _dt.timedelta(days=(local.date() - anchor).days // days * days)
        start = _local_midnight(first, zone)
        end = _local_midnight(first + _dt.timedelta(days=days), zone)
        return Window(_ms(start), _ms(end), start.isoformat())
    # Shorter than a day: counted in real time from local midnight; the last one of a day ends at midnight.
    midnight = _local_midnight(local.date(), zone)
    next_midnight_ms = _ms(_local_midnight(local.date() + _dt.timedelta(days=1), zone))
    midnight_ms = _ms(midnight)
    start_ms = midnight_ms + (at_ms - midnight_ms) // period_ms * period_ms
    end_ms = min(start_ms + period_ms, next_midnight_ms)
    start = _dt.datetime.fromtimestamp(start_ms / 1000, tz=zone)
    return Window(start_ms, end_ms, start.isoformat(timespec="milliseconds" if start_ms % 1000 else "seconds"))


def period_key(prefix: str, period: Period, now: Instant = None, *, tz: Zone = None) -> str:
    """``prefix`` plus the name of the period that contains ``now`` (default: the current time).

    Every replica computes the same key for the same period whatever the moment it woke:
    ``period_key("billing.renew", 300)`` at 06:47:12 UTC is ``"billing.renew:2026-12-01T06:45:00Z"``;
    ``period_key("report", "day", tz="America/New_York")`` is ``"report:2026-03-08T00:00:00-05:00"``.
    """
    return f"{prefix}:{window(period, now, tz).name}"


def claim_ttl_ms(found: Window, at_ms: int) -> int:
    """How long a period's claim must live: to the period's end, plus a margin.

    The margin (one period, at least five minutes) is what keeps a second winner out when an ask that
    belongs to the period by its sender's clock reaches the server after the period's end: call latency
    at the boundary, or replicas whose clocks disagree by seconds. The next period has another key, so a
    longer life costs nothing but memory."""
    length = found.end_ms - found.start_ms
    return max(found.end_ms - at_ms, 1) + max(length, 300_000)
