"""The Redis client arq hands its jobs: ``ctx["redis"]`` in a function an arq worker runs (its settings list it in
``functions``, ``cron_jobs`` or a hook), whose first parameter is the job's context.  The settings class may live
in another module that imports the job."""
from __future__ import annotations

import ast
from typing import Optional

from ..analysis.facts import ModuleFacts
from ..knowledge import redis_clients as known
from . import index as project


def is_arq_context_client(expr: ast.Subscript, facts: ModuleFacts) -> bool:
    """``ctx["redis"]`` where ``ctx`` is the first parameter of a function an arq worker runs (after ``self`` for a
    bound method)."""
    key = expr.slice
    if not (isinstance(key, ast.Constant) and key.value == known.ARQ_CONTEXT_CLIENT_KEY
            and isinstance(expr.value, ast.Name)):
        return False
    function = facts.enclosing_function(expr)
    arguments = function.args.posonlyargs + function.args.args if function is not None else []
    if arguments and arguments[0].arg in ("self", "cls") and facts.enclosing_class(function) is not None:
        arguments = arguments[1:]  # (a bound method listed as the job: the context comes after ``self``)
    if not arguments or arguments[0].arg != expr.value.id:
        return False
    return facts.cached(f"arq-job:{function.name}", lambda _f: _listed_by_worker(function.name, facts))


def _listed_by_worker(name: str, facts: ModuleFacts) -> bool:
    if _lists(facts.tree, name):
        return True
    if not facts.context.cross_file:
        return False
    for path in project.files_mentioning(name, project.search_root(facts)):
        other = project.module_facts(path, facts.config) if path != facts.context.path else None
        if other is not None and not other.context.is_test and _lists(other.tree, name):
            return True
    return False


def _lists(tree: ast.Module, name: str) -> bool:
    """A class of the module sets a worker attribute to ``name`` or to a list holding it (or ``func(name, ...)``,
    ``cron(name, ...)`` of it)."""
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        for statement in cls.body:
            value = _worker_value(statement)
            if value is not None and any(_names(item, name) for item in
                                         (value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value])):
                return True
    return False


def _worker_value(statement: ast.stmt) -> Optional[ast.AST]:
    if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id in known.ARQ_WORKER_ATTRIBUTES
                                                 for t in statement.targets):
        return statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
            and statement.target.id in known.ARQ_WORKER_ATTRIBUTES:
        return statement.value
    return None


def _names(item: ast.AST, name: str) -> bool:
    if isinstance(item, ast.Call) and item.args:
        item = item.args[0]  # ``func(reindex, timeout=60)``, ``cron(nightly, hour=3)``
    return (isinstance(item, ast.Name) and item.id == name) or (isinstance(item, ast.Attribute) and item.attr == name)
