"""What an application keeps on its namespace for every request, read back elsewhere.

Start-up code keeps an object on the application (``app.ctx.presence = Registry()``, ``app.state.hub =
Hub()``) and handlers in other modules use it through the request (``request.app.ctx.presence.touch(...)``):
nothing at the use names the class.  What the attribute holds is what the project assigns it: when every
assignment of ``<namespace>.<name>`` in the project makes an instance of one project class, the attribute is
an instance of that class, wherever it is read.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from ..analysis.context import FileContext
from ..analysis.facts import ModuleFacts, parent
from ..knowledge.startup import APP_MAPPINGS, APP_NAMESPACES, APP_REGISTRIES
from . import index as project
from .declared_types import ClassRef, one_class

_kept: Dict[Tuple[str, str, str], Optional[ClassRef]] = {}
_values: Dict[Tuple[str, str, str], List[Tuple[ast.AST, ModuleFacts]]] = {}
_names: Dict[Tuple[str, str, str, int], Tuple[str, ...]] = {}
_may_keep: Dict[Tuple[str, str, int], bool] = {}
#: path -> whether its text assigns a place on an application (asked of the same files for many classes)
_assigning_files: Dict[str, bool] = {}
for _cache in (_kept, _values, _names, _may_keep, _assigning_files):
    project.on_clear(_cache.clear)

#: ``ctx|state``, for the regular expressions below.
_NAMESPACE_WORDS = b"|".join(n.encode() for n in sorted(APP_NAMESPACES))


def namespace_attribute(expr: ast.AST) -> Optional[Tuple[str, str]]:
    """(namespace, name) of ``x.ctx.name`` / ``x.state.name``, of ``x.extensions["name"]`` (Flask's registry
    of what extensions keep), and of ``app[name_key]`` / ``request.app[name_key]`` (aiohttp's application is
    the mapping), else None."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Attribute) \
            and expr.value.attr in APP_NAMESPACES:
        return expr.value.attr, expr.attr
    if not isinstance(expr, ast.Subscript):
        return None
    holder, key = expr.value, expr.slice
    if isinstance(holder, ast.Attribute) and holder.attr in APP_REGISTRIES and isinstance(key, ast.Constant) \
            and isinstance(key.value, str):
        return holder.attr, key.value
    held = holder.id if isinstance(holder, ast.Name) else holder.attr if isinstance(holder, ast.Attribute) else None
    if held in APP_MAPPINGS:
        if isinstance(key, ast.Name):
            return held, key.id
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return held, repr(key.value)
    return None


def _searched(namespace: str, name: str) -> str:
    if namespace in APP_MAPPINGS:
        return f"[{name}]" if name.isidentifier() else name
    return f"{namespace}[" if namespace in APP_REGISTRIES else f"{namespace}.{name}"


def kept_values(expr: ast.AST, facts: ModuleFacts) -> List[Tuple[ast.AST, ModuleFacts]]:
    """Every value the project assigns to ``expr``'s namespace attribute or registry entry, with its module
    (what ``current_app.extensions["redis"]`` holds: the ``redis.Redis.from_url(...)`` the app factory put
    there)."""
    spelled = namespace_attribute(expr)
    if spelled is None:
        return []
    if not facts.context.cross_file:
        return [(statement.value, facts) for statement in _assignments(facts, spelled)]
    root = project.search_root(facts)
    key = (root, *spelled)
    if key not in _values:
        _values[key] = [(statement.value, other) for other in _assigning_modules(*spelled, root, facts)
                        for statement in _assignments(other, spelled)]
    return _values[key]


def _assignments(facts: ModuleFacts, spelled: Tuple[str, str]) -> Iterator[ast.stmt]:
    for statement in facts.assigns:
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(namespace_attribute(target) == spelled for target in targets) and not (
                isinstance(statement.value, ast.Constant) and statement.value.value is None):
            yield statement  # (not a placeholder until start-up fills it)


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
    for path in project.files_mentioning(_searched(namespace, name), root):
        if not FileContext(path, facts.config, cross_file=True).is_test:
            other = project.module_facts(path, facts.config)
            if other is not None:
                yield other


def _assigned_class(namespace: str, name: str, modules: Iterable[ModuleFacts]) -> Optional[ClassRef]:
    from .summaries import instance_class

    return one_class(instance_class(statement.value, other, other.enclosing_function(statement))
                      for other in modules for statement in _assignments(other, (namespace, name)))


