"""A project class that keeps a container of its own and answers whether a key is in it (``__contains__``).

To whoever holds an instance, the instance is that container under another name: ``key in ledger`` tests it,
and a method of the class that writes the container under the key it is handed (``ledger.add(key)``,
``ledger.remember(key)``: whatever the method is called) marks the key as ``set.add`` would, while one that
removes the key it is handed takes the mark out again.  A bounded "seen" ledger wrapped this way is as much
process memory as the bare set it wraps; the rules about process-wide state ask here what a call of such a
method does (``process_state.Binding.wrapped``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Optional

from ..analysis.facts import FunctionNode, ModuleFacts
from ..analysis.handed import parameter_names
from . import declared_types
from . import process_state as state
from .prefilter_words import container_classes_for

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class WrappedContainer:
    cls: ast.ClassDef
    facts: ModuleFacts
    #: method name -> what a call of it does to the container under the key it is handed: a mark or "unmark"
    calls: Dict[str, str]


def wrapped_container(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[WrappedContainer]:
    """``cls`` as a container: it defines ``__contains__`` reading a container its ``__init__`` makes empty;
    None otherwise.  Read once per class."""
    cached = getattr(cls, "_og_wrapped_container", False)
    if cached is not False:
        return cached
    found = _read(cls, facts)
    cls._og_wrapped_container = found
    return found


def _read(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[WrappedContainer]:
    methods = {s.name: s for s in cls.body if isinstance(s, _FUNCTIONS)}
    if "__contains__" not in methods or "__init__" not in methods:
        return None
    for statement in ast.walk(methods["__init__"]):
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                or isinstance(statement, ast.AnnAssign) and statement.value is not None):
            continue
        target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        if not (state._is_self_attribute(target) and state.empty_container(statement.value, facts)):
            continue
        binding = state.Binding(statement.value, statement, facts, state.INSTANCE, f"self.{target.attr}", cls,
                                target.attr)
        found = state.accesses(binding, facts)
        if not any(a.kind == "read" and getattr(a.function, "name", "") == "__contains__" for a in found.items):
            continue
        calls: Dict[str, str] = {}
        for access in found.items:
            function = access.function
            if function is None or function.name.startswith("__") or not keyed_by_parameter(access.node, function):
                continue
            if access.kind in (state.WRITE_MARK, state.WRITE_RECORD, state.WRITE_CLOCK):
                calls.setdefault(function.name, state.WRITE_MARK)
            elif access.kind == "unmark":
                calls[function.name] = "unmark"
        return WrappedContainer(cls, facts, calls)
    return None


def keyed_by_parameter(node: ast.AST, function: FunctionNode) -> bool:
    """The write or removal is under a key the method is handed: ``self._ids[key] = ...``, ``self._ids.add(key)``,
    ``del self._ids[key]``, ``self._ids.discard(key)``."""
    if isinstance(node, ast.Expr):
        node = node.value
    key: Optional[ast.AST] = None
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        key = target.slice if isinstance(target, ast.Subscript) else None
    elif isinstance(node, ast.Delete) and node.targets and isinstance(node.targets[0], ast.Subscript):
        key = node.targets[0].slice
    elif isinstance(node, ast.Call) and node.args:
        key = node.args[0]
    return isinstance(key, ast.Name) and key.id in parameter_names(function, receiver=False)


def wrapped_value(value: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode]) -> Optional[WrappedContainer]:
    """The wrapped container ``value`` is: one made here (``SeenIds(1000)``) or handed to ``function`` as a
    parameter declared to be one (``seen: SeenIds``).  Asked only where a class the project's text shows to be
    such a wrapper is spelled."""
    names = container_classes_for(facts)
    if not names or not _spells_one_of(value, function, names):
        return None
    for cls, cls_facts in declared_types.classes(declared_types.type_of(value, facts, function)):
        found = wrapped_container(cls, cls_facts)
        if found is not None:
            return found
    return None


def _spells_one_of(value: ast.AST, function: Optional[FunctionNode], names) -> bool:
    if isinstance(value, ast.Call):
        func = value.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in names
    if isinstance(value, ast.Name) and function is not None:
        annotation = declared_types.parameter_annotation(function, value.id)
        return annotation is not None and any(
            isinstance(node, ast.Name) and node.id in names or isinstance(node, ast.Attribute) and node.attr in names
            or isinstance(node, ast.Constant) and node.value in names for node in ast.walk(annotation))
    return False
