"""Prefilter words the project itself gives, read in one pass over its bytes: the names of its functions that
may answer whether a claim was won (``claim_helper_words``), of those that may load rows by their state
(``loader_words``) or return rows a filter picks while taking nothing to narrow them (``bare_loader_words``),
and of its classes that may keep per-key counts against a clock (``counting_class_words``).

A job that claims through a helper of its project (``with exclusive(key) as got:``, ``if not take_slot(name):``)
spells the helper's name and no word of the claim itself, which the helper's module holds.  Its loud skip log
(OG203) is to be read all the same, so a file that calls such a helper and logs loudly is parsed.  A helper is
a ``def`` whose text, up to the next ``def``, holds a word a claim's code contains; what it really does is read
when the job's module is checked (``ClaimAnalyzer``), so this list only has to hold every helper, not only
helpers.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

import ahocorasick_rs

from ..analysis.context import FileContext
from ..config import Config
from ..knowledge import orm, process_local, process_state
from . import index as project

#: ``def name(`` anywhere: a pattern that starts with a literal is searched for quickly, one anchored at each line
#: start is not; that it begins its line is checked on each match (``_defs``).
_DEF_WORD = re.compile(rb"def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
_last_defs: list = [None, ()]


class _Def(NamedTuple):
    start: int  # where ``def`` (or ``async``) begins
    end: int  # after the opening parenthesis
    name: bytes
    top_level: bool  # at column 0: a module-level def


def _defs(source: bytes) -> Tuple[_Def, ...]:
    """The ``def`` statements of a text, in order (nested ones and methods included); the last text's are kept,
    since each family of a pass asks for the same file's."""
    if _last_defs[0] is source:
        return _last_defs[1]
    found = []
    for match in _DEF_WORD.finditer(source):
        at = match.start()
        line = source.rfind(b"\n", 0, at) + 1
        head = source[line:at]
        words = head.split()
        if words not in ([], [b"async"]) or (words and head[-1:] not in (b" ", b"\t")):
            continue  # not the statement's first word (``undef(``, ``x = def_(``)
        indented = head[:1] in (b" ", b"\t")
        found.append(_Def(line + len(head) - len(head.lstrip(b" \t")), match.end(), match.group(1), not indented))
    _last_defs[0], _last_defs[1] = source, tuple(found)
    return _last_defs[1]


def defs_of(source: bytes):
    """(def, its text up to the next def) for each def of the text."""
    defs = _defs(source)
    for index, found in enumerate(defs):
        yield found, source[found.end:defs[index + 1].start if index + 1 < len(defs) else len(source)]
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
            names = _words_by_root[(root, ())] = _scan_project(root, config)
        cached = _words_by_root[key] = tuple((name, word) for name in names for word in beside) if beside else names
    return cached


