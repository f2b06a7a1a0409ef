"""What a registration found: the scheduled function and how it was scheduled, plus the argument readers
every registration form shares."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts
from ...analysis.handed import call_argument
from ...knowledge import schedulers as known
from ...model import Related


_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_HH_MM = re.compile(r"^\s*\d{1,2}:\d{2}(:\d{2})?\s*$")


# ------------------------------------------------------------------------------------------------
# What is scheduled in this module
# ------------------------------------------------------------------------------------------------
@dataclass
class Target:
    """The scheduled function once found: a ``def`` here or (CLI) in another file of the project."""

    function: Optional[FunctionNode] = None
    facts: Optional[ModuleFacts] = None
    foreign: bool = False
    claimed: bool = False  # the registration itself wraps the job in a claim (``run_exclusive`` as the job)
    label: str = ""
    #: the receiver's class when the scheduled method is inherited from a base of it (``Nightly().run``)
    self_class: Optional[Tuple[ast.ClassDef, ModuleFacts]] = None


@dataclass
class Scheduled:
    family: str
    how: str  # how it was registered, as written: ``sched.add_job``, ``@huey.periodic_task``
    registration: ast.AST  # where OG202 (and a cross-file OG201) is reported
    target: Target
    call: Optional[ast.Call] = None  # the registration call or decorator call
    ctor: Optional[ast.Call] = None  # the scheduler's constructor, when visible
    trigger: Optional[ast.AST] = None
    periodic: bool = True
    coordinated: bool = False
    #: a coordinated job whose run may outlast its period: the next tick's run, on another worker, overlaps it
    may_overlap: bool = False
    wall_clock: bool = False  # fires at a wall-clock time: once per business period
    long_hint: bool = False
    detail: str = ""  # e.g. the start-up hook that starts a ticker
    #: a Celery beat the deployment runs on its own in this many replicas (not inside a worker)
    beat_replicas: Optional[int] = None
    gated: bool = False  # registered only by a claim's winner, or only in a process the project dedicates to it
    skip: Optional[Callable[[ast.stmt], bool]] = None
    #: places in other files the registration depends on (the scheduler made in another module)
    related: List[Related] = field(default_factory=list)
    #: the generic ticker that repeats the target it was handed (``forever`` of ``forever(work, 30)``), as written
    repeater: str = ""
    #: a worker loop's pass keeps what the call returns (``count = send(day)``): called perhaps for its value,
    #: it is the pass's work only when it is seen to act outside the process
    value_kept: bool = False


def _keywords(call: Optional[ast.Call]) -> Dict[str, ast.AST]:
    if call is None:
        return {}
    return {k.arg: k.value for k in call.keywords if k.arg}


def _has_splat(call: Optional[ast.Call]) -> bool:
    return call is not None and any(k.arg is None for k in call.keywords)


#: The argument a registration passes by keyword, else at a position.
_argument = call_argument


def _const(node: Optional[ast.AST]):
    return node.value if isinstance(node, ast.Constant) else None


def _is_true_constant(node: Optional[ast.AST], value) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _cron_wall_clock(spec: str) -> bool:
    """Whether a crontab expression fires at a wall-clock time (an hour or a date is fixed)."""
    fields = spec.split()
    if len(fields) == 1:
        return fields[0].lower() in known.CRONTAB_WALL_CLOCK_MACROS
    if len(fields) < 5:
        return False
    return any(f != "*" for f in fields[1:5])


def _fields_wall_clock(call: Optional[ast.Call], positional_counts: bool = False) -> bool:
    if call is None:
        return False
    if positional_counts and call.args:
        return True
    for name, value in _keywords(call).items():
        if name in known.CRON_WALL_CLOCK_FIELDS and not (isinstance(value, ast.Constant) and value.value in (None, "*")):
            return True
    return False
