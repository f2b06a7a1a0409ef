"""Which modules of the project a lock's key can pass through, read off their bytes once per project.

A lock helper is a def whose own text sends advisory-lock SQL (``def try_slot(lock_id): ...
pg_try_advisory_xact_lock(%s)``).  A module that calls one, or imports it (under an alias too), hands it a key; a
module taking advisory locks, or handing a helper its key, may compute that key with a def of yet another module.
A per-process value (``hash()``, a uuid, a pid) in any of them makes each replica lock a different key, so OG104
reads them all, and only them: the prefilter asks ``shares_lock_names`` of a module with no lock word, and
``lock_key_files`` bounds the modules whose calls of a key-computing def are read.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Set

import ahocorasick_rs

from . import index as project
from .prefilter_words import BUILTIN_METHODS, defs_of

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_CALLED = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
#: ``from module import a, b as c`` / ``from module import (a, b)``: the names it brings in (one group).
_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+[A-Za-z0-9_.]+[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_WORD = "advisory"


class AdvisoryNames(NamedTuple):
    helpers: FrozenSet[str]  # the lock helpers' names
    calling: Optional[object]  # automaton of ``helper(`` and ``helper as``: how a module calls or imports one
    files: FrozenSet[str]  # modules taking advisory locks, and modules calling or importing a lock helper
    used: FrozenSet[bytes]  # the names those modules call or import


_by_root: Dict[str, AdvisoryNames] = {}
project.on_clear(_by_root.clear)


def _used(source: bytes) -> Set[bytes]:
    """The names a text calls or imports by name (an alias hides the name from its calls)."""
    used = set(_CALLED.findall(source))
    for names in _FROM_IMPORT.findall(source):
        used.update(_IDENTIFIER.findall(names))
    return used


def advisory_names(root: str) -> AdvisoryNames:
    cached = _by_root.get(root)
    if cached is not None:
        return cached
    locking = project.files_mentioning(_WORD, root)
    helpers: Set[bytes] = set()
    for path in locking:
        helpers.update(found.name for found, text in defs_of(project.read_bytes(path)) if _WORD.encode() in text)
    helpers = {name for name in helpers if not name.startswith(b"__")} - BUILTIN_METHODS
    spellings = [name + ending for name in sorted(helpers) for ending in (b"(", b" as ")]
    calling = ahocorasick_rs.BytesAhoCorasick(spellings) if spellings else None
    own = set(locking)
    handing: List[str] = []
    if calling is not None:
        handing = [path for path in project.project_files(root)
                   if path not in own and calling.find_matches_as_indexes(project.read_bytes(path))]
    used: Set[bytes] = set()
    for path in [*locking, *handing]:
        used.update(_used(project.read_bytes(path)))
    found = _by_root[root] = AdvisoryNames(frozenset(name.decode("ascii", "replace") for name in helpers), calling,
                                           frozenset([*locking, *handing]), frozenset(used - BUILTIN_METHODS))
    return found


def lock_key_files(root: str) -> FrozenSet[str]:
    """The modules a lock's key is handed in: those taking advisory locks, and those calling a lock helper."""
    return advisory_names(root).files


def lock_helper_names(root: str) -> FrozenSet[str]:
    return advisory_names(root).helpers


def shares_lock_names(root: str, source: bytes, returns_key: Callable[[bytes, Set[bytes]], Set[bytes]]) -> bool:
    """The text calls or imports a lock helper (it hands one a key), or one of its defs that ``returns_key`` keeps
    (of those named where a lock's key is handed) is called or imported there (its value may be that key)."""
    if not root:
        return False
    names = advisory_names(root)
    if not names.files:
        return False
    if names.calling is not None and names.calling.find_matches_as_indexes(source):
        return True
    named = names.used.intersection(found.name for found, _ in defs_of(source))
    return bool(named) and bool(returns_key(source, named))
