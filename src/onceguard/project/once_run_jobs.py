"""Code that only a job the deployment runs once reaches.

A scheduled job the deployment runs once per tick (one beat process of its own, a leader's scheduler: see
``scheduled_once``) is one runner, as a claimed run is.  Code in it, or in a helper whose every call in the
project sits in such a job (one or two calls up), is run by that one runner alone: what it does, no other
replica does at the same time.  A helper also called from a request handler, a command or any job run in
every replica is anyone's.
"""
from __future__ import annotations

import ast

from ..analysis.facts import FunctionNode, ModuleFacts

#: Calls followed up from the code to the job that runs it.
MAX_CALLER_DEPTH = 2


def once_run_job_reaches(node: ast.AST, facts: ModuleFacts) -> bool:
    """Only a job the deployment runs once per tick reaches ``node``: its own function is such a job, or every
    call of that function the project shows is in one (reading the project: CLI only)."""
    function = facts.enclosing_function(node)
    return function is not None and _run_once(function, facts, 0)


def _run_once(function: FunctionNode, facts: ModuleFacts, depth: int) -> bool:
    cache = facts.cached("once-run-jobs", lambda _f: {})
    key = (id(function), depth)
    if key not in cache:
        cache[key] = False  # (recursion guard)
        cache[key] = _decide(function, facts, depth)
    return cache[key]


def _decide(function: FunctionNode, facts: ModuleFacts, depth: int) -> bool:
    from .scheduled.discovery import scheduled_once

    if scheduled_once(function, facts):
        return True
    if depth >= MAX_CALLER_DEPTH or not facts.context.cross_file:
        return False
    from .process_roles import at_every_caller

    def in_once_run_job(call: ast.Call, where: ModuleFacts) -> bool:
        caller = where.enclosing_function(call)
        return caller is not None and caller is not function and _run_once(caller, where, depth + 1)

    return at_every_caller(function.body[0] if function.body else function, facts, in_once_run_job)