def kept_names(cls: ast.ClassDef, facts: ModuleFacts) -> Tuple[str, ...]:
    """``ctx.presence`` for each namespace attribute the project assigns an instance of ``cls`` (spelled by its
    name in the assignment): the text a call of its methods through the application holds instead of the
    class's name."""
    if not facts.context.cross_file:
        return ()
    root = project.search_root(facts)
    key = (root, facts.context.path or "", cls.name, cls.lineno)
    if key not in _names:
        _names[key] = _kept_names(cls, facts, root)
    return _names[key]


def _kept_names(cls: ast.ClassDef, facts: ModuleFacts, root: str) -> Tuple[str, ...]:
    # Only files whose text assigns ``<namespace>.<name> = Cls(`` or holds ``"key": Cls(`` beside a registry are
    # parsed: a class name and ``.state`` are both common words.
    made = re.escape(cls.name.encode("utf-8", "replace")) + rb"\s*\("
    assigned = re.compile(rb"\.(?:" + _NAMESPACE_WORDS + rb")\.[A-Za-z_]\w*\s*(?::[^=\n]*)?=\s*" + made)
    dict_entry = re.compile(rb"[\"'][^\"'\n]+[\"']\s*:\s*" + made)
    names = set()
    for path in project.files_mentioning(cls.name, root):
        source = project.read_bytes(path)
        if assigned.search(source) is None and not (
                any(f"{registry}[".encode() in source for registry in APP_REGISTRIES) and dict_entry.search(source)):
            continue
        other = project.module_facts(path, facts.config)
        for call in other.calls_by_name.get(cls.name, ()) if other is not None else ():
            statement = parent(call)
            entry = next((k for k, v in zip(statement.keys, statement.values) if v is call), None) \
                if isinstance(statement, ast.Dict) else None
            if isinstance(entry, ast.Constant) and isinstance(entry.value, str):
                # ``app.extensions["hooks"] = {"ledger": Ledger()}``: read back as ``ext["ledger"]``
                names.update((f'"{entry.value}"', f"'{entry.value}'"))
                continue
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is call:
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names.update(".".join(spelled) for spelled in map(namespace_attribute, targets)
                             if spelled and spelled[0] in APP_NAMESPACES)
    return tuple(sorted(names))


def kept_entry_class(expr: ast.Subscript, facts: ModuleFacts, function, depth: int) -> Optional[ClassRef]:
    """``ext["ledger"]`` with ``ext = current_app.extensions["hooks"]`` (or the subscript written in one piece):
    the class of the ``"ledger"`` entry of the dict every assignment of the application's place holds."""
    from .summaries import _name_bindings, instance_class

    key = expr.slice.value if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str) else None
    holder = expr.value
    if key is None or depth > 3:
        return kept_class(expr, facts)
    if isinstance(holder, ast.Name) and function is not None:
        bound = _name_bindings(function).get(holder.id)
        holder = bound.value if isinstance(bound, ast.Assign) else holder
    if namespace_attribute(holder) is None:
        return None
    def entry_class(value: ast.AST, where: ModuleFacts) -> Optional[ClassRef]:
        entry = next((v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant) and k.value == key),
                     None) if isinstance(value, ast.Dict) else None
        return instance_class(entry, where, where.enclosing_function(entry)) if entry is not None else None

    return one_class(entry_class(value, where) for value, where in kept_values(holder, facts))


def may_be_kept(cls: ast.ClassDef, facts: ModuleFacts) -> bool:
    """Some file that names ``cls`` (its own, or one of the project's) assigns a place on the application
    (``x.state.y = ...``, ``x.extensions["y"] = ...``): the cheap test before the dear question of where its
    instances live."""
    if not facts.context.cross_file:  # (the one file read alone: its own text)
        return _ASSIGNS_A_PLACE.search("\n".join(facts.lines).encode("utf-8", "replace")) is not None
    key = (facts.context.path or "", cls.name, cls.lineno)
    if key not in _may_keep:
        _may_keep[key] = any(_assigns_a_place(path)
                             for path in project.files_mentioning(cls.name, project.search_root(facts)))
    return _may_keep[key]


def _assigns_a_place(path: str) -> bool:
    found = _assigning_files.get(path)
    if found is None:
        found = _assigning_files[path] = _ASSIGNS_A_PLACE.search(project.read_bytes(path)) is not None
    return found


_ASSIGNS_A_PLACE = re.compile(
    rb"\.(?:" + _NAMESPACE_WORDS + rb")\.[A-Za-z_]\w*\s*(?::[^=\n]*)?=[^=]"
    + rb"|(?:" + b"|".join(n.encode() for n in sorted(APP_REGISTRIES | APP_MAPPINGS)) + rb")\[[^\]\n]+\]\s*=[^=]")
