"""Calls a base class makes of a method its subclass overrides: ``self.fetch()`` in ``PollingWorker.run`` runs
``Relay.fetch`` on a ``Relay``.  A framework of the project's own (a polling loop, a template method) calls the
hooks its subclasses fill in; reading only the calls that name the subclass misses every one of them."""
from __future__ import annotations

import ast
from typing import List, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk_no_nested_functions
from .declared_types import ClassRef, base_classes

#: How many classes up the bases are read (a hook's class, its base, that base's base).
_MAX_BASES = 3

#: (the base's call of the hook, the base's module, the subclass ``self`` is an instance of there)
InheritedCall = Tuple[ast.Call, ModuleFacts, ClassRef]


def base_calls_of_override(method: FunctionNode, facts: ModuleFacts) -> List[InheritedCall]:
    """The ``self.<name>(...)`` calls the project bases of ``method``'s class make in their own methods, each with
    the class ``self`` is then an instance of (``method``'s own).  Empty for a function outside a class."""
    cls = facts.enclosing_class(method)
    if not isinstance(cls, ast.ClassDef) or method.name.startswith("__"):
        return []
    found: List[InheritedCall] = []
    seen: Set[int] = {id(cls)}
    level = base_classes(cls, facts)
    for _ in range(_MAX_BASES):
        above: List[ClassRef] = []
        for base, base_facts in level:
            if id(base) in seen:
                continue
            seen.add(id(base))
            for statement in base.body:
                if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in walk_no_nested_functions(statement):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr == method.name and isinstance(node.func.value, ast.Name)
                            and node.func.value.id == "self"):
                        found.append((node, base_facts, (cls, facts)))
            above.extend(base_classes(base, base_facts))
        if not above:
            break
        level = above
    return found
