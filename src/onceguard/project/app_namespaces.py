"""What an application keeps on its namespace for every request, read back elsewhere.

Start-up code keeps an object on the application (``app.ctx.presence = Registry()``, ``app.state.hub =
Hub()``) and handlers in other modules use it through the request (``request.app.ctx.presence.touch(...)``):
nothing at the use names the class.  What the attribute holds is what the project assigns it: when every
assignment of ``<namespace>.<name>`` in the project makes an instance of one project class, the attribute is
an instance of that class, wherever it is read.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, Optional, Tuple

from ..analysis.context import FileContext
from ..analysis.facts import ModuleFacts, parent
from ..knowledge.startup import APP_NAMESPACES
from . import index as project
from .declared_types import ClassRef

_kept: Dict[Tuple[str, str, str], Optional[ClassRef]] = {}
project.on_clear(_kept.clear)


def namespace_attribute(expr: ast.AST) -> Optional[Tuple[str, str]]:
    """(namespace, name) of ``x.ctx.name`` / ``x.state.name``, else None."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Attribute) \
            and expr.value.attr in APP_NAMESPACES:
        return expr.value.attr, expr.attr
    return None


def kept_class(expr: ast.AST, facts: ModuleFacts) -> Optional[ClassRef]:
    """The project class every assignment of ``expr``'s namespace attribute makes an instance of."""
    spelled = namespace_attribute(expr)
    if spelled is None:
        return None
    if not facts.context.cross_file:
        return _assigned_class(*spelled, [facts])  # (the one file read alone: its own assignments)
    root = project.search_root(facts)
    key = (root, *spelled)
    if key not in _kept:
        _kept[key] = None  # (an assignment whose class is read through this same attribute: unknown)
        _kept[key] = _assigned_class(*spelled, _assigning_modules(*spelled, root, facts))
    return _kept[key]


def _assigning_modules(namespace: str, name: str, root: str, facts: ModuleFacts) -> Iterator[ModuleFacts]:
    for path in project.files_mentioning(f"{namespace}.{name}", root):
        if not FileContext(path, facts.config, cross_file=True).is_test:
            other = project.module_facts(path, facts.config)
            if other is not None:
                yield other


def _assigned_class(namespace: str, name: str, modules: Iterable[ModuleFacts]) -> Optional[ClassRef]:
    from .summaries import instance_class

    found: Optional[ClassRef] = None
    for other in modules:
        for statement in other.assigns:
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not any(namespace_attribute(target) == (namespace, name) for target in targets):
                continue
            if isinstance(statement.value, ast.Constant) and statement.value.value is None:
                continue  # a placeholder until start-up fills it
            made = instance_class(statement.value, other, other.enclosing_function(statement))
            if made is None or found is not None and _place(made) != _place(found):
                return None  # something else, or instances of two classes: no one class
            found = made
    return found


def _place(cls: ClassRef) -> Tuple[str, int]:
    # (a module's tree may be parsed again between two assignments: the same class is the same place)
    return cls[1].context.path or "", cls[0].lineno


def kept_names(cls: ast.ClassDef, facts: ModuleFacts) -> Tuple[str, ...]:
    """``ctx.presence`` for each namespace attribute the project assigns an instance of ``cls`` (spelled by its
    name in the assignment): the text a call of its methods through the application holds instead of the
    class's name."""
    if not facts.context.cross_file:
        return ()
    root = project.search_root(facts)
    names = set()
    for path in project.files_mentioning(cls.name, root):
        source = project.read_bytes(path)
        if not any(f".{namespace}.".encode() in source for namespace in APP_NAMESPACES):
            continue
        other = project.module_facts(path, facts.config)
        for call in other.calls_by_name.get(cls.name, ()) if other is not None else ():
            statement = parent(call)
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is call:
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names.update(".".join(spelled) for spelled in map(namespace_attribute, targets) if spelled)
    return tuple(sorted(names))