def _scan_project(root: str, config: Config) -> Tuple[bytes, ...]:
    """One pass over the project's files fills every family's words for ``root``; returns the claim helpers'."""
    names: Set[bytes] = set()
    loaders: Set[bytes] = set()
    bare: Set[bytes] = set()
    counting: Set[bytes] = set()
    lock_helpers: Set[bytes] = set()
    sql_constants: Set[bytes] = set()
    column_writers: Set[bytes] = set()
    store_readers: Set[bytes] = set()
    savers: Set[bytes] = set()
    lock_classes: Set[bytes] = set()
    library_lock_helpers: Set[bytes] = set()
    wrappers: Set[bytes] = set()
    kept_copies: Set[bytes] = set()
    for path in project.project_files(root):
        source = project.read_bytes(path)
        # One pass of one automaton over the file finds the words of every family.
        found = {_FAMILY_OF_WORD[index] for index, _, _ in _FAMILY_AUTOMATON.find_matches_as_indexes(source, overlapping=True)}
        if not found:
            continue
        here = []
        if _CLAIM in found:
            here.append((names, _claiming_defs(source)))
        if _STATE in found:
            here.append((loaders, _loading_defs(source)))
            here.append((sql_constants, _state_select_constants(source)))
        if _FILTER in found:
            here.append((bare, _bare_loading_defs(source)))
        if _CONTAINER in found and _CLOCK in found:
            here.append((counting, _counting_classes(source)))
        if _SQL_WRITE in found:
            here.append((column_writers, {defined.name for defined, text in defs_of(source)
                                          if b"UPDATE " in text and b" SET " in text}))
        if _STORE in found:
            # (a def that writes back itself is judged in its own module: only readers handing a value on)
            here.append((store_readers, {defined.name for defined, text in defs_of(source)
                                         if b"return" in text and any(word in text for word in _STORE_READ_WORDS)
                                         and not any(word in text for word in _STORE_WRITE_WORDS)}))
        if _COLUMN_READ in found:
            here.append((kept_copies, _kept_copy_words(source)))
        if _SAVE in found:
            here.append((savers, {defined.name for defined, text in defs_of(source) if _saves_a_parameter(text)}))
        if _LOCK in found:
            here.append((lock_helpers, {defined.name for defined, text in defs_of(source)
                                        if defined.top_level and b"return" in text}))
            here.append((lock_classes, _lock_classes(source)))
        if _LIBRARY_LOCK in found:
            here.append((library_lock_helpers, {defined.name for defined, text in defs_of(source)
                                                if defined.top_level and _returns_a_library_lock(text)}))
        if _MEMBERSHIP in found:
            here.append((wrappers, _wrapping_classes(source)))
        if any(defs for _, defs in here) and _deployed(path, config):
            for family, defs in here:  # (test code and migrations are no helpers of the deployed code)
                family.update(defs)
    names -= BUILTIN_METHODS
    loaders -= BUILTIN_METHODS
    _loaders_by_root[root] = tuple(sorted((name + b"(", b"for ") for name in loaders))
    _bare_loaders_by_root[root] = tuple(sorted((name + b"()", b"for ") for name in bare))
    # (``Name(`` for a call, ``Name as`` for an import under an alias, whose calls spell the alias)
    _counting_classes_by_root[root] = tuple(sorted(name + ending for name in counting for ending in (b"(", b" as ")))
    _lock_helpers_by_root[root] = tuple(sorted(name + b"(" for name in lock_helpers - BUILTIN_METHODS))
    _lock_classes_by_root[root] = tuple(sorted(lock_classes))
    _library_lock_helpers_by_root[root] = tuple(sorted(name + b"(" for name in library_lock_helpers - BUILTIN_METHODS))
    _wrapping_classes_by_root[root] = tuple(sorted(wrappers))
    _wrapping_names_by_root[root] = frozenset(name.decode("ascii", "replace") for name in wrappers)
    _sql_constants_by_root[root] = tuple(sorted(sql_constants))
    _column_writers_by_root[root] = tuple(sorted((name + b"(", change) for name in column_writers - BUILTIN_METHODS
                                                 for change in orm.ARITHMETIC_WORDS))
    _store_readers_by_root[root] = tuple(sorted((name + b"(", write) for name in store_readers - BUILTIN_METHODS
                                                for write in _STORE_WRITE_WORDS))
    _row_savers_by_root[root] = tuple(sorted((name + b"(", change) for name in savers - BUILTIN_METHODS
                                             for change in orm.ARITHMETIC_WORDS))
    _kept_copies_by_root[root] = tuple(sorted((word, b"UPDATE ") for word in kept_copies - BUILTIN_METHODS))
    _kept_copy_names_by_root[root] = frozenset(_names(kept_copies - BUILTIN_METHODS))
    _row_saver_names_by_root[root] = frozenset(name.decode("ascii", "replace") for name in savers - BUILTIN_METHODS)
    return tuple(sorted(name + b"(" for name in names))


def _read_once(config: Config, words_by_root: Dict[str, tuple]) -> tuple:
    root = config.root
    if not root:
        return ()
    if root not in words_by_root:
        claim_helper_words(config)  # (one pass over the project reads every family)
    return words_by_root.get(root, ())


