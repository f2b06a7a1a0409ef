"""The project's subclasses of a class, and the methods they run in place of one of its methods.

A method called on an instance the code knows only as a base (``self.run()`` in the base's own template
method, ``job.run()`` on a parameter annotated ``BaseJob``, an instance of a class taken out of a registry of
subclasses) runs whichever override the instance's class has: every one of them may run.
"""
from __future__ import annotations

import ast
import os
from typing import List, Optional, Tuple

from . import index as project
from .declared_types import ClassRef, base_classes
from ..analysis.facts import FunctionNode, ModuleFacts

#: Subclasses looked for this many levels down, and at most this many in all: past that a base is a framework
#: of the project's own whose every subclass no call site could be said to run.
_LEVELS = 3
_MAX_SUBCLASSES = 12
#: Modules whose class headers name a base, past which its subclasses are not looked for (each would be parsed).
_MAX_FILES = 2 * _MAX_SUBCLASSES


def _direct_subclasses(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[List[ClassRef]]:
    # Kept with the base's module (not for the whole run): what it holds are other modules' facts, which the
    # index frees past its node budget only once nothing else holds them.
    return facts.cached(f"subclasses:{cls.name}:{cls.lineno}", lambda _: _find_direct_subclasses(cls, facts))


def _find_direct_subclasses(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[List[ClassRef]]:
    found: List[ClassRef] = []
    modules = [facts]
    if facts.context.cross_file:
        paths = project.files_subclassing(cls.name, project.search_root(facts))
        if len(paths) > _MAX_FILES:
            return None  # (a base that many modules derive from: more subclasses than any call site could run)
        for path in paths:
            other = project.module_facts(path, facts.config)
            # (the checked file's own text may have been parsed again for the project's index: read it once)
            if other is not None and other.context.path != facts.context.path and not other.context.is_test:
                modules.append(other)
    place = (facts.context.path or "", cls.lineno)  # (a module may be parsed twice: the same place is the same class)
    for module in modules:
        for candidate in module.classes:
            # (only a base written with the class's name is resolved: the others would each parse their module)
            if candidate is not cls and _names(candidate, module, cls.name) and any(
                    (where.context.path or "", base.lineno) == place for base, where in base_classes(candidate, module)):
                found.append((candidate, module))
    return found


def _names(candidate: ast.ClassDef, facts: ModuleFacts, name: str) -> bool:
    """Some base of ``candidate`` is written as ``name`` (``Base``, ``jobs.Base``, ``Base[T]``, or an import of a
    ``name`` under another name)."""
    for base in candidate.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        written = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
        if written == name or (facts.qualify(base) or "").rsplit(".", 1)[-1] == name:
            return True
    return False


def subclasses(cls: ClassRef) -> List[ClassRef]:
    """The project's classes deriving from ``cls`` (through up to ``_LEVELS`` levels), nearest first; none when
    there are more than ``_MAX_SUBCLASSES``."""
    found: List[ClassRef] = []
    level = [cls]
    for _ in range(_LEVELS):
        following = []
        for parent, parent_facts in level:
            children = _direct_subclasses(parent, parent_facts)
            if children is None:
                return []
            for child in children:
                if child[0] is not cls[0] and all(child[0] is not seen for seen, _ in found):
                    found.append(child)
                    following.append(child)
        if len(found) > _MAX_SUBCLASSES:
            return []
        if not following:
            break
        level = following
    return found


def overrides(cls: ClassRef, method: FunctionNode, lookup) -> List[Tuple[FunctionNode, ModuleFacts, ClassRef]]:
    """(def, its module, the subclass) for each subclass of ``cls`` whose instances run another def than
    ``method`` under its name: one it defines, or one a mixin ahead of ``cls`` in its bases gives it.
    ``lookup(class, facts, name)`` finds the def a class runs for a name."""
    if cls[1].context.cross_file and not _may_be_overridden(cls, method.name):
        return []
    found: List[Tuple[FunctionNode, ModuleFacts, ClassRef]] = []
    seen = {id(method)}
    for sub in subclasses(cls):
        runs: Optional[Tuple[FunctionNode, ModuleFacts]] = lookup(sub[0], sub[1], method.name)
        if runs is not None and id(runs[0]) not in seen:
            seen.add(id(runs[0]))
            found.append((runs[0], runs[1], sub))
    return found


def _may_be_overridden(cls: ClassRef, name: str) -> bool:
    """What the project's text says before any module is parsed: some file holding a class whose header names
    ``cls`` (or, down to ``_LEVELS`` levels, one of those classes) has a ``def name(``, or such a class has more
    than one base (a mixin ahead of ``cls`` may give it the method).  False means no subclass runs another def
    under ``name``: most methods called on ``self`` are overridden nowhere."""
    return cls[1].cached(f"overridable:{cls[0].name}:{cls[0].lineno}:{name}", lambda facts: _overridable(cls, name))


def _overridable(cls: ClassRef, name: str) -> bool:
    root = project.search_root(cls[1])
    defining = {os.path.abspath(path) for path in project.files_defining(name, root)}
    level, seen = {cls[0].name}, {cls[0].name}
    for _ in range(_LEVELS):
        following = set()
        for base in sorted(level):
            paths = project.files_subclassing(base, root)
            if len(paths) > _MAX_FILES:
                return False  # (``subclasses`` answers none for such a base)
            for path in paths:
                for child, bases in project.class_headers(path):
                    if base not in bases:
                        continue
                    if os.path.abspath(path) in defining or len(bases) > 1:
                        return True
                    if child not in seen:
                        seen.add(child)
                        following.add(child)
        if not following:
            return False
        level = following
    return False


def _place(cls: ClassRef) -> Tuple[str, int]:
    return cls[1].context.path or "", cls[0].lineno


def linearized(cls: ClassRef, depth: int = 0) -> List[ClassRef]:
    """The project classes in ``cls``'s method resolution order (C3, as Python orders them; bases outside the
    project left out): where ``super()`` in a mixin ahead of a base looks next."""
    bases = base_classes(cls[0], cls[1]) if depth < _LEVELS + 2 else []
    sequences = [s for s in [linearized(base, depth + 1) for base in bases] + [list(bases)] if s]
    order = [cls]
    while sequences:
        head = next((s[0] for s in sequences
                     if not any(_place(s[0]) == _place(c) for other in sequences for c in other[1:])), None)
        if head is None:  # no consistent order: the bases left, as written
            return order + [c for s in sequences for c in s if all(_place(c) != _place(o) for o in order)]
        order.append(head)
        sequences = [s[1:] if _place(s[0]) == _place(head) else s for s in sequences]
        sequences = [s for s in sequences if s]
    return order


def after_in_order(instance: ClassRef, defining: ClassRef, name: str) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The def ``super().name(...)`` runs when written in a method of ``defining`` on an instance of ``instance``:
    the first class after ``defining`` in ``instance``'s resolution order whose body defines ``name``."""
    order = linearized(instance)
    places = [_place(c) for c in order]
    if _place(defining) not in places:
        return None
    for cls, facts in order[places.index(_place(defining)) + 1:]:
        for statement in cls.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
                return statement, facts
    return None
