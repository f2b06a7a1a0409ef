"""Cross-file lookups for the CLI: the function ``app.jobs.send_digest`` is in ``<root>/app/jobs.py``.

Only used when ``facts.context.cross_file`` is True (the CLI); the flake8
plugin sees one file and never comes here.  Each module file is read and
parsed with ``ast`` once per content (cached by path and modification
time) and gets the same ``ModuleFacts`` the engine builds, so a rule can ask
the same questions of it (does this function begin with a claim?).
"""
from __future__ import annotations

import ast
import contextlib
import os
import re
import stat as _stat
import sys
import threading
import warnings
import zlib
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from ..analysis import executed_sql, large_files
from ..config import Config
from ..analysis.context import FileContext
from ..analysis.facts import FunctionNode, ModuleFacts
from ..analysis.newer_syntax import decode_source, parse_newer
from . import project_text

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)

_lock = threading.Lock()
#: path -> (mtime, size, facts or None when unreadable/unparsable, CRC-32 of the bytes parsed), least
#: recently used first
_modules: Dict[str, Tuple[float, int, Optional[ModuleFacts], int]] = {}
#: How many nodes the trees in ``_modules`` may hold between two checks, per process.  Kept whole, the
#: trees of every module a large project's files read cost far more memory than all else a run holds (each
#: node with its attribute dict, some 300 bytes); past this, the least recently used are dropped, and
#: parsed again if read again (a few files are read by many checks: they stay).
MODULE_NODE_BUDGET = 300_000
_module_nodes = 0


_recording = threading.local()


@contextlib.contextmanager
def recording() -> Iterator[Set[str]]:
    """Collect the other files a check reads: ``with recording() as deps: check(...)``.

    A result cache must treat the findings of the checked file as stale when any of ``deps`` changes
    (a job registered here and defined there: adding a claim there removes the finding here).
    """
    previous = getattr(_recording, "paths", None)
    paths: Set[str] = set()
    _recording.paths = paths
    try:
        yield paths
    finally:
        _recording.paths = previous
        if previous is not None:
            previous.update(paths)


def _record(path: str) -> None:
    paths = getattr(_recording, "paths", None)
    if paths is not None:
        paths.add(path)


def _search_roots(root: str) -> List[str]:
    roots = []
    bases = [base for base in root.split(os.pathsep) if base]
    for base in bases:
        roots.append(base)
        source = os.path.join(base, "src")
        if os.path.isdir(source):
            roots.append(source)
    # Last, the project's other distributions: a repository that holds a shared library beside its
    # services (``shared/pyproject.toml`` with ``shared/common/``) installs it into their images, and their
    # ``import common`` reads it from there.
    if bases:
        roots.extend(root for root in _distribution_roots(bases[0]) if root not in roots)
    return roots


#: project base -> the source directories of the distributions it holds below it.
_distributions: Dict[str, List[str]] = {}
#: The files that make a directory a distribution pip can install.
_DISTRIBUTION_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
#: How far below the project's base a distribution is looked for (``libs/shared/pyproject.toml``).
_DISTRIBUTION_DEPTH = 2


def _distribution_roots(base: str) -> List[str]:
    """Directories below ``base`` (not ``base`` itself) that hold a distribution's packaging file, each
    with its ``src`` when it has one, in name order."""
    with _lock:
        cached = _distributions.get(base)
    if cached is not None:
        return cached
    found: List[str] = []
    level = [base]
    for _ in range(_DISTRIBUTION_DEPTH):
        below = []
        for directory in level:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in entries:
                if (entry.name in _SKIPPED_DIRECTORIES or entry.name.startswith(".")
                        or not entry.is_dir(follow_symlinks=False)):
                    continue
                below.append(entry.path)
                if any(os.path.isfile(os.path.join(entry.path, name)) for name in _DISTRIBUTION_FILES):
                    found.append(entry.path)
                    source = os.path.join(entry.path, "src")
                    if os.path.isdir(source):
                        found.append(source)
        level = below
    with _lock:
        _distributions[base] = found
    return found


def package_root(path: str) -> str:
    """The directory that holds the top package of ``path`` (where ``import pkg.mod`` starts)."""
    directory = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory = os.path.dirname(directory)
    return directory


