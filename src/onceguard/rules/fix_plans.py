"""What a fix will write, decided on the ``ast`` the rules already have (libcst is loaded only to apply it).

A rule that can offer a guard asks here for the :class:`~onceguard.model.Fix` to attach: the statement to
insert travels in the fix's description (between backticks), so JSON, SARIF and the language server show
exactly what ``--fix --unsafe-fixes`` writes, and ``fix_transforms`` parses it back from there.
"""
from __future__ import annotations

import ast
import re
from typing import List, NamedTuple, Optional, Tuple

from ..analysis.facts import statement_list, walk
from ..model import Diagnostic, Fix
from ..project.scheduled.periods import trigger_period

GUARDS_MODULE = "onceguard.guards"
#: How a display-only suggestion names a period it could not read from the trigger.
UNKNOWN_PERIOD = "PERIOD_SECONDS"

# ---------------------------------------------------------------------------------------------------------
# Fixes


def period_guard_call(guard: str, key: str, period: Optional[int], asynchronous: bool,
                      zone: Optional[str] = None, work: bool = False) -> str:
    """A call of a per-period guard (``claim_period``, ``run_once``) as the fix and the help both write it.

    A schedule in a named zone keeps its periods in that zone: a whole day is the zone's calendar day, so a
    daily run at 19:30 New York time stays one run per local day across daylight-saving changes."""
    shown = '"day"' if zone and period == 86_400 else str(period or UNKNOWN_PERIOD)
    zone_argument = f', tz="{zone}"' if zone and period else ""
    return f'{"await a" if asynchronous else ""}{guard}("{key}", {shown}{", work" if work else ""}{zone_argument})'


def claim_statement(key: str, period: Optional[int], asynchronous: bool, zone: Optional[str] = None) -> str:
    return f"if not {period_guard_call('claim_period', key, period, asynchronous, zone)}: return"


def schedule_zone(scheduled: object) -> Optional[str]:
    """The zone name a schedule fires in, when the code spells it: ``timezone="..."`` on the registration,
    on the trigger object or on the scheduler (a literal, ``ZoneInfo("...")``, ``pytz.timezone("...")``, or
    ``datetime.timezone.utc``)."""
    trigger = getattr(scheduled, "trigger", None)
    for call in (getattr(scheduled, "call", None), trigger, getattr(scheduled, "ctor", None)):
        if not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            if keyword.arg == "timezone":
                return _zone_name(keyword.value)
    return None


def _zone_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
        return node.value
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee in ("ZoneInfo", "timezone", "gettz"):
            return _zone_name(node.args[0])
    if isinstance(node, ast.Attribute) and node.attr in ("utc", "UTC"):
        return "UTC"
    return None


def claim_period_fix(key: str, period: Optional[int], asynchronous: bool, zone: Optional[str] = None) -> Fix:
    """OG201: begin the job with a claim for its period; display-only when the period is not visible."""
    statement = claim_statement(key, period, asynchronous, zone)
    name = "aclaim_period" if asynchronous else "claim_period"
    description = f"begin the job with `{statement}` (from {GUARDS_MODULE} import {name})"
    return Fix("insert-claim-period", description, "unsafe" if period else "display-only")


def statement_in(description: str) -> Optional[str]:
    """The code between the first pair of backticks of a fix's description."""
    match = re.search(r"`([^`]+)`", description)
    return match.group(1) if match else None


def statements_in(description: str) -> List[str]:
    """The code between every pair of backticks of a fix's description, in order."""
    return re.findall(r"`([^`]+)`", description)


class JobClaim(NamedTuple):
    """The claim a scheduled job needs, decided once for OG201's fix and its help: the guard's key (the job's
    module and name), the period the trigger shows, the zone a wall-clock schedule fires in, and whether the
    job is a coroutine (the ``await a…`` twin)."""

    key: str
    period: Optional[int]
    asynchronous: bool
    zone: Optional[str]

    def call(self, guard: str = "claim_period", work: bool = False) -> str:
        return period_guard_call(guard, self.key, self.period, self.asynchronous, self.zone, work)

    def statement(self) -> str:
        return claim_statement(self.key, self.period, self.asynchronous, self.zone)

    def exclusive_call(self) -> str:
        """``run_exclusive(key, ttl, work)``: a lease held while the work runs, for a job that may outlast its
        period."""
        return f'{"await a" if self.asynchronous else ""}run_exclusive("{self.key}", ttl, work)'