# -- loaders: defs that select rows by their state and return them (read in the same pass) ----------------
#: A state column compared in a query (``Packet.status == "queued"``, ``status="queued"``, ``WHERE status =``).
_STATE_WORDS: Tuple[bytes, ...] = (b".status ==", b"status=", b"status =", b".state ==", b"state=", b"state =",
                                   b"_at.is_(None)", b"_at__isnull", b"_at IS NULL")
_STATE_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_STATE_WORDS))
_loaders_by_root: Dict[str, tuple] = {}


def loader_words(config: Config) -> tuple:
    """``(name(, for )`` for each project def whose text selects by a state column and returns: a file that calls
    one in a loop may hand the rows it picked to code that moves them (OG302).  Once per project."""
    return _read_once(config, _loaders_by_root)


#: Query words: a loader runs a query in its own text.
_QUERY_WORDS: Tuple[bytes, ...] = (b"select(", b".filter(", b".where(", b"SELECT ", b".objects.")
_QUERY_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_QUERY_WORDS))


def _loading_defs(source: bytes) -> Set[bytes]:
    """Module-level defs (not methods: a method's name is too common a word to search callers by) whose text
    queries rows by a state column and returns."""
    found: Set[bytes] = set()
    for defined, text in defs_of(source):
        if not defined.top_level:
            continue  # indented: a method or a nested def
        if b"return" in text and _STATE_AUTOMATON.find_matches_as_indexes(text) \
                and _QUERY_AUTOMATON.find_matches_as_indexes(text):
            found.add(defined.name)
    return found


# -- SQL kept in constants: a module of queries whose SELECT picks rows by their state ----------------------------
#: ``NAME = """...`` / ``NAME = "...`` at a line's start (a module-level constant), up to where its text ends.
_STRING_CONSTANT = re.compile(rb'^([A-Z][A-Z0-9_]{3,})[ \t]*(?::[^=\n]*)?=[ \t]*\(?\s*[rRuU]?("""|\'\'\'|"|\')',
                              re.MULTILINE)
_sql_constants_by_root: Dict[str, tuple] = {}


def sql_constant_words(config: Config) -> tuple:
    """The names of the project's module-level constants whose SQL selects rows by a state column: a file that
    sends one (``conn.fetch(queries.FETCH_PENDING)``) picks rows with no word of the query in its own text
    (OG302).  Once per project."""
    return _read_once(config, _sql_constants_by_root)


def _state_select_constants(source: bytes) -> Set[bytes]:
    found: Set[bytes] = set()
    for match in _STRING_CONSTANT.finditer(source):
        quote = match.group(2)
        end = source.find(quote, match.end())
        text = source[match.end():end if end >= 0 else len(source)]
        if b"SELECT" in text.upper() and b"WHERE" in text.upper() and _STATE_AUTOMATON.find_matches_as_indexes(text):
            found.add(match.group(1))
    return found


# -- bare loaders: defs that take nothing to narrow their rows and return what a filter picks ---------------
#: A filter of a query chain (``.filter(``, ``.filter_by(``, ``.where(``, ``.exclude(``).
_FILTER_WORDS: Tuple[bytes, ...] = (b".filter(", b"filter_by(", b".where(", b".exclude(")
_FILTER_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(_FILTER_WORDS))
#: ``def name()`` / ``def name(self)`` / ``def name(cls)`` (annotated or not) at a line's start: a def its callers
#: can hand nothing.
_BLANK = rb"(?:\s|#[^\n]*)*"  # (blanks and comments)
_BARE_PARAMETERS = re.compile(_BLANK + rb"(?:(?:self|cls)" + _BLANK + rb"(?::[^,()=#]*)?)?" + _BLANK + rb",?" + _BLANK
                              + rb"\)")
_CLASS_LINE = re.compile(rb"\n[ \t]*class[ \t]")
_bare_loaders_by_root: Dict[str, tuple] = {}


def bare_loader_words(config: Config) -> tuple:
    """``(name(), for )`` for each project def or method that takes nothing but ``self``/``cls`` and returns what a
    filter picks (the rows of a model, as the rule reads it): a file that loops over what a call of it hands back may hand each row to code in
    another module that resets it (OG610), with no word of the query or the write in its own text.  Once per
    project."""
    return _read_once(config, _bare_loaders_by_root)


