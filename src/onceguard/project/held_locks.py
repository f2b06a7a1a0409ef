"""Sections a project's own lock helper holds a blocking lock around.

``async with seller_lock(session, seller_id): <read, change, write>``, where ``seller_lock`` is a
``@contextmanager`` (or ``@asynccontextmanager``) that sends ``SELECT pg_advisory_xact_lock(...)`` before it
yields: every caller's block waits for the one before it, so a read-modify-write inside it starts from what the
previous holder wrote.  A try-lock is a claim (``claims``), not a wait; a helper that unlocks before it yields
holds nothing over the block.
"""
from __future__ import annotations

import ast
from typing import Iterable

from ..analysis.executed_sql import ExecutedSql, executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, position, walk_no_nested_functions


def held_by_lock_helper(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` runs inside a ``with`` of a project context manager that waits for a lock before it yields."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(above, (ast.With, ast.AsyncWith)) and any(
                _waits_before_yield(item.context_expr, facts) for item in above.items):
            return True
    return False


def _waits_before_yield(expr: ast.AST, facts: ModuleFacts) -> bool:
    from .claim_contexts import is_context_factory
    from .summaries import resolve

    if not isinstance(expr, ast.Call):
        return False
    for target, target_facts in resolve(expr, facts, facts.enclosing_function(expr), by_name=False):
        if is_context_factory(target, target_facts) and _locks_before_yield(target, target_facts):
            return True
    return False


def _locks_before_yield(function: FunctionNode, facts: ModuleFacts) -> bool:
    yields = [node for node in walk_no_nested_functions(function) if isinstance(node, ast.Yield)]
    if not yields:
        return False
    first = min(position(node) for node in yields)
    return holds_blocking_lock(entry for entry in sorted(executed_sql(facts), key=lambda e: position(e.call))
                               if facts.enclosing_function(entry.call) is function and position(entry.call) < first)


def holds_blocking_lock(executions: Iterable[ExecutedSql]) -> bool:
    """Whether, after these statements (in the order sent), a blocking advisory lock one of them took is still
    held: no unlock came after it."""
    held = False
    for execution in executions:
        for advisory in execution.sql.advisory:
            if advisory.function.unlock:
                held = False
            elif advisory.function.is_lock and advisory.function.blocking:
                held = True
    return held
