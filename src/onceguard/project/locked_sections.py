"""Lock helpers that hand the locked section to their caller, and the jobs that enter them.

A ``@contextmanager`` that takes a lock, yields, and releases it is a mutex around its caller's block: request
code whose every call must do its work waits on it on purpose.  A scheduled job that enters it with a job-wide
key is another matter: with a lock that waits, every replica's run queues behind the first and then does the
work again.  ``jobs_entering`` says which jobs enter such a helper with a fixed key.
"""
from __future__ import annotations

import ast
from typing import Callable, List, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.handed import parameter_names
from .fixed_arguments import callers_of, fixed_at_callers
from .scheduled.discovery import scheduled_by_all

#: (the call entering the helper, its module, the job it is in)
Entry = Tuple[ast.Call, ModuleFacts, FunctionNode]


def jobs_entering(helper: FunctionNode, keys: List[ast.AST], facts: ModuleFacts,
                  is_fixed: Callable[[List[ast.AST], ModuleFacts], bool]) -> List[Entry]:
    """The calls of ``helper`` made by scheduled jobs of the project, when the lock's key (``keys``: what it is
    computed from) is the same for every call: fixed in the helper, or built from parameters every caller hands
    a fixed value."""
    if is_fixed(keys, facts):
        callers = callers_of(helper, facts)
    else:
        own = set(parameter_names(helper, receiver=False))
        # ``key = f"app:lock:{name}"`` then ``r.set(key, ...)``: the key's local is read through its binding
        keys = [bound_value(key, facts) or key if isinstance(key, ast.Name) and key.id not in own else key
                for key in keys]
        names = sorted({n.id for key in keys for n in walk(key) if isinstance(n, ast.Name) and n.id in own})
        if not names:
            return []
        callers = fixed_at_callers(helper, names, facts, is_fixed, lambda call, other: False) or []
    found: List[Entry] = []
    for call, other in callers:
        job = other.enclosing_function(call)
        if job is not None and not other.context.is_test and _scheduled_or_run_by_one(job, other):
            found.append((call, other, job))
    return found


def _scheduled_or_run_by_one(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is a scheduled job, or a ticker's loop (or another job) calls it: what a job's pass calls
    is the job's work (``while not stop.wait(60): publish_sheets()`` in a thread started at start-up)."""
    if scheduled_by_all(function, facts):
        return True
    return any(caller is not None and caller is not function and scheduled_by_all(caller, other)
               for caller, other in ((other.enclosing_function(call), other)
                                     for call, other in callers_of(function, facts)))
