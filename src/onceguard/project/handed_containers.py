"""The container a function's callers hand it to walk.

``def install(scheduler, jobs): for job in jobs: scheduler.add_job(job.func, ...)`` walks whatever its callers
give for ``jobs``: ``install(scheduler, collect())`` with ``collect`` returning ``list(_JOBS.values())`` walks
``_JOBS``, the registry a decorator fills.  Read at every caller of the project: when they all hand the same
module-level container (written in place, or returned by a project function, as it is or as a copy or view of
it), the walk is a walk of that container.
"""
from __future__ import annotations

import ast
from typing import Set

from ..analysis.facts import FunctionNode, ModuleFacts, walk_no_nested_functions
from ..analysis.handed import argument_for
from .handed_values import iterated
from .renamed_callers import project_callers
from .summaries import resolve


def handed_container(function: FunctionNode, parameter: str, facts: ModuleFacts) -> str:
    """The qualified container every caller of ``function`` hands for ``parameter``, or ""."""
    found: Set[str] = set()
    calls = project_callers(function, facts) if facts.context.cross_file else [
        (call, facts) for call in facts.calls_by_name.get(function.name, ())
        if any(target is function for target, _ in resolve(call, facts, facts.enclosing_function(call),
                                                           by_name=False))]  # (the one file read alone)
    for call, caller_facts in calls:
        argument = argument_for(call, function, parameter)
        qualified = _container(argument, caller_facts) if argument is not None else ""
        if not qualified:
            return ""
        found.add(qualified)
    return found.pop() if len(found) == 1 else ""


def _container(expr: ast.AST, facts: ModuleFacts, depth: int = 0) -> str:
    """A module-level container ``expr`` is (or a copy or view of): a name of its module or an imported one, or
    what a project function it calls returns."""
    from .registries import _module_level_names, _module_name

    expr = iterated(expr.value if isinstance(expr, ast.Await) else expr)
    if isinstance(expr, ast.Name):
        if facts.imports.is_imported(expr.id):
            return facts.imports.qualify_dotted(expr.id) or ""
        module = _module_name(facts)
        names = facts.cached("registries:module-names", _module_level_names)
        return f"{module}.{expr.id}" if module and expr.id in names else ""
    if isinstance(expr, ast.Call) and depth < 2:
        targets = resolve(expr, facts, facts.enclosing_function(expr), by_name=False)
        if len(targets) != 1:
            return ""
        made, made_facts = targets[0]
        returns = [node.value for node in walk_no_nested_functions(made)
                   if isinstance(node, ast.Return) and node.value is not None]
        qualified = {_container(value, made_facts, depth + 1) for value in returns}
        return qualified.pop() if len(qualified) == 1 else ""
    return ""
