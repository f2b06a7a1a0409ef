"""The callers of a function across the project, whatever name they call it by.

``summaries.callers`` finds the calls spelled with the def's own module and name; a caller may also reach it
through an import alias (``from app.steps import prepare as prepare_db``) or through a module that
re-exports it (``from .parts import prepare`` in ``app/steps.py``, called as ``steps.prepare()``).
"""
from __future__ import annotations

import ast
import os
import re
from typing import Dict, List, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts
from .summaries import callers


#: At most this many files are parsed to find the names another module gives a function.
_MAX_ALIAS_FILES = 40
_MAX_REEXPORT_HOPS = 4


def project_callers(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    """``summaries.callers``, and the calls that reach ``function`` under another name: an import alias
    (``from app.steps import prepare as prepare_db``) or a module that re-exports it (``from .parts import
    prepare`` in ``app/steps.py``, called as ``steps.prepare()``)."""
    found = list(callers(function, facts))
    if not facts.context.cross_file:
        return found

    def build(_facts: ModuleFacts) -> Dict[int, List[Tuple[ast.Call, ModuleFacts]]]:
        return {}

    cache = facts.cached("reach:renamed-callers", build)
    if id(function) not in cache:
        cache[id(function)] = _renamed_callers(function, facts)
    seen = {(id(call)) for call, _ in found}
    found.extend(item for item in cache[id(function)] if id(item[0]) not in seen)
    return found


def _renamed_callers(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    from . import index as project
    from .claims import own_module_names

    cls = facts.enclosing_class(function)
    if cls is None and function.name == "__init__":
        return []
    head = cls.name if cls is not None else function.name
    called = head if function.name == "__init__" else function.name  # a constructor runs as ``Class(...)``
    tail = f".{function.name}" if cls is not None and called != head else ""
    heads = {f"{module}.{head}" for module in own_module_names(facts)}  # names bound to the def (or its class)
    words = {head}
    searched: Set[str] = set()
    parsed: Dict[str, ModuleFacts] = {}
    root = project.search_root(facts)
    own = os.path.abspath(facts.context.path or "")
    for _ in range(_MAX_REEXPORT_HOPS):
        grown = False
        for word in sorted(words - searched):
            searched.add(word)
            pattern = re.compile(rb"\b" + re.escape(word.encode("utf-8", "replace")) + rb"\b")
            for path in project.files_mentioning(word, root):
                key = os.path.abspath(path)
                if key == own or key in parsed or len(parsed) >= _MAX_ALIAS_FILES:
                    continue
                if not pattern.search(project.read_bytes(path)):
                    continue
                other = project.module_facts(path, facts.config)
                if other is None or other.context.is_test:
                    continue
                parsed[key] = other
        for other in parsed.values():
            for local, target in other.imports.aliases.items():
                if target not in heads or project.reexported(other, local) is None:
                    continue
                for module in own_module_names(other):
                    name = f"{module}.{local}"
                    if name not in heads:
                        heads.add(name)
                        grown = True
                words.add(local)
        if not grown and words <= searched:
            break
    targets = {name + tail for name in heads}
    found: List[Tuple[ast.Call, ModuleFacts]] = []
    for other in parsed.values():
        names = {called} | {local for local, target in other.imports.aliases.items() if target in heads}
        for name in sorted(names):
            for call in other.calls_by_name.get(name, ()):
                if (other.qualify(call.func) or "") in targets:
                    found.append((call, other))
    return found
