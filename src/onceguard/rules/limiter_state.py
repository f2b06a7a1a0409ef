"""What a hand-written limiter keeps (OG604): per-key containers filled against a clock, in a module, on a
class's instances or in its body, and whether a function writes into them."""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.names import dotted
from ..knowledge import process_local as known
from ..project import declared_types
from ..project.forwarding import callee_through, forwarded


def reads_clock(scope: ast.AST, facts: ModuleFacts) -> bool:
    for node in walk(scope):
        if isinstance(node, ast.Call):
            if _is_clock(node, facts):
                return True
            # a clock read behind a small helper, the value it returns made from it: ``_period()`` returning
            # ``datetime.now(tz).strftime("%Y%m")`` keys the counts by the month
            through = forwarded(node, facts)
            if through is not None and any(_is_clock(inner, through.facts) for inner in walk(through.call)
                                           if isinstance(inner, ast.Call)):
                return True
    return False


def _is_clock(call: ast.Call, facts: ModuleFacts) -> bool:
    return facts.callee(call) in known.CLOCK_CALLS or (dotted(call.func) or "") in known.CLOCK_CALLS


def is_container(value: ast.AST, facts: ModuleFacts) -> bool:
    if isinstance(value, (ast.Dict, ast.Set, ast.List, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        return callee_through(value, facts) in known.CONTAINER_CONSTRUCTORS  # (also behind a small helper)
    return False


def keeps_containers(cls: ast.ClassDef, facts: ModuleFacts) -> bool:
    """The class stores per-key containers on its instances (``self.hits = defaultdict(list)``)."""
    for node in walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                continue
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                   for t in targets) and contains_container(node.value, facts):
                return True
    return False


def counts_in_shared_store(cls: ast.ClassDef) -> bool:
    """The class also counts in Redis or Memcached (``incr``, a script): its containers are a fallback."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr in known.SHARED_COUNTER_METHODS for node in walk(cls))


def contains_container(value: ast.AST, facts: ModuleFacts) -> bool:
    return any(is_container(node, facts) for node in walk(value))


def class_of_call(value: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    """The project class a call makes: a class of this module, or one named through an import (a method of some
    other object, ``conn.Window(...)``, is none)."""
    if not isinstance(value, ast.Call):
        return None
    if not isinstance(value.func, ast.Name) and not facts.imports.is_imported((dotted(value.func) or "").split(".")[0]):
        return None
    return declared_types.class_of(value.func, facts)


def holder_kind(value: ast.AST, facts: ModuleFacts) -> Optional[Tuple[str, Optional[ast.ClassDef]]]:
    """What a module-level value keeps: per-key containers ("container") or a limiter object whose class
    keeps them and reads a clock."""
    if isinstance(value, ast.IfExp):  # ``None if disabled else Limiter(...)``
        for branch in (value.body, value.orelse):
            found = holder_kind(branch, facts)
            if found is not None:
                return found
        return None
    if is_container(value, facts):
        return "container", None
    found = class_of_call(value, facts)
    if found is None:
        return None
    cls, where = found
    # (asked of the same classes again and again: ``Q(...)``, ``Value(...)``, once per class and run)
    kinds = where.cached("rate_limits:limiter-classes", lambda _facts: {})
    if id(cls) not in kinds:
        kinds[id(cls)] = keeps_containers(cls, where) and reads_clock(cls, where) and not counts_in_shared_store(cls)
    return ("object", cls) if kinds[id(cls)] else None


MUTATORS = frozenset({"append", "appendleft", "add", "setdefault", "update", "pop", "popleft", "remove", "clear",
                       "extend", "discard"})


def mutates(name: str, function: FunctionNode) -> bool:
    """``function`` writes into the container ``name`` (``hits[ip] = ...``, ``hits[ip].append(now)``), also
    through a name bound to one of its entries (``window = hits[ip]`` ... ``window.append(now)``)."""
    return mutates_rooted(function, lambda node: isinstance(node, ast.Name) and node.id == name)


def mutates_rooted(function: FunctionNode, is_the_container: Callable[[ast.AST], bool]) -> bool:
    return first_write(function, is_the_container) is not None


def first_write(function: FunctionNode, is_the_container: Callable[[ast.AST], bool]) -> Optional[ast.AST]:
    """The first node of ``function`` that writes into the container ``is_the_container`` accepts."""
    roots: Set[str] = set()

    def rooted(node: ast.AST) -> bool:
        while not is_the_container(node) and isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return is_the_container(node) or (isinstance(node, ast.Name) and node.id in roots)

    for node in walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.Subscript, ast.Call)) and rooted(node.value):
            roots.add(node.targets[0].id)

    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, (ast.Subscript, ast.Attribute)) and rooted(t) for t in targets):
                return node
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            if rooted(node.func.value):
                return node
    return None


def containers_made_by_functions(facts: ModuleFacts) -> List[Tuple[str, ast.AST, ast.AST]]:
    """(name, container, assignment) for ``global name`` … ``name = {}`` in a module-level function (an
    ``init()`` start-up calls) when the module's own top level binds no container to ``name`` (``name = None``):
    the container is the module's, one per process, made later than import."""
    if facts.lines and not any("global" in line for line in facts.lines):
        return []
    at_top = {t.id for s in facts.tree.body if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None
              and is_container(s.value, facts)
              for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
    found = []
    for function in facts.tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        declared = {n for node in walk(function) if isinstance(node, ast.Global) for n in node.names}
        for node in walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in declared - at_top and is_container(node.value, facts):
                found.append((node.targets[0].id, node.value, node))
    return found


def mutates_attribute(attr: str, class_name: str, method: FunctionNode) -> bool:
    """``method`` writes into the class's container ``attr`` read as ``self.attr``, ``cls.attr`` or
    ``ClassName.attr`` (also through a local bound to one of its entries)."""
    holders = ("self", "cls", class_name)
    return mutates_rooted(method, lambda node: isinstance(node, ast.Attribute) and node.attr == attr
                           and isinstance(node.value, ast.Name) and node.value.id in holders)
