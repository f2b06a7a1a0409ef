"""A call of a name that holds an instance of a project class runs that class's ``__call__``.

``await job(fire_at)`` in a ticker whose callers hand it ``SettlementJob(pool, bank)``, ``run(day)`` in a job a
factory returns, closed over the factory's parameter its caller fills with ``InvoiceRun(cfg)``: the object is
called, and what runs is ``SettlementJob.__call__`` (its claim, its effects). The name's value is what the code
makes it where that is visible (a construction, an annotation), else what every caller of the def that takes it
as a parameter hands in, when they all hand an instance of the same class.
"""
from __future__ import annotations

import ast
from typing import Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts
from ..analysis.handed import parameter_names
from .declared_types import ClassRef, one_class

#: What a call of an object runs.
_CALL_METHOD = "__call__"


def called_object_method(call: ast.Call, facts: ModuleFacts,
                         function: Optional[FunctionNode]) -> Optional[Tuple[FunctionNode, ModuleFacts, ClassRef]]:
    """(``Class.__call__``, its module, the instance's class) for ``name(...)`` when ``name`` holds an instance of a
    project class that defines (or inherits) ``__call__``; None otherwise."""
    func = call.func
    if not isinstance(func, ast.Name) or function is None:
        return None
    owner = _held_instance(func, facts, function)
    if owner is None:
        return None
    from .summaries import _method_of

    method = _method_of(owner[0], owner[1], _CALL_METHOD)
    return (method[0], method[1], owner) if method is not None else None


def _held_instance(name: ast.Name, facts: ModuleFacts, function: FunctionNode) -> Optional[ClassRef]:
    from .summaries import instance_class

    binder = _binding_def(name.id, function, facts)
    if binder is None:
        return None  # not a parameter of this def or of one around it: a global, a builtin, a local callable
    made = instance_class(name, facts, function)
    if made is not None:
        return made

    def build(_facts: ModuleFacts):
        return _handed_by_every_caller(name.id, binder, facts)

    return facts.cached(f"callable-objects:{id(binder)}:{name.id}", build)


def _binding_def(name: str, function: FunctionNode, facts: ModuleFacts) -> Optional[FunctionNode]:
    """The def whose parameter ``name`` is: ``function`` or a def around it (a closure's variable)."""
    scope: Optional[FunctionNode] = function
    while scope is not None:
        if name in parameter_names(scope, receiver=False):
            return scope
        scope = facts.enclosing_function(scope)
    return None


def _handed_by_every_caller(name: str, binder: FunctionNode, facts: ModuleFacts) -> Optional[ClassRef]:
    """The one project class every caller of ``binder`` hands an instance of for ``name``."""
    from .handed_values import cases_of
    from .summaries import instance_class

    if not binder.body:
        return None
    cases = cases_of([name], binder.body[0], facts)
    if not cases:
        return None
    return one_class(instance_class(value, case.facts, case.facts.enclosing_function(value)) if value is not None
                     else None for case in cases for value in [case.values.get(name)])