def roots_for(facts: ModuleFacts) -> str:
    """Where the project's modules are looked for: the config root (and its ``src``), then the checked
    file's own package root (a project without a pyproject.toml, checked from elsewhere)."""
    return facts.cached("project:roots", _roots_for)


def _roots_for(facts: ModuleFacts) -> str:
    roots = []
    if facts.config.root:
        roots.append(facts.config.root)
    if facts.context.path:
        for own in (package_root(facts.context.path), search_root(facts)):
            if own not in roots:
                roots.append(own)
    return os.pathsep.join(roots)


def source_root(facts: ModuleFacts) -> str:
    """The directory the file's own absolute imports start from, as its imports show it: a file under
    ``backend/app/jobs/`` that imports ``app.db`` has its root at ``backend/``, with or without
    ``__init__.py`` files on the way (namespace packages).  Falls back to the ``__init__.py`` chain."""
    if not facts.context.path:
        return facts.config.root
    directory = os.path.dirname(os.path.abspath(facts.context.path))
    ancestors = []
    current = directory
    while True:
        ancestors.append(current)
        above = os.path.dirname(current)
        if above == current:
            break
        current = above
    fallback = package_root(facts.context.path)
    # Never above the project (the configuration's root) or above the top of the ``__init__.py`` chain's
    # own tree: an import whose first name matches a directory far up (``/root``, ``src``) says nothing.
    ceiling = os.path.abspath(facts.config.root) if facts.config.root else fallback
    if not (directory + os.sep).startswith(ceiling.rstrip(os.sep) + os.sep):
        ceiling = fallback
    names = {os.path.basename(a): a for a in reversed(ancestors)
             if (a + os.sep).startswith(ceiling.rstrip(os.sep) + os.sep) and a != ceiling}
    best = ""
    for value in facts.imports.aliases.values():
        top = value.split(".", 1)[0]
        holder = names.get(top)
        if holder is not None:
            root = os.path.dirname(holder)
            if len(root) > len(best):
                best = root
    return best or fallback


def search_root(facts: ModuleFacts) -> str:
    """Where project-wide lookups by name look: the source tree holding the checked file (a monorepo's
    other services and the repository's tests and tooling are not this program)."""
    return facts.cached("project:search-root", _search_root_of)


def _search_root_of(facts: ModuleFacts) -> str:
    root = facts.cached("project:source-root", source_root)
    return root if root and os.path.isdir(root) else facts.config.root


def module_path(module: str, root: str) -> Optional[str]:
    """The file of a dotted module under ``root`` or ``root/src`` (``pkg/mod.py`` or ``pkg/mod/__init__.py``)."""
    if not module or not root or module.startswith("."):
        return None
    key = (module, root)
    if key not in _module_paths:
        _module_paths[key] = _find_module_path(module, root)
    return _module_paths[key]


#: (dotted module, root) -> its file: rules ask for the same modules of the same project again and again.
_module_paths: Dict[Tuple[str, str], Optional[str]] = {}


def _find_module_path(module: str, root: str) -> Optional[str]:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    for base in _search_roots(root):
        candidate = os.path.join(base, *parts) + ".py"
        if os.path.isfile(candidate):
            return candidate
        candidate = os.path.join(base, *parts, "__init__.py")
        if os.path.isfile(candidate):
            return candidate
    return None


