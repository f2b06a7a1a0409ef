"""The period of a scheduler's trigger, in seconds, as the registration writes it.

``schedule.every().hour``, ``IntervalTrigger(minutes=5)``, ``crontab(minute="*/5")``, ``"0 7 * * mon"``: the
seconds between runs, which a per-period claim is sized by and a run's time limit is compared with.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Sequence

_INTERVAL_UNITS: Dict[str, int] = {"weeks": 604800, "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
# Cron levels from fine to coarse; every field coarser than an hour counts as "the day".
_SECOND, _MINUTE, _HOUR, _DAY = range(4)
_LEVEL_SECONDS = (1, 60, 3600, 86400)
_CRON_LEVEL = {"second": _SECOND, "minute": _MINUTE, "hour": _HOUR, "day": _DAY, "day_of_week": _DAY,
               "weekday": _DAY, "day_of_month": _DAY, "month": _DAY, "month_of_year": _DAY, "week": _DAY,
               "year": _DAY}
# ``schedule``: every(n).<unit>
_SCHEDULE_UNITS: Dict[str, int] = {
    "second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400,
    "days": 86400, "week": 604800, "weeks": 604800, "monday": 604800, "tuesday": 604800,
    "wednesday": 604800, "thursday": 604800, "friday": 604800, "saturday": 604800, "sunday": 604800,
}
_EVERY_TEXT = re.compile(r"^every\s+(\d+)\s+(second|minute|hour|day|week)s?\s*$")
_NAMED_PERIODS = {"minutely": 60, "hourly": 3600, "daily": 86400, "weekly": 604800}
_SINGLE = re.compile(r"^\d+$|^[a-z]{3}$")
_STEP = re.compile(r"^(?:\*|\d+-\d+|0)/(\d+)$")


def trigger_period(trigger: Optional[ast.AST], call: Optional[ast.AST], apscheduler: bool) -> Optional[int]:
    """Seconds between runs as written at the registration; None when the code does not show them.

    For a cron schedule this is the longest epoch-aligned period that holds at most one firing (a daily
    job → 86400, ``minute="*/5"`` → 300), which is what a per-period claim needs. ``apscheduler``: its cron
    fields finer than the finest one given default to their minimum, not to ``*`` as in crontab."""
    for node in (trigger, call):
        period = _period_of(node, apscheduler) if node is not None else None
        if period:
            return period
    return None


def _number(node: ast.AST) -> Optional[float]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _whole(seconds: float) -> Optional[int]:
    return int(seconds) if seconds >= 1 and seconds == int(seconds) else None


def _callee_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _period_of(node: ast.AST, apscheduler: bool) -> Optional[int]:
    number = _number(node)
    if number is not None:  # Celery beat: "schedule": 300.0
        return _whole(number)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _text_period(node.value)
    if isinstance(node, ast.Attribute):  # schedule.every(17).minutes, as @schedule.repeat takes it
        return _schedule_chain(node)
    if not isinstance(node, ast.Call):
        return None
    name = _callee_name(node)
    if name == "repeat" and node.args:  # @schedule.repeat(schedule.every(...).unit)
        return _period_of(node.args[0], apscheduler)
    if name == "from_crontab" and node.args and isinstance(node.args[0], ast.Constant):
        text = node.args[0].value
        return _crontab_text(text) if isinstance(text, str) else None
    if name == "do" and isinstance(node.func, ast.Attribute):  # schedule.every(n).minutes.do(job)
        return _schedule_chain(node.func.value)
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if any(k is None for k in (k.arg for k in node.keywords)):
        return None  # **options: the schedule is not all visible
    interval = {k: v for k, v in keywords.items() if k in _INTERVAL_UNITS}
    if interval:
        total = 0.0
        for key, value in interval.items():
            amount = _number(value)
            if amount is None:
                return None
            total += amount * _INTERVAL_UNITS[key]
        return _whole(total)
    if "interval" in keywords and _number(keywords["interval"]) is not None:  # rq-scheduler
        return _whole(_number(keywords["interval"]))  # type: ignore[arg-type]
    for argument in node.args:
        if isinstance(argument, ast.Call) and _callee_name(argument) in ("timedelta", "crontab", "CronTrigger",
                                                                       "IntervalTrigger"):
            return _period_of(argument, apscheduler)
        seconds = _number(argument)
        if seconds is not None:  # Celery add_periodic_task(300.0, task)
            return _whole(seconds)
    fields = {k: v for k, v in keywords.items() if k in _CRON_LEVEL}
    if fields:
        return _cron_fields(fields, apscheduler)
    if name == "crontab" and not node.args:  # huey / Celery crontab(): every minute
        return 60
    return None


def _text_period(text: str) -> Optional[int]:
    text = " ".join(text.strip().lower().split())
    match = _EVERY_TEXT.match(text)
    if match:
        return int(match.group(1)) * _SCHEDULE_UNITS[match.group(2)] or None
    first = text.split(" ", 1)[0] if text else ""
    if first in _NAMED_PERIODS:
        return _NAMED_PERIODS[first]
    if len(text.split()) == 5:
        return _crontab_text(text)
    return None


def _crontab_text(text: str) -> Optional[int]:
    parts = text.split()
    if len(parts) != 5:
        return None
    minute, hour, day, month, weekday = parts
    coarse = None if (day, month, weekday) == ("*", "*", "*") else "set"
    return _cron_period([None, minute, hour, coarse])


def _field_text(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, str)) and not isinstance(node.value, bool):
        return str(node.value).strip().lower()
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):  # arq: minute={0, 30}
        if node.elts and all(isinstance(e, ast.Constant) for e in node.elts):
            return ",".join(str(e.value) for e in node.elts)  # type: ignore[attr-defined]
    return None


def _cron_fields(fields: Dict[str, ast.AST], apscheduler: bool) -> Optional[int]:
    specs: List[Optional[str]] = [None, None, None, None]
    for key, value in fields.items():
        text = _field_text(value)
        if text is None:
            return None
        level = _CRON_LEVEL[key]
        specs[level] = "set" if level == _DAY else text
    if not apscheduler:
        # crontab, huey, Celery, arq: a field left out means every value (seconds are not a field there)
        specs[_MINUTE] = specs[_MINUTE] or "*"
        specs[_HOUR] = specs[_HOUR] or "*"
    return _cron_period(specs)


def _cron_period(specs: Sequence[Optional[str]]) -> Optional[int]:
    level = next((i for i, spec in enumerate(specs) if spec is not None), None)
    if level is None:
        return None
    while level < _DAY:
        spec = specs[level]
        assert spec is not None
        if _SINGLE.match(spec):  # once per unit of the next level up
            level += 1
            above = specs[level]
            if level < _DAY and (above is None or above == "*"):
                return _LEVEL_SECONDS[level]
            continue
        step = 1 if spec == "*" else None
        match = _STEP.match(spec)
        if match:
            step = int(match.group(1))
        span = _LEVEL_SECONDS[level + 1] // _LEVEL_SECONDS[level]
        if step and span % step == 0:
            return step * _LEVEL_SECONDS[level]
        return _LEVEL_SECONDS[level]  # a list or range: at most once per unit
    return _LEVEL_SECONDS[_DAY]


def _schedule_chain(node: Optional[ast.AST]) -> Optional[int]:
    """``every(n).<unit>[.at(...)]``, read from its last link back to ``every``."""
    unit = None
    count = 1.0
    found_every = False
    while node is not None:
        if isinstance(node, ast.Attribute):
            if node.attr in _SCHEDULE_UNITS and unit is None:
                unit = _SCHEDULE_UNITS[node.attr]
            elif node.attr == "to":
                return None  # a random interval
            node = node.value
        elif isinstance(node, ast.Call):
            if _callee_name(node) == "every":
                found_every = True
                if node.args:
                    amount = _number(node.args[0])
                    if amount is None:
                        return None
                    count = amount
                break
            node = node.func
        else:
            break
    return _whole(count * unit) if unit and found_every else None
