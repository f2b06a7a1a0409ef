"""OG202 implicit-schedule-timezone: a wall-clock schedule fires by the host's local zone."""
from __future__ import annotations

import ast
from typing import Iterable, Optional

from ...project.container_zones import one_zone_everywhere
from ...project.through_helpers import through_helpers
from ...project.bindings import Bindings
from ...analysis.facts import ModuleFacts, parent
from ...knowledge import schedulers as known
from ...model import Diagnostic
from ...analysis.names import dotted
from ..registry import register
from ..base import Rule
from ...project.scheduled.discovery import Scheduled, scheduled_in
from ...project.scheduled.jobs import _argument, _const, _cron_wall_clock, _fields_wall_clock, _has_splat, _keywords


# ------------------------------------------------------------------------------------------------
# OG202
# ------------------------------------------------------------------------------------------------
def _naive_run_date(value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    if isinstance(_const(value), str):
        return True
    if isinstance(value, ast.Call) and (facts.callee(value) or "") in ("datetime.datetime", "datetime"):
        return len(value.args) < 8 and not any(k.arg == "tzinfo" for k in value.keywords)
    return False


class _Timezones:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.bindings = Bindings.of_module(facts)

    def missing(self, scheduled: Scheduled) -> Optional[str]:
        """A description of the wall-clock schedule that has no zone, or None."""
        family = scheduled.family
        if family in (known.APS3, known.APS4):
            return self._apscheduler(scheduled)
        if family == known.SCHEDULE:
            at = scheduled.trigger
            if isinstance(at, ast.Call) and scheduled.wall_clock and isinstance(_const(at.args[0]), str):
                if len(at.args) > known.SCHEDULE_AT_TZ_POSITION or known.SCHEDULE_AT_TZ_KEYWORD in _keywords(at):
                    return None
                return f'.at("{at.args[0].value}")'
            return None
        if family == known.AIOCRON:
            call = scheduled.call
            if not scheduled.wall_clock or call is None or _has_splat(call):
                return None
            if known.AIOCRON_TZ_KEYWORD in _keywords(call) or len(call.args) > known.AIOCRON_TZ_POSITION:
                return None
            return f'crontab("{scheduled.trigger.value}")'
        if family == known.ARQ:
            return self._arq(scheduled)
        return None

    def _django_process(self) -> bool:
        """Django sets the process's time zone to ``settings.TIME_ZONE`` when it starts (``USE_TZ`` or
        not, on POSIX), so the "local" zone of a scheduler in a Django process is the same on every
        replica."""
        return any(value == "django" or value.startswith(("django.", "django_apscheduler"))
                   for value in self.facts.imports.aliases.values())

    def _apscheduler(self, scheduled: Scheduled) -> Optional[str]:
        call = scheduled.call
        trigger = scheduled.trigger
        if call is None or trigger is None or _has_splat(call):
            return None
        if self._django_process():
            return None
        origin = self.bindings.origin(trigger) if isinstance(trigger, ast.Name) else trigger
        keywords = _keywords(call)
        description = None
        trigger_object = False
        if scheduled.family == known.APS3 and isinstance(_const(origin), str):
            alias = origin.value
            if known.TIMEZONE_KEYWORD in keywords:
                return None
            if alias == "cron" and _fields_wall_clock(call):
                description = "cron trigger"
            elif alias == "calendarinterval":
                description = "calendarinterval trigger"
            elif alias == "date" and _naive_run_date(keywords.get("run_date"), self.facts):
                description = "date trigger"
        elif isinstance(origin, ast.Call):
            # A trigger object keeps its own zone: APScheduler 3 does not pass the scheduler's zone to it
            # (CronTrigger/DateTrigger fall back to the local zone, or to start_date's tzinfo).
            name = self.facts.callee(origin) or ""
            trigger_keywords = _keywords(origin)
            if (known.TIMEZONE_KEYWORD in trigger_keywords or _has_splat(origin)
                    or any(k in trigger_keywords for k in known.TRIGGER_ZONE_CARRIERS)):
                return None
            trigger_object = True
            short = name.rsplit(".", 1)[-1]
            if name in known.APS_CRON_FACTORIES:
                if len(origin.args) > 1 or not (origin.args and isinstance(_const(origin.args[0]), str)):
                    return None
                if _cron_wall_clock(origin.args[0].value):
                    description = f'CronTrigger.from_crontab("{origin.args[0].value}")'
            elif name in known.APS_DATE_CLASSES:
                run = _argument(origin, 0, "run_time" if scheduled.family == known.APS4 else "run_date")
                if _naive_run_date(run, self.facts):
                    description = short
            elif name in known.APS_CRON_CLASSES:
                if "CalendarInterval" in name or _fields_wall_clock(origin, positional_counts=True):
                    description = short
        if description is None:
            return None
        if scheduled.family == known.APS3 and not trigger_object and self._scheduler_zone(scheduled) is not False:
            return None
        return description

    def _scheduler_zone(self, scheduled: Scheduled) -> Optional[bool]:
        """True: the scheduler sets a zone; False: visibly not; None: cannot tell."""
        ctor = scheduled.ctor
        if ctor is None or _has_splat(ctor):
            return None
        if known.TIMEZONE_KEYWORD in _keywords(ctor):
            return True
        for argument in ctor.args:
            if isinstance(argument, ast.Dict):
                if any(_const(k) in known.APS_GCONFIG_TIMEZONE_KEYS for k in argument.keys):
                    return True
            else:
                return None
        for configure in self.facts.calls_by_name.get(known.APS_CONFIGURE_METHOD, ()):
            func = configure.func
            if not isinstance(func, ast.Attribute):
                continue
            if self.bindings.origin(func.value) is not ctor:
                continue
            if configure.args or _has_splat(configure) or known.TIMEZONE_KEYWORD in _keywords(configure):
                return True if known.TIMEZONE_KEYWORD in _keywords(configure) else None
        return False

    def _arq(self, scheduled: Scheduled) -> Optional[str]:
        call = scheduled.call
        if call is None or not scheduled.wall_clock or _has_splat(call):
            return None
        settings = self._arq_settings(call)
        if settings is None:
            return None
        if settings.bases and not all((dotted(b) or "") == "object" for b in settings.bases):
            return None
        for statement in settings.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else (
                [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == known.ARQ_SETTINGS_TIMEZONE for t in targets):
                return None
        fields = ", ".join(f"{k}=..." for k in _keywords(call) if k in known.CRON_WALL_CLOCK_FIELDS)
        return f"cron({fields}) in {settings.name}"

    def _arq_settings(self, call: ast.Call) -> Optional[ast.ClassDef]:
        statement = self.facts.statement_of(call)
        owner = parent(statement)
        if isinstance(owner, ast.ClassDef):
            return owner
        if owner is self.facts.tree and isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            for cls_node in self.facts.classes:
                for item in cls_node.body:
                    if (isinstance(item, ast.Assign) and isinstance(item.value, ast.Name) and item.value.id == name
                            and any(isinstance(t, ast.Name) and t.id == known.ARQ_CRON_JOBS_ATTRIBUTE
                                    for t in item.targets)):
                        return cls_node
        return None


_LOCAL_ZONE = "The local zone differs between machines and shifts with daylight saving."
_TZ_SUGGESTIONS = {
    known.APS3: "Pass `timezone=` to the trigger (e.g. `timezone=\"UTC\"` or your business zone) or create the "
                "scheduler with `{ctor}(timezone=...)`.",
    "aps3-object": "Pass `timezone=` to the trigger itself, e.g. `CronTrigger(hour=7, timezone=\"UTC\")` or "
                   "`CronTrigger.from_crontab(expr, timezone=\"UTC\")`: APScheduler 3 gives a trigger object the "
                   "local zone, not the scheduler's.",
    known.APS4: "Pass `timezone=` to the trigger, e.g. `CronTrigger(hour=7, timezone=\"Europe/Berlin\")` "
                "(APScheduler 4 defaults to the host's local zone).",
    known.SCHEDULE: "Pass the zone as the second argument of `.at()`, e.g. `.at(\"07:00\", \"UTC\")` or your "
                    "business zone.",
    known.AIOCRON: "Pass `tz=` to `aiocron.crontab`, e.g. `tz=zoneinfo.ZoneInfo(\"UTC\")`.",
    known.ARQ: "Set `timezone = datetime.timezone.utc` (or a `zoneinfo.ZoneInfo`) on the worker settings class.",
}


@register
class ImplicitScheduleTimezone(Rule):
    code = "OG202"
    name = "implicit-schedule-timezone"
    summary = "a cron/daily schedule without an explicit timezone fires by the host's local zone"
    triggers = (b"cron", b"Cron", (b".at(", b"every("), b"run_date", b"calendarinterval", b"CalendarInterval",
                b"DateTrigger")
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        facts = through_helpers(facts)  # as ``scheduled_in`` reads it
        zones = None
        for scheduled in scheduled_in(facts):
            if scheduled.family not in _TZ_SUGGESTIONS:
                continue
            if zones is None:
                if facts.context.cross_file and one_zone_everywhere(facts):
                    return  # every replica runs the one image in the one zone: they fire at the same instant
                zones = _Timezones(facts)
            description = zones.missing(scheduled)
            if description is None:
                continue
            name = scheduled.target.label or (scheduled.target.function.name if scheduled.target.function else "the job")
            ctor = "BackgroundScheduler"
            if scheduled.ctor is not None:
                ctor = (dotted(scheduled.ctor.func) or ctor).rsplit(".", 1)[-1]
            message = (f"`{name}` is scheduled with {scheduled.family} {description} and no timezone, so it fires by "
                       "each host's local zone, which replicas need not share.")
            key = scheduled.family
            trigger = scheduled.trigger
            origin = zones.bindings.origin(trigger) if isinstance(trigger, ast.Name) else trigger
            if key == known.APS3 and isinstance(origin, ast.Call):
                key = "aps3-object"
            yield self.finding(scheduled.registration, message,
                               _LOCAL_ZONE + " " + _TZ_SUGGESTIONS[key].format(ctor=ctor))