#: Methods of the built-in containers and strings (``mapping.items()``, ``seen.add(x)``, ``d.update(...)``) are on
#: almost every page of Python: a project def of the same name would admit nearly every file as its caller (a
#: call of it is read all the same when its module has another word of the rule).
BUILTIN_METHODS = frozenset(name.encode() for kind in (dict, list, set, str, bytes, tuple) for name in dir(kind))


def _deployed(path: str, config: Config) -> bool:
    """Neither test code nor a migration: a def a deployed loop may call."""
    context = FileContext(path, config, cross_file=True)
    return not context.is_test and not context.is_migration


def _bare_loading_defs(source: bytes) -> Set[bytes]:
    found: Set[bytes] = set()
    for defined, text in defs_of(source):
        name = defined.name
        if name.startswith(b"__") or name in BUILTIN_METHODS or not _BARE_PARAMETERS.match(source, defined.end):
            continue  # a dunder is called by the language, not by its name
        end = _CLASS_LINE.search(text)  # (a class that follows is not the def's text)
        if end is not None:
            text = text[:end.start()]
        if b"return" in text and _FILTER_AUTOMATON.find_matches_as_indexes(text):
            found.add(name)
    return found


# -- counting classes: classes that keep containers on their instances and read a clock ----------------------
_CLOCK_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(list(process_local.CLOCK_WORDS))
_CLASS = re.compile(rb"^class[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
#: Where a class's text ends: the next statement at the module's top level.
_TOP_LEVEL = re.compile(rb"^(?:class|def|async|[A-Za-z_][A-Za-z0-9_.]*[ \t]*(?::[^=\n]*)?=)", re.MULTILINE)
#: ``self.name = <a container>`` (a type annotation allowed).
_SELF_CONTAINER = re.compile(
    rb"self\.[A-Za-z_][A-Za-z0-9_]*[ \t]*(?::[^=\n]*)?=[ \t]*(?:\{\}|\[\]|set\(\)|dict\(\)|list\(\)|"
    rb"(?:collections\.)?(?:defaultdict|deque|Counter|OrderedDict)\(|[A-Za-z_.]*Cache\()")
_counting_classes_by_root: Dict[str, tuple] = {}


_lock_helpers_by_root: Dict[str, tuple] = {}
_column_writers_by_root: Dict[str, tuple] = {}


def column_writer_words(config: Config) -> tuple:
    """``(name(, change)`` for each def (methods included) whose text sends ``UPDATE ... SET``: a module that
    calls one with a value it computed may write back what another helper read (OG301, ``sql_helpers``), with
    no word of the SQL in its own text.  Once per project."""
    return _read_once(config, _column_writers_by_root)


#: A module that keeps a Redis client (or a cache): its defs may read a value and hand it back.
_STORE_CLIENT_WORDS: Tuple[bytes, ...] = (b"redis", b"Redis", b"cache")
#: The reads (``redis_clients.READS``) and writes (``WRITES``, ``MEMBER_MAPPING_WRITES``) a value read back and
#: written is spelled with.
_STORE_READ_WORDS: Tuple[bytes, ...] = (b".get(", b".hget(", b".aget(", b".zscore(")
_STORE_WRITE_WORDS: Tuple[bytes, ...] = (b".set(", b".hset(", b".setex(", b".psetex(", b".aset(", b".zadd(")
_store_readers_by_root: Dict[str, tuple] = {}


def store_reader_words(config: Config) -> tuple:
    """``(name(, write)`` for each def (methods included) of a module that keeps a Redis client or a cache, whose
    text reads a key and returns: a module that writes a value computed from what it returns reads and writes
    back with no read of its own in its text (OG301, ``stores``).  Once per project."""
    return _read_once(config, _store_readers_by_root)


#: A Django instance written back: ``card.save(...)``, ``await card.asave()``.
_SAVE_WORDS: Tuple[bytes, ...] = (b".save(", b".asave(")
#: A parameter's name, read off the text after a def's opening parenthesis: ``self, card, *, fields=None):``.
_PARAMETER_NAME = re.compile(rb"\s*\**([A-Za-z_][A-Za-z0-9_]*)")
_row_savers_by_root: Dict[str, tuple] = {}
_row_saver_names_by_root: Dict[str, FrozenSet[str]] = {}


def row_saver_words(config: Config) -> tuple:
    """``(name(, change)`` for each def (methods included) that saves an instance it is handed
    (``def keep_stamps(self, card): card.save(...)``): a module that changes a row and hands it to one writes it
    back with no ``save`` in its own text (OG301, ``changes._stores_the_handed_row``).  Once per project."""
    return _read_once(config, _row_savers_by_root)


def row_saver_names(config: Config) -> FrozenSet[str]:
    """The names of the defs ``row_saver_words`` is made of."""
    return _read_once(config, _row_saver_names_by_root) or frozenset()


def row_savers_for(facts) -> FrozenSet[str]:
    """``row_saver_names`` for a whole-project run; a file checked alone (flake8, an editor) knows only its own
    defs, and reads no other file."""
    return _project_or_own(facts, row_saver_names, "row-savers", lambda source: {
        defined.name for defined, text in defs_of(source) if _saves_a_parameter(text)} - BUILTIN_METHODS)


def _saves_a_parameter(text: bytes) -> bool:
    if not any(word in text for word in _SAVE_WORDS):
        return False
    closing = text.find(b")")  # (a def's text begins after its opening parenthesis)
    if closing < 0:
        return False
    for part in text[:closing].split(b","):
        name = _PARAMETER_NAME.match(part)
        if name is not None and name.group(1) not in (b"self", b"cls") and any(
                name.group(1) + word in text for word in _SAVE_WORDS):
            return True
    return False


# -- values kept in memory: seeded by a SELECT and changed with arithmetic (read in the same pass) --------------
#: ``self.views[pid] += 1``, ``totals[key] = totals.get(key, 0) + n``, ``self.total -= 1``: a kept value (an entry of
#: a container, or an attribute) changed with arithmetic; the group is the value as spelled.
# (anchored at a statement's start: tried at every identifier of a file, the search cost a second per run)
_KEPT_CHANGE = re.compile(rb"^[ \t]*(self\.[A-Za-z_][A-Za-z0-9_]*(?=[\[ \t=+*-])|[A-Za-z_][A-Za-z0-9_]*(?=\[))"
                          rb"(?:\[[^\]\n]*\])?[ \t]*(?:[-+*]=|=[^=\n][^\n]*[ \t][-+*][ \t])", re.MULTILINE)
_kept_copies_by_root: Dict[str, tuple] = {}
_kept_copy_names_by_root: Dict[str, FrozenSet[str]] = {}


def kept_copy_words(config: Config) -> tuple:
    """``(word, UPDATE )`` for each name by which another module may read a value a module of the project keeps in
    memory, seeds from a SELECT and changes with arithmetic (the kept attribute or top-level name, or a def of that
    module that returns): a module sending an UPDATE with what it reads there writes back a stale copy of the column
    with no SELECT in its own text (OG301, ``kept_copies``).  Once per project."""
    return _read_once(config, _kept_copies_by_root)


def kept_copy_names(config: Config) -> FrozenSet[str]:
    """The names ``kept_copy_words`` is made of (``pending``, ``snapshot``): the only names through which another
    module can read a kept copy."""
    return _read_once(config, _kept_copy_names_by_root) or frozenset()


def kept_value_names(source: bytes) -> FrozenSet[str]:
    """The same names for one module's text."""
    return frozenset(_names(_kept_copy_words(source)))


def _names(words: Set[bytes]) -> Set[str]:
    return {word.rstrip(b"(").decode("ascii", "replace") for word in words}


def _kept_copy_words(source: bytes) -> Set[bytes]:
    kept = {match.group(1) for match in _KEPT_CHANGE.finditer(source)}
    if not kept:
        return set()
    words = {name.rsplit(b".", 1)[-1] for name in kept if len(name.rsplit(b".", 1)[-1]) > 2}
    words.update(defined.name + b"(" for defined, text in defs_of(source)
                 if b"return" in text and any(name in text for name in kept))
    return words


# -- defs that hand back a lock library's lock (read in the same pass) ---------------------------------------------
#: A lock library's lock made in a def's text: a Redis client's ``.lock(``, redis-py's or python-redis-lock's or
#: portalocker's ``Lock(``, pottery's ``Redlock(``, django-pglocks' ``advisory_lock(``, sqlalchemy-dlock's makers.
_LIBRARY_LOCK_WORDS: Tuple[bytes, ...] = (b".lock(", b"Lock(", b"Redlock(", b"advisory_lock(", b"sadlock(")
_library_lock_helpers_by_root: Dict[str, tuple] = {}


#: ``lock = client.lock(...)``: a name bound to a lock the def makes, which it may return by that name.
_BOUND_LIBRARY_LOCK = re.compile(rb"(\w+)[ \t]*=[^\n=]*(?:" + b"|".join(map(re.escape, _LIBRARY_LOCK_WORDS)) + rb")")


def _returns_a_library_lock(text: bytes) -> bool:
    """The def returns a lock it makes: on the ``return`` line, or bound to a name it returns."""
    lines = [line.strip() for line in text.splitlines()]
    if any(line.startswith(b"return ") and any(word in line for word in _LIBRARY_LOCK_WORDS) for line in lines):
        return True
    returned = {line[len(b"return "):].strip() for line in lines if line.startswith(b"return ")}
    return any(bound.group(1) in returned for bound in _BOUND_LIBRARY_LOCK.finditer(text))


def library_lock_helper_words(config: Config) -> tuple:
    """``name(`` for each module-level def that returns a lock library's lock it makes (``def named_lock(name):
    return client.lock(f"lock:{name}", timeout=60)``): a job that enters ``with named_lock("sync"):`` may spell no
    word of the library (OG103).  Once per project."""
    return _read_once(config, _library_lock_helpers_by_root)


def lock_helper_words(config: Config) -> tuple:
    """``name(`` for each module-level def that returns, in a module that makes thread or asyncio locks: it may
    hand back one of them (``account_lock(account_id)`` returning ``_locks[account_id]``), entered by a module
    whose own text names no lock (OG606).  Once per project."""
    return _read_once(config, _lock_helpers_by_root)


_lock_classes_by_root: Dict[str, tuple] = {}


def lock_class_words(config: Config) -> tuple:
    """``Name`` for each module-level class of the project whose text makes thread or asyncio locks (a registry
    handing out one per key): a module holding one (``locks: KeyedLocks``) may enter the lock its method hands
    back (``async with self._locks.get(key):``) with no word of a lock in its own text (OG606).  Once per
    project."""
    return _read_once(config, _lock_classes_by_root)


#: ``lock = asyncio.Lock()`` (any lock constructor), ``return self._locks.setdefault(key, Lock())``, and a
#: ``defaultdict(asyncio.Lock)`` read back by ``return self._locks[key]``.
_MADE_LOCK = re.compile(rb"(\w+)[ \t]*=[ \t]*[\w.]*(?:Lock|Semaphore|Condition)\(")
_RETURNED_SETDEFAULT_LOCK = re.compile(rb"return [^\n]*setdefault\([^\n]*(?:Lock|Semaphore|Condition)\(")
_LOCK_DEFAULTDICT = re.compile(rb"defaultdict\([\w.]*(?:Lock|Semaphore|Condition)\)")
_RETURNED_ITEM = re.compile(rb"return [\w.]+\[")


def _hands_out_kept_locks(text: bytes) -> bool:
    """A class's text makes a lock, keeps it under a key and hands it back (a registry of one lock per key)."""
    if _RETURNED_SETDEFAULT_LOCK.search(text) or (_LOCK_DEFAULTDICT.search(text) and _RETURNED_ITEM.search(text)):
        return True
    for made in _MADE_LOCK.finditer(text):
        name = re.escape(made.group(1))
        if re.search(rb"\] = " + name + rb"\b", text) and re.search(rb"return " + name + rb"\b", text):
            return True
    return False


def _lock_classes(source: bytes) -> Set[bytes]:
    found: Set[bytes] = set()
    for match in _CLASS.finditer(source):
        end = _TOP_LEVEL.search(source, match.end())
        text = source[match.end():end.start() if end else len(source)]
        if _hands_out_kept_locks(text):
            found.add(match.group(1))
    return found


def counting_class_words(config: Config) -> tuple:
    """``Name(`` and ``Name as`` for each module-level class of the project that keeps containers on its instances
    and reads a clock: a module that makes one at its top level (``limiter = SlidingWindow(5, 60)``) may hold a limiter of
    per-process counts (OG604) whose words are all in the class's module.  Once per project."""
    return _read_once(config, _counting_classes_by_root)


def _counting_classes(source: bytes) -> Set[bytes]:
    found: Set[bytes] = set()
    for match in _CLASS.finditer(source):
        end = _TOP_LEVEL.search(source, match.end())
        text = source[match.end():end.start() if end else len(source)]
        if _SELF_CONTAINER.search(text) and _CLOCK_AUTOMATON.find_matches_as_indexes(text):
            found.add(match.group(1))
    return found


_MEMBERSHIP_WORD = b"def __contains__("
_wrapping_classes_by_root: Dict[str, tuple] = {}
_wrapping_names_by_root: Dict[str, FrozenSet[str]] = {}


def container_class_words(config: Config) -> tuple:
    """``Name`` for each module-level class of the project that keeps a container on its instances and answers
    ``key in instance`` (a "seen" ledger of its own): a module holding one (``seen: SeenIds``) tests and marks
    process memory with no word of a container in its own text (OG608).  Once per project."""
    return _read_once(config, _wrapping_classes_by_root)


def container_class_names(config: Config) -> FrozenSet[str]:
    """The names of ``container_class_words``, as text."""
    return _read_once(config, _wrapping_names_by_root) or frozenset()


def container_classes_for(facts) -> FrozenSet[str]:
    """``container_class_names`` for a whole-project run; a file checked alone knows only its own classes."""
    return _project_or_own(facts, container_class_names, "container-classes", _wrapping_classes)


def _project_or_own(facts, of_project: Callable[[Config], FrozenSet[str]], family: str,
                    in_text: Callable[[bytes], Set[bytes]]) -> FrozenSet[str]:
    """The names a family's project-wide pass finds (``of_project``), or for a file judged alone those its own
    text holds (``in_text``): such a check reads no other file."""
    if facts.context.cross_file:
        return of_project(facts.config)
    return facts.cached(f"prefilter:own-{family}", lambda _: frozenset(
        name.decode("ascii", "replace") for name in in_text(facts.cached("prefilter:own-source", _joined_lines))))


def _joined_lines(facts) -> bytes:
    return "\n".join(facts.lines).encode("utf-8")


def _wrapping_classes(source: bytes) -> Set[bytes]:
    found: Set[bytes] = set()
    for match in _CLASS.finditer(source):
        end = _TOP_LEVEL.search(source, match.end())
        text = source[match.end():end.start() if end else len(source)]
        if _MEMBERSHIP_WORD in text and _SELF_CONTAINER.search(text):
            found.add(match.group(1))
    return found


# -- defs by what their text holds -----------------------------------------------------------------------
def returning_defs(source: bytes, words: "ahocorasick_rs.BytesAhoCorasick",
                   among: Optional[Set[bytes]] = None) -> Set[bytes]:
    """The defs (``among`` these names, when given) whose text (up to the next def) returns and holds one of
    ``words``."""
    return {defined.name for defined, text in defs_of(source) if (among is None or defined.name in among)
            and b"return" in text and words.find_matches_as_indexes(text)}


def _claiming_defs(source: bytes) -> Set[bytes]:
    """The defs that hand back what a claim answered: a ``return``/``yield`` on the claim's own line
    (``return bool(cur.execute("SELECT pg_try_advisory_lock(...)")...)``), or of the name the claim's line
    assigns (``got = r.set(key, 1, nx=True, ex=60)`` ... ``return got``)."""
    found: Set[bytes] = set()
    for defined, text in defs_of(source):
        if defined.name.startswith(b"__"):
            continue  # a dunder is called by its class's name or by the language, never by its own
        if _AUTOMATON.find_matches_as_indexes(text) and _answers_claim(text):
            found.add(defined.name)
    return found


_ASSIGNED = re.compile(rb"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]*)?=[^=]")


def _answers_claim(text: bytes) -> bool:
    """A claim's line returns or yields, or assigns a name that a ``return``/``yield`` hands back, directly or
    through names computed from it (``row = cur.execute(...).fetchone()``, ``got = bool(row and row[0])``,
    ``yield got``)."""
    held: Set[bytes] = set()
    for line in _logical_lines(text):
        claims = bool(_AUTOMATON.find_matches_as_indexes(line))
        if claims and (b"return" in line or b"yield" in line):
            return True
        assigned = _ASSIGNED.match(line)
        if assigned is not None and (claims or any(_word(name).search(line) for name in held)):
            held.add(assigned.group(1))
        elif held and (b"return" in line or b"yield" in line) and any(_word(name).search(line) for name in held):
            return True
    return False


def _logical_lines(text: bytes) -> List[bytes]:
    """The lines of ``text`` with a statement that goes on in open brackets joined into one (``got = conn.execute(``
    and the claim's SQL on the next line): an assignment and the claim it holds are one line."""
    joined: List[bytes] = []
    pending, depth = b"", 0
    for line in text.splitlines():
        pending = pending + b" " + line.strip() if pending else line
        depth += sum(line.count(c) for c in (b"(", b"[", b"{")) - sum(line.count(c) for c in (b")", b"]", b"}"))
        if depth <= 0:
            joined.append(pending)
            pending, depth = b"", 0
    if pending:
        joined.append(pending)
    return joined


def _word(name: bytes) -> "re.Pattern[bytes]":
    return re.compile(rb"\b" + re.escape(name) + rb"\b")


# -- one automaton for the words of every family ---------------------------------------------------------------
(_CLAIM, _STATE, _FILTER, _CONTAINER, _CLOCK, _LOCK, _SQL_WRITE, _STORE, _SAVE, _LIBRARY_LOCK, _COLUMN_READ,
 _MEMBERSHIP) = range(12)
_FAMILIES = ((_CLAIM, _CLAIM_BODY_WORDS), (_STATE, _STATE_WORDS), (_FILTER, _FILTER_WORDS),
             (_CONTAINER, process_local.CONTAINER_WORDS), (_CLOCK, process_local.CLOCK_WORDS),
             (_LOCK, process_state.LOCK_TRIGGERS), (_SQL_WRITE, (b"UPDATE ",)), (_STORE, _STORE_CLIENT_WORDS),
             (_SAVE, _SAVE_WORDS), (_LIBRARY_LOCK, _LIBRARY_LOCK_WORDS), (_COLUMN_READ, (b"SELECT ",)),
             (_MEMBERSHIP, (_MEMBERSHIP_WORD,)))
#: The family of each word, by its place in the automaton.
_FAMILY_OF_WORD: List[int] = [family for family, spelled in _FAMILIES for _ in spelled]
# Overlapping matches: a word inside another family's word still counts for its own family.
_FAMILY_AUTOMATON = ahocorasick_rs.BytesAhoCorasick([word for _, spelled in _FAMILIES for word in spelled],
                                                    implementation=ahocorasick_rs.Implementation.DFA)


def _clear() -> None:
    _words_by_root.clear()
    _store_readers_by_root.clear()
    _loaders_by_root.clear()
    _bare_loaders_by_root.clear()
    _counting_classes_by_root.clear()
    _lock_helpers_by_root.clear()
    _library_lock_helpers_by_root.clear()
    _sql_constants_by_root.clear()
    _column_writers_by_root.clear()
    _row_savers_by_root.clear()
    _row_saver_names_by_root.clear()
    _lock_classes_by_root.clear()
    _wrapping_classes_by_root.clear()
    _wrapping_names_by_root.clear()
    _kept_copies_by_root.clear()
    _kept_copy_names_by_root.clear()


project.on_clear(_clear)
