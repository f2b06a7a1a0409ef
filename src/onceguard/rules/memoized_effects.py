"""OG607's reading of a memoised function used as a once-gate: ``@lru_cache`` (or ``@cache``) on a function that
acts outside the process and hands nothing back (``send_quota_notice(account, period, ...)``).  The cache keeps
the arguments it has seen, so a second call with them does nothing: the effect happens once per argument set
and process.  Every replica, every worker process and every restart keeps its own cache, so each sends again."""
from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.applied_decorators import decorators
from ..analysis.facts import FunctionNode, ModuleFacts, walk_no_nested_functions
from ..knowledge import process_local as known
from ..model import Diagnostic, Related
from ..project.reach import runs
from .base import Rule
from .process_locks import STEP_DEPTH, WRITE, SharedSteps

#: A module that memoises a function names the decorator.
TRIGGERS = (b"lru_cache", b"@cache", b"functools.cache")


def once_gates(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    for function in facts.functions:
        if not memoised(function, facts) or _hands_back_a_value(function):
            continue
        # What it does to the world the replicas share (mail sent, an HTTP request, rows written), followed into
        # the project's functions it calls: setting up this process (an SDK initialised, a package installed
        # in this container) is every process's own work, once each.
        write = next((step for step in SharedSteps().of_statements(list(function.body), facts, function, STEP_DEPTH)
                      if step.kind == WRITE), None)
        if write is None:
            continue
        answer = runs(function.body[0], facts)
        if not answer.every_replica:
            continue
        yield rule.finding(
            function,
            f"`{function.name}()` is memoised and hands nothing back: its cache lets it act once per arguments "
            "and process, so every replica, worker and restart acts again.",
            "The cache of a memoised function lives in one process. Record that the work was done where every "
            "replica looks: an `INSERT ... ON CONFLICT DO NOTHING RETURNING` of a row keyed by the arguments "
            "(act only when it returns the row), or `SET <key> 1 NX EX <ttl>` in Redis (act only when it is set).",
            related=[Related(write.facts.context.path, write.call.lineno, write.call.col_offset + 1, write.what),
                     *answer.entry[:1]],
        )


def memoised(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``@lru_cache``, ``@lru_cache(maxsize=...)``, ``@cache``: one result kept per arguments for the process's life."""
    return any(facts.qualify(decorator.func if isinstance(decorator, ast.Call) else decorator)
               in known.MEMOIZING_DECORATORS for decorator in decorators(function, facts))


def _hands_back_a_value(function: FunctionNode) -> bool:
    return any(isinstance(node, ast.Return) and node.value is not None
               and not (isinstance(node.value, ast.Constant) and node.value.value is None)
               for node in walk_no_nested_functions(function))