def module_facts(path: str, config: Config) -> Optional[ModuleFacts]:
    """Facts of another file of the project, parsed once per content."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not _stat.S_ISREG(stat.st_mode):
        return None
    key = os.path.abspath(path)
    _record(key)
    with _lock:
        cached = _modules.pop(key, None)
        if cached is not None:
            _modules[key] = cached  # (now the most recently used)
    if cached is not None and cached[0] == stat.st_mtime and cached[1] == stat.st_size:
        return cached[2]
    facts: Optional[ModuleFacts] = None
    digest = 0
    # A file too large for one tree is checked in windows (``large_files``) and not read as another module:
    # its tree, kept for the run, would cost more than any file may.
    if stat.st_size <= large_files.LARGE_FILE_BYTES:
        try:
            with open(path, "rb") as handle:
                source = handle.read()
            digest = zlib.crc32(source)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    tree = ast.parse(source, filename=path)
                except SyntaxError:
                    # Perhaps written for a newer Python: read as the checked files are.
                    tree = parse_newer(decode_source(source), path)
            text_lines = source.decode("utf-8", "replace").splitlines()
            facts = ModuleFacts(tree, FileContext(path, config, cross_file=True), text_lines)
        except (OSError, SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
            facts = None
    global _module_nodes
    with _lock:
        previous = _modules.pop(key, None)
        if previous is not None:
            _module_nodes -= _node_count(previous[2])
        _modules[key] = (stat.st_mtime, stat.st_size, facts, digest)
        _module_nodes += _node_count(facts)
    return facts


def adopt_checked(path: str, source: bytes, facts: ModuleFacts, read_at: Optional[Tuple[int, int]]) -> bool:
    """Keep a checked file's facts as the project's parse of that module, when they are what reading it as
    another module would build: its on-disk bytes (unchanged since ``read_at``, the (size, mtime_ns) taken
    before they were read), decoded alike, for a whole-project run.  Its own rules look it up as a module
    (where a name it imports from itself is defined), and the files of its package checked after it read
    it: neither parses it a second time.  Returns whether it was kept (the caller releases it otherwise)."""
    global _module_nodes
    context = facts.context
    if read_at is None or not context.cross_file or not path or large_files.is_large(source):
        return False
    try:
        stat = os.stat(path)
    except OSError:
        return False
    if (stat.st_size, stat.st_mtime_ns) != read_at or stat.st_size != len(source):
        return False
    if facts.lines != source.decode("utf-8", "replace").splitlines():
        return False  # decoded from another encoding than a module read would
    key = os.path.abspath(path)
    with _lock:
        if key in _modules:
            return False
        _modules[key] = (stat.st_mtime, stat.st_size, facts, zlib.crc32(source))
        _module_nodes += _node_count(facts)
    return True


def _node_count(facts: Optional[ModuleFacts]) -> int:
    return len(facts.nodes) if facts is not None else 0


def path_of_tree(tree: ast.AST) -> Optional[str]:
    """The path of the project module whose parsed tree ``tree`` is, among those read this run."""
    with _lock:
        for key, held in _modules.items():
            if held[2] is not None and held[2].tree is tree:
                return key
    return None


def trim_modules() -> None:
    """Between two checks (no rule holds a tree then), keep the trees of other modules within
    ``MODULE_NODE_BUDGET``: past it, drop the least recently used down to half of it (a trim every few
    hundred files, not one per file) and free them."""
    with _lock:
        if _module_nodes <= MODULE_NODE_BUDGET:
            return
        dropped = _drop_least_recent(MODULE_NODE_BUDGET // 2)
        # What the modules kept have cached may hold nodes of those dropped (a caller found there), or be
        # keyed by their id(), which a node parsed later may reuse once they are freed: built again.
        for entry in _modules.values():
            if entry[2] is not None:
                entry[2].forget_cached()
    _free(dropped)


def _drop_least_recent(keep: int) -> List[ModuleFacts]:
    """Take the least recently used modules out of ``_modules`` until its trees hold ``keep`` nodes at most."""
    global _module_nodes
    dropped: List[ModuleFacts] = []
    for key in list(_modules):
        if _module_nodes <= keep:
            break
        facts = _modules.pop(key)[2]
        if facts is not None:
            _module_nodes -= _node_count(facts)
            dropped.append(facts)
    return dropped


def _free(dropped: List[ModuleFacts]) -> None:
    """Unlink the parents of each dropped tree, so that reference counting frees it at once: its parent
    links are cycles that only a full pass of the cyclic collector frees, and the runner makes those rare.
    A tree whose facts something else still holds (a project-wide cache of this run) is left linked, as
    valid as before, for the collector to free with its holder."""
    for facts in dropped:
        facts.forget_cached()  # (its own cached facts may hold it)
    while dropped:
        facts = dropped.pop()
        # References: ``facts`` and the argument of getrefcount.
        if sys.getrefcount(facts) <= 2:
            facts.release()
        del facts


def parsed_module(path: str, source: bytes, config: Config) -> Optional[ModuleFacts]:
    """The facts this run already built for ``path`` as another file of the project, when they were parsed
    from these very bytes under the same configuration: a file whose module another file's rules read
    first is not parsed a second time when its own turn comes."""
    with _lock:
        cached = _modules.get(os.path.abspath(path))
    if cached is None or cached[2] is None or cached[1] != len(source) or cached[2].config is not config:
        return None
    return cached[2] if cached[3] == zlib.crc32(source) else None


def _split(qualified: str) -> List[Tuple[str, List[str]]]:
    """``a.b.c.d`` -> [("a.b.c", ["d"]), ("a.b", ["c", "d"]), ...]: longest module first."""
    if ":" in qualified:
        module, _, attr = qualified.partition(":")
        return [(module, attr.split("."))]
    parts = qualified.split(".")
    return [(".".join(parts[:i]), parts[i:]) for i in range(len(parts) - 1, 0, -1)]


#: How many re-exports (``from .parts import f`` in the module a caller imports ``f`` from) are followed.
_MAX_REEXPORTS = 4


def find_function(qualified: str, config: Config, root: Optional[str] = None,
                  _hops: int = 0) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The ``def`` of ``pkg.mod.func`` / ``pkg.mod:func`` / ``pkg.mod.Class.method`` in the project, with its
    facts; a module that only imports the name (a package's ``__init__``, a module whose function moved
    out) is followed to where it is defined."""
    root = root if root is not None else config.root
    if not root or not qualified:
        return None
    for module, attrs in _split(qualified):
        path = module_path(module, root)
        if path is None:
            continue
        if not _may_define(path, attrs[-1]) and not (len(attrs) > 1 and _may_define(path, attrs[0])) \
                and _STAR_IMPORT not in _read_bytes(path):
            _record(os.path.abspath(path))  # still a dependency: adding the def there changes the answer
            return None
        facts = module_facts(path, config)
        if facts is None:
            return None
        found = _lookup(facts.tree.body, attrs)
        if found is not None:
            return found, facts
        if _hops >= _MAX_REEXPORTS:
            return None
        target = reexported(facts, attrs[0])
        if target is not None:
            return find_function(".".join([target, *attrs[1:]]), config, root, _hops + 1)
        # ``from .model_schema import *`` in a package's ``__init__``: the name may come from any of them
        for source in _star_sources(facts):
            found_there = find_function(".".join([source, *attrs]), config, root, _hops + 1)
            if found_there is not None:
                return found_there
        return None
    return None


