"""The object a Django REST framework view loads with ``self.get_object()``, locked by its own queryset.

``get_object()`` filters what the view's ``get_queryset()`` returns.  A view whose ``get_queryset()`` adds
``select_for_update()`` -- always, or when ``self.action`` is the action being served -- loads the object under a
row lock (Django refuses ``select_for_update()`` outside a transaction, so its presence means one): the read,
the change and the save of that object are serialised.
"""
from __future__ import annotations

import ast
from typing import Optional

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, walk_no_nested_functions
from ...knowledge import orm
from .loads import unwrap
from .returned_loads import _last_binding


def locked_view_object(instance: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``instance`` was last bound, before ``before``, to ``self.get_object()`` of a view whose queryset locks
    the rows for this action."""
    cls = facts.enclosing_class(function)
    if cls is None:
        return False
    assignment = _last_binding(instance, before, function, facts)
    bound = unwrap(assignment.value) if assignment is not None else None
    if not (isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute)
            and bound.func.attr in orm.DRF_OBJECT_GETTERS and isinstance(bound.func.value, ast.Name)
            and bound.func.value.id == "self"):
        return False
    queryset = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == orm.DRF_QUERYSET_METHOD), None)
    if queryset is None:
        return False
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == orm.DJANGO_ROW_LOCK and _for_action(node, queryset, function.name)
               for node in walk_no_nested_functions(queryset))


def _for_action(lock: ast.Call, queryset: FunctionNode, action: str) -> bool:
    """The lock is taken for ``action``: no test of ``self.action`` above it, or one it passes for ``action``
    (``if self.action == "reserve":``, ``if self.action in ("reserve", "release"):``)."""
    for above in ancestors(lock):
        if above is queryset:
            return True
        if isinstance(above, ast.If):
            names = _actions_tested(above.test)
            if names is not None and action not in names:
                return False
    return True


def _actions_tested(test: ast.AST) -> Optional[set]:
    """The action names an ``if`` on ``self.action`` lets in, or None when it tests something else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Attribute)
            and test.left.attr == orm.DRF_ACTION_ATTRIBUTE and isinstance(test.left.value, ast.Name)
            and test.left.value.id == "self"):
        return None
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant):
        return {right.value}
    if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in right.elts if isinstance(e, ast.Constant)}
    return None
