"""The names of the project's functions that may answer whether a claim was won, and of those that may load
rows by their state (``loader_words``), for the prefilter; one pass over the project reads both.

A job that claims through a helper of its project (``with exclusive(key) as got:``, ``if not take_slot(name):``)
spells the helper's name and no word of the claim itself, which the helper's module holds.  Its loud skip log
(OG203) is to be read all the same, so a file that calls such a helper and logs loudly is parsed.  A helper is
a ``def`` whose text, up to the next ``def``, holds a word a claim's code contains; what it really does is read
when the job's module is checked (``ClaimAnalyzer``), so this list only has to hold every helper, not only
helpers.
"""
from __future__ import annotations

import re
from typing import Dict, Set, Tuple

import ahocorasick_rs

from ..config import Config
from . import index as project

#: ``def name(`` at a line's start (after indentation and ``async``): where one def's text begins.
_DEF = re.compile(rb"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(", re.MULTILINE)
#: Words the claim itself is written with, inside a helper whose name need not say it: a try-lock, a Redis
#: ``SET NX``, a skip-locked pickup, a conditional update's row count, a non-blocking acquire.  ``claim`` and
#: ``lock(`` are left out: a helper called by them is found by the prefilter's own words already.
_CLAIM_BODY_WORDS: Tuple[bytes, ...] = (
    b"advisory", b"nx=", b"setnx", b"skip_locked", b"SKIP LOCKED", b"skip locked", b"rowcount", b"acquire(",
    b"run_once", b"run_exclusive", b"locked_run", b"cache.add(",
)
_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_CLAIM_BODY_WORDS))

_words_by_root: Dict[Tuple[str, Tuple[bytes, ...]], tuple] = {}


def claim_helper_words(config: Config, beside: Tuple[bytes, ...] = ()) -> tuple:
    """Each name a project def that may answer a claim is called by, followed by ``(``; with ``beside``, a
    trigger per name and word of it (``(b"exclusive(", b".warning(")``).  Once per project: the prefilter
    asks for every file."""
    root = config.root
    if not root:
        return ()
    key = (root, beside)
    cached = _words_by_root.get(key)
    if cached is None:
        names = _words_by_root.get((root, ()))
        if names is None:
            names = _words_by_root[(root, ())] = _claim_helper_words(root)
        cached = _words_by_root[key] = tuple((name, word) for name in names for word in beside) if beside else names
    return cached


def _claim_helper_words(root: str) -> Tuple[bytes, ...]:
    names: Set[bytes] = set()
    loaders: Set[bytes] = set()
    for path in project.project_files(root):
        source = project.read_bytes(path)
        if _AUTOMATON.find_matches_as_indexes(source):
            names.update(_claiming_defs(source))
        if _STATE_AUTOMATON.find_matches_as_indexes(source):
            loaders.update(_loading_defs(source))
    _loaders_by_root[root] = tuple(sorted((name + b"(", b"for ") for name in loaders))
    return tuple(sorted(name + b"(" for name in names))


# -- loaders: defs that select rows by their state and return them (read in the same pass) ----------------
#: A state column compared in a query (``Packet.status == "queued"``, ``status="queued"``, ``WHERE status =``).
_STATE_WORDS: Tuple[bytes, ...] = (b".status ==", b"status=", b"status =", b".state ==", b"state=", b"state =",
                                   b"_at.is_(None)", b"_at__isnull", b"_at IS NULL")
_STATE_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_STATE_WORDS))
_loaders_by_root: Dict[str, tuple] = {}


def loader_words(config: Config) -> tuple:
    """``(name(, for )`` for each project def whose text selects by a state column and returns: a file that calls
    one in a loop may hand the rows it picked to code that moves them (OG302).  Once per project."""
    root = config.root
    if not root:
        return ()
    if root not in _loaders_by_root:
        claim_helper_words(config)  # (one pass over the project reads both)
    return _loaders_by_root.get(root, ())


#: Query words: a loader runs a query in its own text.
_QUERY_WORDS: Tuple[bytes, ...] = (b"select(", b".filter(", b".where(", b"SELECT ", b".objects.")
_QUERY_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_QUERY_WORDS))


def _loading_defs(source: bytes) -> Set[bytes]:
    """Module-level defs (not methods: a method's name is too common a word to search callers by) whose text
    queries rows by a state column and returns."""
    matches = list(_DEF.finditer(source))
    found: Set[bytes] = set()
    for index, match in enumerate(matches):
        if match.group(0)[:1] not in (b"d", b"a"):
            continue  # indented: a method or a nested def
        end = matches[index + 1].start() if index + 1 < len(matches) else len(source)
        text = source[match.end():end]
        if b"return" in text and _STATE_AUTOMATON.find_matches_as_indexes(text) \
                and _QUERY_AUTOMATON.find_matches_as_indexes(text):
            found.add(match.group(1))
    return found


def _claiming_defs(source: bytes) -> Set[bytes]:
    """The defs that hand back what a claim answered: a ``return``/``yield`` on the claim's own line
    (``return bool(cur.execute("SELECT pg_try_advisory_lock(...)")...)``), or of the name the claim's line
    assigns (``got = r.set(key, 1, nx=True, ex=60)`` ... ``return got``)."""
    matches = list(_DEF.finditer(source))
    found: Set[bytes] = set()
    for index, match in enumerate(matches):
        name = match.group(1)
        if name.startswith(b"__"):
            continue  # a dunder is called by its class's name or by the language, never by its own
        end = matches[index + 1].start() if index + 1 < len(matches) else len(source)
        text = source[match.end():end]
        if _AUTOMATON.find_matches_as_indexes(text) and _answers_claim(text):
            found.add(name)
    return found


_ASSIGNED = re.compile(rb"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]*)?=[^=]")


def _answers_claim(text: bytes) -> bool:
    """A claim's line returns or yields, or assigns a name that a ``return``/``yield`` hands back, directly or
    through names computed from it (``row = cur.execute(...).fetchone()``, ``got = bool(row and row[0])``,
    ``yield got``)."""
    lines = text.splitlines()
    held: Set[bytes] = set()
    for line in lines:
        claims = bool(_AUTOMATON.find_matches_as_indexes(line))
        if claims and (b"return" in line or b"yield" in line):
            return True
        assigned = _ASSIGNED.match(line)
        if assigned is not None and (claims or any(_word(name).search(line) for name in held)):
            held.add(assigned.group(1))
        elif held and (b"return" in line or b"yield" in line) and any(_word(name).search(line) for name in held):
            return True
    return False


def _word(name: bytes) -> "re.Pattern[bytes]":
    return re.compile(rb"\b" + re.escape(name) + rb"\b")


def _clear() -> None:
    _words_by_root.clear()
    _loaders_by_root.clear()


project.on_clear(_clear)
