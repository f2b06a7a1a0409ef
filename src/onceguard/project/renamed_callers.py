"""The callers of a function across the project, whatever name they call it by.

``summaries.callers`` finds the calls spelled with the def's own module and name; a caller may also reach it
through an import alias (``from app.steps import prepare as prepare_db``) or through a module that
re-exports it (``from .parts import prepare`` in ``app/steps.py``, called as ``steps.prepare()``).
"""
from __future__ import annotations

import ast
import os
from typing import Dict, Iterator, List, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts
from ..analysis.handed import handed_sites
from .summaries import callers


#: At most this many files are parsed to find the names another module gives a function (those likeliest to
#: give it another name first: a function imported by more files is called by its own name in most of them).
_MAX_ALIAS_FILES = 20
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
        cache[id(function)] = _handed_here(function, facts) + _renamed_callers(function, facts)
    seen = {(id(call)) for call, _ in found}
    found.extend(item for item in cache[id(function)] if id(item[0]) not in seen)
    return found


def _renamed_callers(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    from . import index as project
    from .bindings import own_module_names

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
    #: Files that spell a word but neither import it nor name a module it lives in (yet): looked at again
    #: when a re-export adds a module.
    waiting: Dict[str, str] = {}
    for _ in range(_MAX_REEXPORT_HOPS):
        grown = False
        tails = _module_tails(heads)
        candidates = dict(waiting)
        waiting.clear()
        for word in sorted(words - searched):
            searched.add(word)
            encoded = word.encode("utf-8", "replace")
            for path in project.files_mentioning(word, root):
                key = os.path.abspath(path)
                if key != own and key not in parsed and spells(project.read_bytes(path), encoded):
                    candidates.setdefault(key, word)
        for key, word in sorted(candidates.items(), key=_likeliest_first):
            if len(parsed) >= _MAX_ALIAS_FILES:
                break
            if not _may_reach(project.read_bytes(key), word.encode("utf-8", "replace"), tails):
                waiting[key] = word
                continue
            other = project.module_facts(key, facts.config)
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
        handed = handed_sites(other)
        for name in sorted(names):
            for call in other.calls_by_name.get(name, ()):
                if (other.qualify(call.func) or "") in targets or (
                        cls is not None and name == called and isinstance(call.func, ast.Attribute)
                        and _made_of(call.func.value, other, cls.name)
                        and _method_of_instance(call.func, call, other, cls, facts)):
                    # (``PAYRUN.held()`` with ``PAYRUN = pg.JobMutex(...)``: the method of an instance made of it)
                    found.append((call, other))
            # ``await run_in_threadpool(schema.upgrade_to_head)``: the runner runs it there.
            for call, reference in handed.get(name, ()):
                if (other.qualify(reference) or "") in targets or _method_of_instance(reference, call, other, cls, facts):
                    found.append((call, other))
    return found


def _likeliest_first(candidate: Tuple[str, str]) -> Tuple[int, str]:
    """Files that rename the word on import, then packages' ``__init__`` modules (which re-export), then the
    rest, each in path order."""
    from . import index as project

    path, word = candidate
    encoded = word.encode("utf-8", "replace")
    if any(spells(statement, encoded) and b" as " in statement
           for statement in import_statements(project.read_bytes(path))):
        return 0, path
    return (1 if os.path.basename(path) == "__init__.py" else 2), path


def _made_of(receiver: ast.AST, facts: ModuleFacts, class_name: str) -> bool:
    """A cheap look before the declared types are asked: ``receiver`` is a name bound once (in its function or
    at module level) to a call that names the class (``PAYRUN = pg.JobMutex(...)``, ``Migrator.from_env()``)."""
    from ..analysis.executed_sql import bound_value

    if not isinstance(receiver, ast.Name):
        return False
    value = bound_value(receiver, facts)
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return False
    named = value.func
    while isinstance(named, ast.Attribute) and named.attr != class_name:
        named = named.value
    return (isinstance(named, ast.Attribute) and named.attr == class_name) or (
        isinstance(named, ast.Name) and named.id == class_name)


def _method_of_instance(reference: ast.AST, call: ast.Call, other: ModuleFacts, cls, facts: ModuleFacts) -> bool:
    """``to_thread(Manager.from_settings(s).upgrade)``: a bound method of an object the code declares an instance
    of ``cls`` (the class of the method searched for), however it was made."""
    if cls is None or not isinstance(reference, ast.Attribute) or isinstance(reference.value, ast.Name) and \
            reference.value.id in ("self", "cls"):
        return False
    from .declared_types import owner_classes

    own = os.path.abspath(facts.context.path or "")
    return any(found.name == cls.name and found.lineno == cls.lineno and os.path.abspath(where.context.path or "") == own
               for found, where in owner_classes(reference.value, other, other.enclosing_function(call)))


def _handed_here(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    """The calls of ``function``'s own module that run it because it is handed to them
    (``asyncio.to_thread(upgrade)``, ``threading.Thread(target=self._poll)``, ``Class.method`` handed on)."""
    cls = facts.enclosing_class(function)
    if facts.enclosing_function(function) is not None:
        return []
    found: List[Tuple[ast.Call, ModuleFacts]] = []
    for call, reference in handed_sites(facts).get(function.name, ()):
        if cls is None:
            here = isinstance(reference, ast.Name)
        else:
            head = reference.value if isinstance(reference, ast.Attribute) else None
            here = isinstance(head, ast.Name) and (
                head.id == cls.name or head.id in ("self", "cls") and facts.enclosing_class(call) is cls)
        if here:
            found.append((call, facts))
    return found


def _module_tails(heads: Set[str]) -> Set[bytes]:
    """The last part of each module a head lives in (``steps`` for ``app.steps.prepare``)."""
    return {name.rsplit(".", 2)[-2].encode() for name in heads if name.count(".") >= 1}


def _may_reach(source: bytes, word: bytes, tails: Set[bytes]) -> bool:
    """Whether a file that spells ``word`` can call the function under another name: only through an import
    that names the word (``from app.steps import prepare as prepare_db``, a re-export) or one that names a
    module it lives in (``from app import steps`` ... ``steps.prepare()``) -- a name is resolved through the
    module's imports, and either spells one of those. Asked of the text, so that only such files are parsed."""
    if any(spells(statement, word) for statement in import_statements(source)):
        return True
    return any(spells(source, tail) for tail in tails)


def import_statements(source: bytes) -> Iterator[bytes]:
    """The text of each ``import`` statement: from the start of its line to the end of its parenthesised list,
    or of its line and the lines a backslash continues it onto."""
    at = source.find(b"import")
    while at != -1:
        start = source.rfind(b"\n", 0, at) + 1
        head = source[start:at].strip(b" \t")
        if source[at + 6:at + 7] in (b" ", b"\t", b"(", b"\\") and (not head or head.startswith(b"from")):
            end = at
            opening = source.find(b"(", at)
            line_end = source.find(b"\n", at)
            line_end = len(source) if line_end == -1 else line_end
            if opening != -1 and opening < line_end:
                closing = source.find(b")", opening)
                end = len(source) if closing == -1 else closing
            else:
                end = line_end
                while end < len(source) and source[end - 1:end] == b"\\":
                    following = source.find(b"\n", end + 1)
                    end = len(source) if following == -1 else following
            yield source[start:end]
        at = source.find(b"import", at + 6)


def spells(source: bytes, word: bytes) -> bool:
    """``word`` occurs in ``source`` as a whole identifier (``bytes.find`` and a look at each side: a regular
    expression that starts with ``\\b`` cannot skip ahead, and over a whole project that is slow)."""
    return next(word_places(source, word), None) is not None


def word_places(source: bytes, word: bytes) -> Iterator[int]:
    """Where ``word`` occurs in ``source`` as a whole identifier, in order."""
    at = source.find(word)
    size = len(word)
    while at != -1:
        before = source[at - 1:at]
        after = source[at + size:at + size + 1]
        if not (before.isalnum() or before == b"_") and not (after.isalnum() or after == b"_"):
            yield at
        at = source.find(word, at + 1)
