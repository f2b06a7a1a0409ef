"""A queued task that only a once-per-tick job puts on the queue.

``queue.enqueue("billing.charges.charge_due", job_timeout=900)`` in an hourly job of a clock process the
deployment runs once hands the task to one worker once an hour; a run is killed before the next is enqueued, so
one run at a time does the task's work, as if the scheduled job did it itself.  Every place the project names the
task must be such an enqueue (by its dotted name or a reference): a request, another job or a plain call that
runs it too makes runs overlap, and so does a run allowed to last longer than the job's period.
"""
from __future__ import annotations

import ast
import os
from typing import Callable, List, Optional, Tuple

from ...analysis.context import FileContext
from ...analysis.facts import FunctionNode, ModuleFacts, parent
from ...knowledge import schedulers as known
from .. import index as project
from ..bindings import own_module_names

#: At most this many modules naming the task are read.
_MAX_MODULES = 12


def enqueued_once_per_tick(function: FunctionNode, facts: ModuleFacts,
                           once_per_tick: Callable[[FunctionNode, ModuleFacts], Optional[int]]) -> bool:
    """Every mention of ``function`` outside its own def is an enqueue of it (``.enqueue("pkg.mod.task",
    job_timeout=N)``) in a job ``once_per_tick`` answers the period of, with a timeout shorter than that period."""
    if not facts.context.cross_file or facts.enclosing_function(function) is not None \
            or facts.enclosing_class(function) is not None:
        return False
    qualified = {f"{module}.{function.name}" for module in own_module_names(facts)}
    own = os.path.abspath(facts.context.path or "")
    sites: List[Tuple[ast.Call, ModuleFacts]] = []
    paths = [p for p in project.files_mentioning(function.name, project.search_root(facts))
             if not FileContext(p, facts.config).is_test]
    if len(paths) > _MAX_MODULES:
        return False
    for path in paths:
        other = facts if os.path.abspath(path) == own else project.module_facts(path, facts.config)
        if other is None:
            return False
        for mention in _mentions(function, other):
            if other is facts and mention is function:
                continue
            site = _enqueue_of(mention, qualified, other)
            if site is None:
                return False  # (called, handed on or named some other way: another run)
            sites.append((site, other))
    for site, other in sites:
        job = other.enclosing_function(site)
        period = once_per_tick(job, other) if job is not None else None
        limit = _timeout(site)
        if period is None or limit is None or limit >= period:
            return False
    return bool(sites)


def _mentions(function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    """The def itself, and every name, attribute or text of the module that spells the function's name (imports
    aside)."""
    found: List[ast.AST] = []
    for node in facts.nodes:
        if node is function:
            found.append(node)
        elif isinstance(node, ast.Name) and node.id == function.name:
            found.append(node)
        elif isinstance(node, ast.Attribute) and node.attr == function.name:
            found.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and function.name in node.value \
                and not isinstance(parent(node), ast.Expr):
            found.append(node)
    return found


def _enqueue_of(mention: ast.AST, qualified: set, facts: ModuleFacts) -> Optional[ast.Call]:
    """The enqueue call ``mention`` is the task argument of (the dotted name, or a reference to the def)."""
    call = parent(mention)
    if not (isinstance(call, ast.Call) and call.args and call.args[0] is mention
            and isinstance(call.func, ast.Attribute) and call.func.attr in known.RQ_ENQUEUE_METHODS):
        return None
    named = mention.value if isinstance(mention, ast.Constant) else facts.qualify(mention)
    return call if named in qualified else None


def _timeout(call: ast.Call) -> Optional[float]:
    """The seconds the enqueue lets a run last, as written (``job_timeout=900``)."""
    for keyword in call.keywords:
        if keyword.arg in known.RQ_TIMEOUT_KEYWORDS and isinstance(keyword.value, ast.Constant) \
                and isinstance(keyword.value.value, (int, float)) and not isinstance(keyword.value.value, bool) \
                and keyword.value.value > 0:
            return float(keyword.value.value)
    return None