_STAR_IMPORT = b"import *"


def _star_sources(facts: ModuleFacts) -> List[str]:
    """The modules a module's top level star-imports (``from .parts import *``), absolute, in order."""
    sources = []
    for statement in _module_level_statements(facts.tree.body):
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            module = statement.module or ""
            if statement.level:
                module = facts.imports._relative(module, statement.level)
            if module and not module.startswith("."):
                sources.append(module)
    return sources


def reexported(facts: ModuleFacts, name: str) -> Optional[str]:
    """The qualified name a module-level import binds ``name`` to in that module (``app.jobs.parts.send``
    for ``from .parts import send`` in ``app/jobs/__init__.py``), or None when no import at module level
    binds it (a def, an assignment, or an import inside a function)."""
    target = facts.imports.aliases.get(name)
    if target is None or target.startswith("."):
        return None
    for statement in _module_level_statements(facts.tree.body):
        if isinstance(statement, ast.ImportFrom):
            if any((alias.asname or alias.name) == name for alias in statement.names):
                return target
        elif isinstance(statement, ast.Import):
            if any(alias.asname == name for alias in statement.names):
                return target
    return None


def _module_level_statements(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements, with those of top-level ``if`` / ``try`` blocks (a guarded import)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _module_level_statements(statement.body)
            yield from _module_level_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _module_level_statements(block)
            for handler in statement.handlers:
                yield from _module_level_statements(handler.body)


def _may_define(path: str, name: str) -> bool:
    """Whether the file's text can hold ``def name``: a file that never spells the name is not parsed
    (unless it has non-ASCII text, whose identifiers Python normalises)."""
    if not name.isascii():
        return True
    source = _read_bytes(path)
    return not source or name.encode("ascii") in source or not source.isascii()


def _lookup(body: List[ast.stmt], attrs: List[str]) -> Optional[FunctionNode]:
    name, rest = attrs[0], attrs[1:]
    found = None
    for statement in body:
        if isinstance(statement, _FUNCTION_TYPES) and statement.name == name and not rest:
            found = statement
        elif isinstance(statement, ast.ClassDef) and statement.name == name and rest:
            found = _lookup(statement.body, rest)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and found is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = None  # rebound after the def: not a plain function any more
    return found


def _module_and_name(qualified: str, config: Config, root: Optional[str]) -> Optional[Tuple[ModuleFacts, str]]:
    """(facts of ``pkg.mod``, ``name``) for ``pkg.mod.name`` when the module is in the project, following a
    module that only imports ``name`` to the module it comes from."""
    root = root if root is not None else config.root
    if not root or not qualified:
        return None
    for _ in range(_MAX_REEXPORTS + 1):
        module, _, name = qualified.rpartition(".")
        path = module_path(module, root)
        facts = module_facts(path, config) if path is not None else None
        if facts is None:
            return None
        target = reexported(facts, name)
        if target is None or target == qualified:
            return facts, name
        qualified = target
    return None


def find_assignment(qualified: str, config: Config, root: Optional[str] = None) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The value of a module-level ``name = <expr>`` (``app.extensions.scheduler``), with its facts."""
    if ":" in qualified:
        return None
    found = _module_and_name(qualified, config, root)
    if found is None:
        return None
    facts, name = found
    values = []
    # (under a top-level ``if``/``try`` too: ``scheduler = None`` then ``if not BROKER: scheduler = APScheduler()``)
    for statement in _module_level_statements(facts.tree.body):
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets):
            values.append(statement.value)
        elif (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
              and statement.target.id == name and statement.value is not None):
            values.append(statement.value)
    # A ``None`` the module binds until it is configured is no other value: the name is what it is configured to.
    configured = [value for value in values if not (isinstance(value, ast.Constant) and value.value is None)]
    if len(configured) != 1:
        return None
    return configured[0], facts


def _imported_constant(node: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The top-level value of another module of the project that ``node`` names through an import
    (``queries.FETCH_PENDING``, or ``FETCH_PENDING`` imported from there), with that module's facts."""
    head = node
    while isinstance(head, ast.Attribute):
        head = head.value
    if not isinstance(head, ast.Name) or not facts.imports.is_imported(head.id):
        return None
    qualified = facts.qualify(node) or ""
    if "." not in qualified:
        return None
    found = find_assignment(qualified, facts.config, roots_for(facts))
    if found is None or found[1] is facts:
        return None
    return found


executed_sql.imported_constant = _imported_constant

_clear_hooks: List = []


def on_clear(hook) -> None:
    """Run ``hook()`` whenever the project caches are cleared (caches built on top of this module's)."""
    if hook not in _clear_hooks:
        _clear_hooks.append(hook)


def clear_cache() -> None:
    global _module_nodes
    with _lock:
        _modules.clear()
        _module_nodes = 0
        _module_paths.clear()
        _file_lists.clear()
        _def_indexes.clear()
        _call_indexes.clear()
        _base_indexes.clear()
        _mentions.clear()
        _distributions.clear()
        _named_files.clear()
    project_text.clear()
    for hook in list(_clear_hooks):
        hook()


# ------------------------------------------------------------------------------------------------
# Project-wide lookups by name (the fallback when a receiver's type is not known): which files of the
# project define or mention a name.  Files are listed once per root and read once per content; only the
# files whose bytes contain the name are parsed, so a lookup costs a byte search, not a parse of the project.
# ------------------------------------------------------------------------------------------------
_SKIPPED_DIRECTORIES = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", "site-packages",
    "build", "dist", ".mypy_cache", ".pytest_cache", ".ruff_cache",
})
_MAX_PROJECT_FILES = 20_000
_file_lists: Dict[str, List[str]] = {}


