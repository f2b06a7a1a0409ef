"""What an executed SQLAlchemy Core statement does: ``session.execute(delete(Run).where(...))``.

The statement is built by calls (``sqlalchemy.delete``, ``update``, ``insert``, ``select``) and their
chained methods; the call that sends it (``execute``, ``scalars``, ...) is where it takes effect.  Set-based
deletes and updates that assign constants give the same result however often they run; inserts and
relative updates (``values(n=Model.n + 1)``) do not.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..analysis.facts import FunctionNode, ModuleFacts, assigned_before
from ..knowledge import effects as known


def _chain(expr: ast.AST):
    """The calls of a method chain, outermost first, and the innermost (the statement's constructor)."""
    calls = []
    while isinstance(expr, ast.Call):
        calls.append(expr)
        func = expr.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            expr = func.value
        else:
            break
    return calls


def _statement_chain(statement: ast.AST, function: Optional[FunctionNode]):
    """``_chain``, continued through the names a statement is built up in: ``stmt = select(Job).where(...)``
    then ``stmt = stmt.with_for_update(skip_locked=True)`` is one chain from ``with_for_update`` to ``select``."""
    calls = []
    for _ in range(_NAME_HOPS):
        part = _chain(statement)
        calls.extend(part)
        head = part[-1].func if part else None
        if not (isinstance(head, ast.Attribute) and isinstance(head.value, ast.Name)):
            break
        statement = assigned_before(head.value, function)
        if statement is None:
            break
    return calls


#: Names a statement may pass through on its way to being sent.
_NAME_HOPS = 4


def statement_effect(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode]) -> Optional[str]:
    """"read", "idempotent" or "other" for a call that sends a Core statement, else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in known.STATEMENT_SENDERS and call.args):
        return None
    statement = call.args[0]
    if isinstance(statement, ast.Name):
        statement = assigned_before(statement, function)
    if statement is None:
        return None
    calls = _statement_chain(statement, function)
    if not calls:
        return None
    head = calls[-1]
    kind = known.CORE_STATEMENTS.get(facts.callee(head) or "")
    if kind is None:
        return None
    methods = {c.func.attr for c in calls[:-1] if isinstance(c.func, ast.Attribute)}
    if kind == "select":
        return "read"
    if kind == "insert":
        if methods & known.INSERT_IGNORING_CONFLICTS or any(_sets_given_values(c) for c in calls[:-1]):
            return "idempotent"
        return "other"
    if kind == "delete":
        return "idempotent"
    # update: constants (or the clock) assigned to the rows it matches
    for value_call in calls[:-1]:
        if isinstance(value_call.func, ast.Attribute) and value_call.func.attr == "values":
            values = [k.value for k in value_call.keywords] + [
                v for a in value_call.args if isinstance(a, ast.Dict) for v in a.values]
            if any(isinstance(v, ast.BinOp) for v in values):
                return "other"
    return "idempotent" if "where" in methods else "other"


def _sets_given_values(call: ast.Call) -> bool:
    """``.on_conflict_do_update(..., set_={"rate": stmt.excluded.rate})``: a conflicting row is set to the values
    given (or constants), so running the upsert again -- on another replica, with the same values -- leaves the
    table as one run did.  ``set_={"hits": t.c.hits + 1}`` adds up when repeated; a mapping built elsewhere is
    not read."""
    func = call.func
    keyword = known.UPSERT_METHODS.get(func.attr) if isinstance(func, ast.Attribute) else None
    given = next((k.value for k in call.keywords if k.arg == keyword), None) if keyword else None
    if isinstance(given, ast.Dict) and None not in given.keys:
        values = given.values
    elif isinstance(given, ast.Call) and isinstance(given.func, ast.Name) and given.func.id == "dict" \
            and not given.args and all(k.arg for k in given.keywords):
        values = [k.value for k in given.keywords]
    else:
        return False
    return bool(values) and not any(isinstance(v, ast.BinOp) for value in values for v in ast.walk(value))


def builds_statement(call: ast.Call, facts: ModuleFacts, function: Optional[FunctionNode] = None) -> bool:
    """``delete(Run).where(...).returning(Run.id)``: building a statement sends nothing (its execution is
    judged where it is sent).  With ``function``, also a step on a name it was built into (``stmt =
    insert(T).values(rows)`` then ``stmt.on_conflict_do_update(...)``)."""
    calls = _statement_chain(call, function) if function is not None else _chain(call)
    return bool(calls) and (facts.callee(calls[-1]) or "") in known.CORE_STATEMENTS