def job_claim(scheduled: object, function: ast.AST, name: str, facts: object) -> JobClaim:
    from ..project.bindings import own_module_name
    from ..knowledge import schedulers as known

    target = getattr(scheduled, "target", None)
    foreign = getattr(target, "foreign", True)
    family = getattr(scheduled, "family", "")
    apscheduler = family in (known.APS3, known.APS4, known.FLASK_APS)
    period = trigger_period(getattr(scheduled, "trigger", None), getattr(scheduled, "call", None), apscheduler)
    module = own_module_name(getattr(target, "facts", None) or facts)  # type: ignore[arg-type]
    own_name = getattr(function, "name", "")
    short = (own_name if foreign else name) or own_name or name.rsplit(".", 1)[-1]
    key = f"{module}.{short}" if module else short
    zone = schedule_zone(scheduled) if getattr(scheduled, "wall_clock", False) else None
    return JobClaim(key, period, isinstance(function, ast.AsyncFunctionDef), zone)


def offer_claim(diagnostic: Diagnostic, verdict: object, facts: object) -> Diagnostic:
    """OG201's finding with the claim-period fix attached when the job's def is in this file and is what
    the scheduler calls on every tick (a ticker's loop function or a re-arming Timer is not: a claim
    before the loop would stop the ticker; the work a generic ticker is handed is)."""
    from dataclasses import replace

    from ..knowledge import schedulers as known

    scheduled = getattr(verdict, "scheduled", None)
    function = getattr(verdict, "function", None)
    target = getattr(scheduled, "target", None)
    if (scheduled is None or target is None
            or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            or (scheduled.family in (known.ASYNCIO_TICKER, known.THREAD_TICKER, known.TIMER)
                and not getattr(scheduled, "repeater", ""))):
        return diagnostic
    foreign = getattr(target, "foreign", True)
    if not foreign and diagnostic.line != function.lineno:
        return diagnostic
    claim = job_claim(scheduled, function, getattr(verdict, "name", ""), facts)
    fix = claim_period_fix(claim.key, claim.period, claim.asynchronous, claim.zone)
    if foreign:  # the def is in another file: this finding is at the registration, so show the claim only
        fix = Fix(fix.kind, fix.description.replace(" (from ", f" in `{function.name}` (from ", 1), "display-only")
    return replace(diagnostic, fix=fix)


# ---------------------------------------------------------------------------------------------------------
# OG501: the expiry in the same command as the claim; a lock object with a TTL

_EXPIRY_KEYWORD = {"expire": "ex", "pexpire": "px", "expireat": "exat", "pexpireat": "pxat"}
#: A lock made without a TTL gets this many seconds: long enough for most jobs, short enough that a dead
#: holder does not stop the work for long. Unsafe: a run longer than this overlaps the next holder.
DEFAULT_LOCK_SECONDS = 60


def atomic_set_fix(claim: ast.Call, expire: ast.Call) -> Optional[Fix]:
    """``r.setnx(k, v)`` + ``r.expire(k, ttl)`` → ``r.set(k, v, nx=True, ex=ttl)``; the expire is left to delete."""
    method = claim.func.attr if isinstance(claim.func, ast.Attribute) else ""
    expiry = _EXPIRY_KEYWORD.get(expire.func.attr if isinstance(expire.func, ast.Attribute) else "")
    if method not in ("setnx", "set") or expiry is None or len(claim.args) < 2:
        return None
    ttl = expire.args[1] if len(expire.args) > 1 else next(
        (k.value for k in expire.keywords if k.arg in ("time", "when")), None)
    if ttl is None:
        return None
    keywords = f"nx=True, {expiry}={ast.unparse(ttl)}"
    return Fix("atomic-set-nx",
               f"claim and expire in one command: `set(…, {keywords})`; the `{expire.func.attr}(…)` on line "
               f"{expire.lineno} is then redundant and can go", "unsafe")


def lock_ttl_fix(keyword: str) -> Fix:
    return Fix("add-keyword", f"pass `{keyword}={DEFAULT_LOCK_SECONDS}` (seconds; set it a little above the longest "
                              "run, and extend() the lock for longer work)", "unsafe")


# ---------------------------------------------------------------------------------------------------------
# OG106: read the try-lock's result and return when it is false

