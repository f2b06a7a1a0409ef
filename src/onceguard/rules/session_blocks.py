"""A lock helper that hands its Session to the caller's ``with`` block between lock and unlock (OG101): the
Session it is handed, or the one both import (``db.session``).

``@asynccontextmanager async def job_lock(session, key)`` takes ``pg_try_advisory_lock`` on the Session it is
handed, yields, and unlocks after: what the caller's block does with that Session happens while the lock is
held.  A commit, rollback or close there hands the Session's connection back to the pool still holding the
lock, unless the caller's Session is bound to one connection it checked out (``AsyncSession(bind=conn)``).
"""
from __future__ import annotations

import ast
import os
from typing import Optional

from ..analysis.facts import ModuleFacts, parent, position, walk, walk_no_nested_functions
from ..analysis.names import dotted

def ended_by_callers_block(use, facts: ModuleFacts) -> Optional[str]:
    """A context manager of the project that takes the lock on a Session it is handed and yields before
    unlocking: a caller whose ``with`` block commits (or rolls back, or closes) that Session ends the
    transaction while the lock is held.  What that caller does, as a clause, or None."""
    from ..project.fixed_arguments import callers_of
    from .advisory_locks import SESSION_ENDERS, _argument_for, _parameters, session_text

    scope = use.scope
    spelled = session_text(use) or ""
    root = spelled.split(".")[0]
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    # The Session is handed in, or it is one the module imports (Flask-SQLAlchemy's ``db.session``, a
    # ``scoped_session``): the caller's block then uses the same Session under its own spelling of that import.
    shared = None
    if root not in _parameters(scope):
        if not facts.imports.is_imported(root):
            return None
        shared = facts.imports.qualify_dotted(spelled)
    if not any(isinstance(n, ast.Yield) and position(n) > position(use.call) for n in walk_no_nested_functions(scope)):
        return None
    for call, other in callers_of(scope, facts):
        item = parent(call)
        block = parent(item) if isinstance(item, ast.withitem) else None
        if not isinstance(block, (ast.With, ast.AsyncWith)) or other.context.is_test:
            continue
        if shared is None:
            handed = _argument_for(call, scope, root)
            text = dotted(handed) if handed is not None else None
            if not text:
                continue

            def same(receiver: ast.AST, text=text) -> bool:
                return dotted(receiver) == text
        else:
            text = None

            def same(receiver: ast.AST, other=other) -> bool:
                return (other.qualify(receiver) or "") == shared
        enders = [c for statement in block.body for c in walk(statement) if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and c.func.attr in SESSION_ENDERS and same(c.func.value)]
        if not enders:
            # ``rebuild(session, tenant)`` inside the block, committing batch by batch the Session it is handed
            enders = [c for statement in block.body for c in walk(statement) if isinstance(c, ast.Call)
                      and _ends_handed_session(c, same, other, SESSION_ENDERS)]
        if enders and not (text is not None and bound_to_one_connection(text, call, other)):
            ender = min(enders, key=position)
            caller = other.enclosing_function(call)
            return (f"`{getattr(caller, 'name', 'its caller')}` calls `{dotted(ender.func)}()` inside that block "
                    f"({os.path.basename(other.context.path or '')}:{ender.lineno})")
    return None


def _ends_handed_session(call: ast.Call, same, facts: ModuleFacts, enders) -> bool:
    """``call`` hands the Session (``same`` tells it) to a project function that commits, rolls back or closes the
    parameter it receives it as."""
    from ..analysis.handed import argument_for, parameter_names
    from ..project.summaries import resolve

    if not any(same(argument) for argument in [*call.args, *(k.value for k in call.keywords)]):
        return False
    for target, _ in resolve(call, facts, facts.enclosing_function(call), by_name=False):
        for name in parameter_names(target, receiver=False):
            given = argument_for(call, target, name)
            if given is not None and same(given) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in enders
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == name
                    for n in walk_no_nested_functions(target)):
                return True
    return False


def bound_to_one_connection(text: str, near: ast.AST, facts: ModuleFacts) -> bool:
    """The caller's Session ``text`` is bound to one connection it checked out (``AsyncSession(bind=conn)`` in
    ``async with engine.connect() as conn``, here or in the project's context manager that yields it): its
    commits end transactions, not the checkout, and lock and unlock share that connection."""
    from ..project.summaries import resolve

    function = facts.enclosing_function(near)
    if function is None:
        return False
    for node in walk_no_nested_functions(function):
        made = None
        if isinstance(node, (ast.With, ast.AsyncWith)):
            made = next((i.context_expr for i in node.items if isinstance(i.optional_vars, ast.Name)
                         and i.optional_vars.id == text), None)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == text for t in node.targets):
            made = node.value
        made = made.value if isinstance(made, ast.Await) else made
        if not isinstance(made, ast.Call):
            continue
        if _binds_a_connection(made):
            return True
        for target, target_facts in resolve(made, facts, function, by_name=False):
            if any(isinstance(n, ast.Call) and _binds_a_connection(n) for n in walk_no_nested_functions(target)):
                return True
    return False


def _binds_a_connection(call: ast.Call) -> bool:
    """``Session(bind=conn)`` where ``conn`` is a checked-out connection (not an engine)."""
    bind = next((k.value for k in call.keywords if k.arg == "bind"), None)
    if not isinstance(bind, ast.Name):
        return False
    scope = ModuleFacts.enclosing_function(call)
    for node in walk_no_nested_functions(scope) if scope is not None else ():
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(i.optional_vars, ast.Name) and i.optional_vars.id == bind.id
                and isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Attribute)
                and i.context_expr.func.attr == "connect" for i in node.items):
            return True
    return False
