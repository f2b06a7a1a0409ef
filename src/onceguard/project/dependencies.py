"""What a project can install: the distributions its dependency files name, and from them the database
dialects it can connect to.

A branch the project cannot take (``else:`` after the dialects whose drivers it ships were all handled)
cannot race.  The evidence is the project's own dependency files — ``pyproject.toml`` (PEP 621 and its
extras, Poetry, dependency groups), ``setup.cfg``, ``setup.py``, ``requirements*.txt`` — from the checked
file's directory up to the configuration's root, every extra and group included: what a user may install is
possible.  A project whose files name no database driver says nothing (its drivers may come from a
Dockerfile or the platform), so no branch is judged dead for it.
"""
from __future__ import annotations

import ast
import os
import re
import threading
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..analysis.facts import ModuleFacts
from ..config import tomllib
from ..knowledge import databases as known
from . import index as project

#: Requirement files in one directory: ``requirements.txt``, ``requirements-dev.txt``, ``requirements/*.txt``.
_REQUIREMENT_FILE = re.compile(r"^requirements.*\.(txt|in)$")
_REQUIREMENT_DIRECTORY = "requirements"

_lock = threading.Lock()
#: absolute directory -> (its dependency files, the distributions they name)
_per_directory: Dict[str, Tuple[Tuple[str, ...], FrozenSet[str]]] = {}


def declared_distributions(facts: ModuleFacts) -> Optional[FrozenSet[str]]:
    """The canonical names of every distribution the dependency files above the checked file name, or None
    when there are no such files (or the check sees one file alone)."""
    context = facts.context
    if not context.cross_file or not context.path:
        return None
    return facts.cached("project:declared-distributions", lambda known: _above(context.path, facts.config.root))


def possible_dialects(facts: ModuleFacts) -> Optional[FrozenSet[str]]:
    """The SQLAlchemy dialect names the project can connect with: those of the drivers it declares, and
    SQLite (in the standard library).  None when its dependency files name no driver at all."""
    distributions = declared_distributions(facts)
    if not distributions:
        return None
    dialects = {known.DRIVER_DIALECTS[name] for name in distributions if name in known.DRIVER_DIALECTS}
    if not dialects:
        return None
    return frozenset(dialects | known.STANDARD_LIBRARY_DIALECTS)


def _above(path: str, root: str) -> Optional[FrozenSet[str]]:
    top = os.path.abspath(root) if root else ""
    current = os.path.dirname(os.path.abspath(path))
    found: Set[str] = set()
    any_file = False
    while True:
        names = _in_directory(current)
        if names is not None:
            any_file = True
            found |= names
        if not top or os.path.normpath(current) == os.path.normpath(top):
            break
        above = os.path.dirname(current)
        if above == current or not (above + os.sep).startswith(top + os.sep) and above != top:
            break
        current = above
    return frozenset(found) if any_file else None


def _in_directory(directory: str) -> Optional[FrozenSet[str]]:
    """The distributions the dependency files of ``directory`` name (None: it has none), read once per run;
    each checked file that asks depends on those files (its cached result goes when one changes)."""
    with _lock:
        known_here = _per_directory.get(directory)
    if known_here is None:
        files = tuple(_dependency_files(directory))
        names: Set[str] = set()
        for path in files:
            names.update(_names_in(path))
        known_here = (files, frozenset(names))
        with _lock:
            _per_directory[directory] = known_here
    files, found = known_here
    for path in files:
        project.record_dependency(path)
    return found if files else None


def clear_cache() -> None:
    with _lock:
        _per_directory.clear()


def _dependency_files(directory: str) -> Iterator[str]:
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return
    for name in entries:
        if name in ("pyproject.toml", "setup.cfg", "setup.py") or _REQUIREMENT_FILE.match(name):
            yield os.path.join(directory, name)
    nested = os.path.join(directory, _REQUIREMENT_DIRECTORY)
    if os.path.isdir(nested):
        try:
            for name in sorted(os.listdir(nested)):
                if name.endswith((".txt", ".in")):
                    yield os.path.join(nested, name)
        except OSError:
            return


def _names_in(path: str) -> Iterable[str]:
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    name = os.path.basename(path)
    if name == "pyproject.toml":
        return _names_in_pyproject(text)
    if name == "setup.py":
        return _names_in_setup_py(text)
    if name == "setup.cfg":
        return _requirement_names(line for line in text.splitlines() if not line.lstrip().startswith("["))
    return _requirement_names(text.splitlines())


def _requirement_names(lines: Iterable[str]) -> List[str]:
    """Distribution names of the lines that are requirements; options (``-r``, ``--hash``), comments and
    configuration keys are not."""
    found = []
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if "=" in line and not re.search(r"[<>=!~]=|===", line):
            line = line.split("=", 1)[1].strip()  # ``install_requires = psycopg2`` in setup.cfg
        if not line or line.startswith(("#", "-")):
            continue
        try:
            found.append(canonicalize_name(Requirement(line).name))
        except InvalidRequirement:
            continue
    return found


def _names_in_pyproject(text: str) -> List[str]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return []
    strings: List[str] = []
    pep621 = data.get("project", {})
    strings.extend(_strings(pep621.get("dependencies")))
    for extra in _mapping(pep621.get("optional-dependencies")).values():
        strings.extend(_strings(extra))
    for group in _mapping(data.get("dependency-groups")).values():
        strings.extend(_strings(group))
    names = _requirement_names(strings)
    poetry = _mapping(_mapping(data.get("tool")).get("poetry"))
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables.extend(_mapping(group).get("dependencies") for group in _mapping(poetry.get("group")).values())
    for table in tables:
        names.extend(canonicalize_name(key) for key in _mapping(table) if key != "python")
    return names


def _names_in_setup_py(text: str) -> List[str]:
    """Every string constant of ``setup.py`` that reads as a requirement: a list passed to
    ``install_requires`` or ``extras_require`` is made of them, and a stray string that happens to parse only
    widens what the project may install."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and "\n" not in node.value]
    return _requirement_names(strings)


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value) -> List[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


project.on_clear(clear_cache)
