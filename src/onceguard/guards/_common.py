"""Durations, storage keys and the errors the guards share; no backend imports here."""
from __future__ import annotations

import datetime as _dt
import hashlib
import re
from typing import Union

Seconds = Union[int, float, _dt.timedelta]
#: A duration as the decorators take it: seconds, a timedelta, or text such as ``"90s"``, ``"5m"``, ``"1h"``.
Duration = Union[int, float, _dt.timedelta, str]

#: Keys longer than this (in UTF-8 bytes) are stored as a prefix and a digest: PostgreSQL's btree refuses
#: index entries over about 2.7 kB, and a key that cannot be stored could never be claimed.
_LONGEST_STORED_KEY = 200
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d|w)\s*$")


class BackendError(Exception):
    """The configured backend could not be reached, did not answer in time, or answered with an error."""


class LeaseLost(Exception):
    """The lease expired or was taken over while the work ran: exclusivity was not guaranteed."""


def milliseconds(duration: Duration, what: str = "duration") -> int:
    """A positive duration in whole milliseconds (Redis ``PX`` and the claims table both count them)."""
    if isinstance(duration, _dt.timedelta):
        seconds = duration.total_seconds()
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool):
        seconds = float(duration)
    elif isinstance(duration, str):
        match = _DURATION.match(duration)
        if match is None:
            raise ValueError(f"{what} {duration!r} is not a duration such as '90s', '5m', '1h' or '1d'")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    else:
        raise TypeError(f"{what} must be seconds (int or float), a timedelta or text such as '5m', "
                        f"not {type(duration).__name__}")
    ms = int(round(seconds * 1000))
    if ms <= 0:
        raise ValueError(f"{what} must be positive, got {duration!r}")
    return ms


def storage_key(key: str) -> str:
    """The form of a user's key that both backends can store: itself, or a readable prefix and a digest.

    A key is text without NUL characters (PostgreSQL text cannot hold them); anything else is a
    mistake at the call, not an outage, so it raises instead of skipping the work."""
    if not isinstance(key, str):
        raise TypeError(f"a claim key is text, not {type(key).__name__}")
    if not key:
        raise ValueError("a claim key must not be empty")
    if "\x00" in key:
        raise ValueError("a claim key must not contain NUL characters")
    encoded = key.encode("utf-8", "surrogatepass")
    if len(encoded) <= _LONGEST_STORED_KEY:
        return key
    digest = hashlib.sha256(encoded).hexdigest()
    prefix = encoded[:_LONGEST_STORED_KEY - 80].decode("utf-8", "ignore")
    return f"{prefix}~sha256:{digest}"