def project_files(root: str) -> List[str]:
    """Every ``.py`` file under the first root (the project), listed once per run."""
    base = root.split(os.pathsep)[0] if root else ""
    if not base:
        return []
    with _lock:
        cached = _file_lists.get(base)
    if cached is not None:
        return cached
    found: List[str] = []
    for directory, subdirectories, files in os.walk(base):
        subdirectories[:] = sorted(d for d in subdirectories if d not in _SKIPPED_DIRECTORIES and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                found.append(os.path.join(directory, name))
        if len(found) > _MAX_PROJECT_FILES:
            break
    with _lock:
        _file_lists[base] = found
    return found


def _read_bytes(path: str) -> bytes:
    return project_text.file_bytes(path)


#: A project file's bytes, read once per run: what text checks before a parse look at.
read_bytes = _read_bytes

_mentions: Dict[Tuple[str, str], List[str]] = {}


def files_mentioning(word: str, root: str) -> List[str]:
    """Files of the project whose text contains ``word`` (one search per word and root in a run)."""
    key = (word, root)
    with _lock:
        cached = _mentions.get(key)
    if cached is not None:
        return cached
    base = root.split(os.pathsep)[0] if root else ""
    found = project_text.files_mentioning(word.encode("utf-8", "replace"), base, project_files(root))
    with _lock:
        _mentions[key] = found
    return found


#: ``def name(``; that it begins its line (after indentation and ``async``) is checked on each match:
#: a pattern that starts with a literal is searched for quickly, one anchored at each line start is not.
_DEF = re.compile(rb"def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")


def _defined_names(data: bytes) -> Set[bytes]:
    """The names the ``def`` statements of a file's text define (nested ones and methods included)."""
    names = set()
    for match in _DEF.finditer(data):
        at = match.start()
        head = data[data.rfind(b"\n", 0, at) + 1:at].strip(b" \t")
        if not head or (head == b"async" and data[at - 1:at] in (b" ", b"\t")):
            names.add(match.group(1))
    return names


_def_indexes: Dict[str, Dict[str, List[str]]] = {}


def _def_index(root: str) -> Dict[str, List[str]]:
    """function name -> files that define it, from one regular-expression pass over the project's bytes."""
    return _name_index(root, _def_indexes, _defined_names)


def _name_index(root: str, indexes: Dict[str, Dict[str, List[str]]], names_in) -> Dict[str, List[str]]:
    """name -> the files of the project (in ``project_files`` order) whose bytes ``names_in`` finds it in,
    built once per project in ``indexes``."""
    base = root.split(os.pathsep)[0] if root else ""
    with _lock:
        cached = indexes.get(base)
    if cached is not None:
        return cached
    index = project_text.name_index(base, project_files(root), names_in)
    with _lock:
        indexes[base] = index
    return index


#: ``.name(`` (blanks allowed before the parenthesis): a call of a method by its name. A match takes the whole
#: name: the characters after it are blanks or the parenthesis, never more of an ASCII name.
_METHOD_CALL = re.compile(rb"\.([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_call_indexes: Dict[str, Dict[str, List[str]]] = {}


def files_calling_method(name: str, root: str) -> List[str]:
    """Files of the project whose text has ``.name(`` (blanks allowed before the parenthesis), in the order of
    ``project_files``: the files a search of the name, then of that pattern, would keep. Finding callers
    of methods by name asks this for name after name across the whole project; one regular-expression pass
    over the project's bytes answers them all, where a search per name reads every file again."""
    if not _ASCII_NAME.match(name):
        needle = re.compile(rb"\." + re.escape(name.encode("utf-8", "replace")) + rb"\s*\(")
        return [path for path in files_mentioning(name, root) if needle.search(_read_bytes(path))]
    return _call_index(root).get(name, [])


def _call_index(root: str) -> Dict[str, List[str]]:
    """method name -> files that call a method of that name (``.name(``), from one pass over the bytes."""
    return _name_index(root, _call_indexes, lambda data: set(_METHOD_CALL.findall(data)))


#: ``class Name(Base, Mixin, metaclass=M):`` -- the text between the parentheses (one line or several).
#: A ``class`` statement's name and what is written between its parentheses.
_CLASS_BASES = re.compile(rb"^[ \t]*class[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(([^)]*)\)", re.MULTILINE)
_BASE_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_base_indexes: Dict[str, Dict[str, List[str]]] = {}


def _base_names(data: bytes) -> Set[bytes]:
    """Every name written between the parentheses of a ``class`` statement of a file (bases, their modules,
    keywords): a file that does not name a class there defines no subclass of it."""
    return {name for match in _CLASS_BASES.finditer(data) for name in _BASE_NAME.findall(match.group(2))}


def files_subclassing(name: str, root: str) -> List[str]:
    """Files of the project that may define a subclass of a class called ``name`` (one pass over the
    project's bytes answers every name)."""
    return _name_index(root, _base_indexes, _base_names).get(name, [])


def files_defining(name: str, root: str) -> List[str]:
    """Files of the project whose text has a ``def name(`` (methods and nested defs included)."""
    return _def_index(root).get(name, [])


def class_headers(path: str) -> List[Tuple[str, List[str]]]:
    """(class name, the names written between its parentheses) for each ``class`` statement of a file's text."""
    return [(match.group(1).decode("ascii", "replace"),
             [name.decode("ascii", "replace") for name in _BASE_NAME.findall(match.group(2))])
            for match in _CLASS_BASES.finditer(_read_bytes(path))]


def functions_named(name: str, config: Config, root: str, limit: int = 6) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """Every ``def name`` in the project (module functions and methods), none when there are more than
    ``limit`` (a name that common is no evidence about any one of them)."""
    paths = _def_index(root).get(name, [])
    if len(paths) > limit:
        return []
    found: List[Tuple[FunctionNode, ModuleFacts]] = []
    for path in paths:
        facts = module_facts(path, config)
        if facts is None or facts.context.is_test:
            continue
        for function in facts.functions_by_name.get(name, ()):
            found.append((function, facts))
            if len(found) > limit:
                return []
    return found


def find_class(qualified: str, config: Config, root: Optional[str] = None) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    """The ``class`` statement of ``pkg.mod.Class`` in the project, with its facts."""
    found = _module_and_name(qualified, config, root)
    if found is None:
        return None
    facts, name = found
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name == name:
            return statement, facts
    return None


# ------------------------------------------------------------------------------------------------
# Files other than Python modules, found by name (deployment files, Alembic .ini files).
# ------------------------------------------------------------------------------------------------
#: Directories whose files describe no deployment of the project (test set-ups, documentation).
_NOT_DEPLOYMENT_DIRECTORIES = frozenset({"tests", "test", "testing", "docs", "doc"})
_named_files: Dict[Tuple[str, str], List[str]] = {}


def scan_once(cache: Dict, key, scan: Callable[[], Tuple[object, Tuple[str, ...]]]):
    """``scan()`` returns (result, files it read); run once per run and ``key``. A later check that asks again
    gets the result, and the files are recorded as its dependencies all the same: its cached findings
    depend on them as much as the first check's do."""
    with _lock:
        cached = cache.get(key)
    if cached is None:
        cached = scan()
        with _lock:
            cache[key] = cached
    else:
        for path in cached[1]:
            record_dependency(path)
    return cached[0]


def record_dependency(path: str) -> None:
    """A file other than a module that a check read (a Dockerfile, an ``alembic.ini``): a cached result
    must be thrown away when it changes."""
    _record(os.path.abspath(path))


def files_named(base: str, wanted, config: Optional[Config] = None, key: str = "") -> List[str]:
    """Files under ``base`` whose name ``wanted(name)`` accepts, listed once per run and ``key``: tests,
    documentation, virtual environments and the configuration's excluded directories are skipped."""
    if not base or not os.path.isdir(base):
        return []
    cache_key = (os.path.abspath(base), key)
    with _lock:
        cached = _named_files.get(cache_key)
    if cached is not None:
        return cached
    found: List[str] = []
    root = os.path.abspath(config.root) if config is not None and config.root else ""
    for directory, subdirectories, files in os.walk(base):
        kept = []
        for name in sorted(subdirectories):
            if name in _SKIPPED_DIRECTORIES or name.startswith(".") or name in _NOT_DEPLOYMENT_DIRECTORIES:
                continue
            full = os.path.join(directory, name)
            if root and (full + os.sep).startswith(root + os.sep) and config is not None:
                relative = os.path.relpath(full, root).replace(os.sep, "/")
                if config.is_excluded(full, relative):
                    continue
            kept.append(name)
        subdirectories[:] = kept
        for name in sorted(files):
            if wanted(name):
                found.append(os.path.join(directory, name))
        if len(found) > _MAX_PROJECT_FILES:
            break
    with _lock:
        _named_files[cache_key] = found
    return found