#: library → how its ``execute(...)`` result becomes the lock's boolean, as a fix kind suffix
_TRY_LOCK_READERS = {"asyncpg": "fetchval", "databases": "fetch-val", "sqlalchemy": "scalar", "psycopg": "fetchone"}


def _statement_of(node: ast.AST) -> Optional[ast.stmt]:
    from ..analysis.facts import parent

    while node is not None and not isinstance(node, ast.stmt):
        node = parent(node)  # type: ignore[assignment]
    return node


_BLOCKING_LOCK = re.compile(r"\bpg_advisory_(?:xact_)?lock(?:_shared)?\b")


def _names_blocking_lock(statement: ast.stmt) -> bool:
    for node in walk(statement):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _BLOCKING_LOCK.search(node.value):
            return True
        if isinstance(node, ast.Attribute) and _BLOCKING_LOCK.fullmatch(node.attr):
            return True
    return False


def try_lock_fix(call: ast.Call, scope: Optional[ast.AST], library: Optional[str],
                 receiver: Optional[str], blocking: bool = False) -> Optional[Fix]:
    """OG106: ``acquired = ...`` → ``if not acquired: return`` after it; a bare ``execute`` → the
    library's way to read one value, tested in an ``if``; a DB-API cursor → ``fetchone()[0]`` tested after.
    OG103 (``blocking``): the same once ``pg_advisory_(xact_)lock`` became ``pg_try_advisory_(xact_)lock``."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None  # a return needs a function
    statement = _statement_of(call)
    if blocking:
        fix = try_lock_fix(call, scope, library, receiver) if isinstance(statement, ast.Expr) else None
        if fix is None or not _names_blocking_lock(statement):  # type: ignore[arg-type]
            return None  # the SQL is kept elsewhere: this statement has nothing to turn into the try variant
        return Fix(fix.kind.replace("try-lock-skip-", "lock-to-try-skip-"),
                   "take the lock with the try variant and " + fix.description, "unsafe")
    if isinstance(statement, ast.Assign):
        target = statement.targets[0] if len(statement.targets) == 1 else None
        if not isinstance(target, ast.Name) or target.id == "_":
            return None
        code = f"if not {target.id}: return"
        return Fix("try-lock-skip-after", f"skip the run unless the lock was taken: `{code}`", "unsafe")
    if not isinstance(statement, ast.Expr):
        return None
    value = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
    if value is not call or not isinstance(call.func, ast.Attribute) or call.func.attr != "execute":
        return None
    reader = _TRY_LOCK_READERS.get(library or "")
    if reader == "fetchone" and isinstance(statement.value, ast.Await):
        return None  # an async cursor's fetch is awaited too: no one-line rewrite reads it
    if reader is not None:
        shown = {"fetchval": ".fetchval(…)", "fetch-val": ".fetch_val(…)", "scalar": ".execute(…).scalar()",
                 "fetchone": ".execute(…).fetchone()[0]"}[reader]
        return Fix(f"try-lock-skip-{reader}",
                   f"read the lock's result (`{shown}`) and skip the run unless it was taken", "unsafe")
    if receiver:  # a DB-API cursor: execute returns nothing, the row is fetched after
        code = f"if not {receiver}.fetchone()[0]: return"
        return Fix("try-lock-skip-after", f"skip the run unless the lock was taken: `{code}`", "unsafe")
    return None


# ---------------------------------------------------------------------------------------------------------
# OG301: the arithmetic done by the database

_ARITHMETIC = {ast.Add: "+", ast.Sub: "-"}




def _arithmetic(statement: ast.AST, instance: str, field: str) -> Optional[Tuple[str, ast.AST]]:
    """(operator, amount) of ``obj.n += k`` / ``obj.n = obj.n + k``."""
    def is_field(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == field and isinstance(node.value, ast.Name)
                and node.value.id == instance)

    if isinstance(statement, ast.AugAssign) and is_field(statement.target) and type(statement.op) in _ARITHMETIC:
        return _ARITHMETIC[type(statement.op)], statement.value
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and is_field(statement.targets[0])
            and isinstance(statement.value, ast.BinOp) and type(statement.value.op) in _ARITHMETIC
            and is_field(statement.value.left)):
        return _ARITHMETIC[type(statement.value.op)], statement.value.right
    return None


def _mentions(node: ast.AST, instance: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == instance for n in walk(node))


def _read_after(function: ast.AST, instance: str, field: str, line: int) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == field and isinstance(n.value, ast.Name)
               and n.value.id == instance and isinstance(n.ctx, ast.Load) and n.lineno > line
               for n in walk(function))


def _saves_only(save: ast.Call, field: str) -> bool:
    """``obj.save()`` or ``obj.save(update_fields=["n"])``: nothing but this field would be lost by dropping it."""
    if not save.keywords:
        return True
    if len(save.keywords) != 1 or save.keywords[0].arg != "update_fields":
        return False
    fields = save.keywords[0].value
    return (isinstance(fields, (ast.List, ast.Tuple)) and len(fields.elts) == 1
            and isinstance(fields.elts[0], ast.Constant) and fields.elts[0].value == field)


def orm_update_fix(statement: ast.AST, instance: str, field: str, framework: Optional[str], model: Optional[str],
                   session: Optional[str], write: ast.Call) -> Optional[Fix]:
    """OG301 arithmetic on a loaded instance → one UPDATE that does it in SQL.

    Django: ``obj.n += k`` … ``obj.save()`` → ``Model.objects.filter(pk=obj.pk).update(n=F("n") + k)``, the
    save dropped (or ``obj.refresh_from_db(fields=["n"])`` in its place when ``obj.n`` is read after), only
    when the save is a plain ``obj.save()`` in the same block with no other change to ``obj`` in between.
    SQLAlchemy: the statement becomes ``session.execute(update(Model).where(Model.id == obj.id).values(n=Model.n
    + k))`` (the commit stays; the model's key is taken to be ``id``)."""
    from ..analysis.facts import ancestors

    found = _arithmetic(statement, instance, field)
    function = next((a for a in ancestors(statement) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
                    None)
    if found is None or function is None or not isinstance(statement, ast.stmt):
        return None
    if not model and framework != "django":
        return None
    op, amount = found
    if _mentions(amount, instance):
        return None  # the amount reads the instance too: not one expression the database can evaluate alone
    amount_code = ast.unparse(amount)
    if isinstance(amount, (ast.BinOp, ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)):
        amount_code = f"({amount_code})"
    # A Django instance whose loader is not visible (a parameter, a signal's instance): its own class.
    model_name = model.rsplit(".", 1)[-1] if model else f"type({instance})"
    read_after = _read_after(function, instance, field, getattr(write, "lineno", statement.lineno))
    if framework == "django":
        save_statement = _statement_of(write)
        siblings = statement_list(statement)
        if (siblings is None or not isinstance(save_statement, ast.Expr) or save_statement.value is not write
                or write.args or not _saves_only(write, field) or not any(s is save_statement for s in siblings)):
            return None
        start, end = siblings.index(statement), siblings.index(save_statement)
        between = siblings[start + 1:end]
        if end <= start or any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                               and isinstance(n.value, ast.Name) and n.value.id == instance
                               for s in between for n in walk(s)):
            return None  # other fields changed before the save: dropping it would lose them
        update = f'{model_name}.objects.filter(pk={instance}.pk).update({field}=F("{field}") {op} {amount_code})'
        then = f'{instance}.refresh_from_db(fields=["{field}"])' if read_after else "nothing"
        return Fix("orm-update-django",
                   f"do the arithmetic in SQL: `{update}` in place of `{ast.unparse(statement)}`; "
                   f"`{ast.unparse(save_statement)}` becomes `{then}`", "unsafe")
    if framework == "sqlalchemy" and session:
        from ..analysis.facts import parent

        wait = "await " if isinstance(parent(write), ast.Await) else ""  # an AsyncSession
        update = (f"{wait}{session}.execute(update({model_name}).where({model_name}.id == {instance}.id)"
                  f".values({field}={model_name}.{field} {op} {amount_code}))")
        refresh = f', then `{wait}{session}.refresh({instance}, ["{field}"])`' if read_after else ""
        return Fix("orm-update-sqlalchemy",
                   f"do the arithmetic in SQL: `{update}`{refresh} (the model's key is taken to be `id`)", "unsafe")
    return None


def shared_store_snippet(kind: str, snippet: str, what: str) -> Fix:
    """OG604/OG605: the keyword or setting that points process-local state at a store every replica shares.
    Display-only: which store (and its address) is a deployment decision."""
    return Fix(kind, f"{what}: `{snippet}`", "display-only")
