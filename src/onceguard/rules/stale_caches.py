"""A memo in process memory that a write path refreshes (OG608).

A function that fills a cache on a miss is a memo, silent on its own: every process derives the same value
again.  When another function writes the shared data the value comes from (a row updated, a record saved)
and then puts the new value in the cache, or drops the entry, the code means the cache to follow the change;
only the copy of the process that served the write does.  Every other worker process and replica goes on
answering with what it cached before, for as long as it runs.  A memo whose entries expire (it reads a clock)
is stale for a bounded time at most, which is what such a cache is for; it is left alone.
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts
from ..project import process_state as state
from ..project.summaries import summaries_for
from ..project.wrapped_containers import keyed_by_parameter

#: What a function does to a cache entry when it refreshes it: stores a value, or drops the entry (or all).
_REFRESHES = (state.WRITE_RECORD, state.WRITE_DERIVED, state.WRITE_MARK, "unmark")


def refreshed_after_shared_write(found: state.Accesses, memos: Set[int], deciding: Dict[int, FunctionNode],
                                 word: str, facts: ModuleFacts) -> Optional[Tuple[state.Access, int]]:
    """The write of the cache by a function that is no memo of it and that plainly writes outside the process,
    and a memo it refreshes (its id), when no memo expires its entries; None otherwise.  ``memos``: the
    functions that fill the cache with a value they compute; the getters that hand back the value they store
    are memos too."""
    # (a memo of this process's own objects -- a consumer, a client built here -- mirrors nothing shared: only
    # memos of values read or computed count)
    derived = {id(a.function) for a in found.of_kind(state.WRITE_DERIVED) if a.function is not None}
    memos = (memos & derived) | _getters(found, deciding, word)
    if not memos or any(_reads_a_clock(deciding[key], facts) for key in memos):
        return None
    checked: Set[int] = set()
    for access in found.of_kind(*_REFRESHES):
        writer = access.function
        # (a write path refreshes the entry of the key it is handed; what it writes elsewhere is followed only then)
        if writer is None or id(writer) in memos or id(writer) in checked or not keyed_by_parameter(access.node, writer):
            continue
        checked.add(id(writer))
        effects = summaries_for(facts).effects(writer, facts)
        # (setting shared data to the value handed in is a write the other processes miss as much as any)
        if effects.idempotent or effects.first_other is not None and effects.first_other.plain:
            return access, next(iter(memos))
    return None


def _getters(found: state.Accesses, deciding: Dict[int, FunctionNode], word: str) -> Set[int]:
    """The functions that test the cache and store under a key the value they then return (``value = load(code)``
    … ``self._rates[code] = value`` … ``return value``): a cache's getter, whatever computes the value."""
    found_getters: Set[int] = set()
    for access in found.of_kind(state.WRITE_RECORD, state.WRITE_DERIVED):
        function, node = access.function, access.node
        if function is None or id(function) not in deciding or not isinstance(node, ast.Assign) \
                or not isinstance(node.targets[0], ast.Subscript) or not isinstance(node.value, ast.Name):
            continue
        stored = node.value.id
        if not _read_into(stored, function, word):
            continue
        if any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == stored
               for n in ast.walk(function)):
            found_getters.add(id(function))
    return found_getters


def _reads_a_clock(function: FunctionNode, facts: ModuleFacts) -> bool:
    """The memo reads a clock (``time.monotonic()``, a name bound to one): its entries carry an expiry."""
    clocks = state._clock_names(function, facts)
    return any(state._is_clock(node, facts, clocks) for node in ast.walk(function))


def _read_into(name: str, function: FunctionNode, word: str) -> bool:
    """``name`` is bound in ``function``, besides by a read of the cache itself (which spells ``word``), only to
    what calls hand back that build no object of a class (``cents = conn.execute(...).scalar_one()``, ``rate =
    fetch_rate(code)``; not ``wrapper = Consumer(...)``)."""
    sources = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value.value if isinstance(node.value, ast.Await) else node.value
            if any(isinstance(n, ast.Attribute) and n.attr == word or isinstance(n, ast.Name) and n.id == word
                   for n in ast.walk(value)):
                continue  # (the cache's own entry, read before the miss)
            if not isinstance(value, ast.Call):
                return False
            func = value.func
            sources.append(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return bool(sources) and not any(called[:1].isupper() for called in sources)
