"""What a directory walk leaves out besides the configured excludes, as ruff does: what the project's
version control ignores, and installed code.

- ``.gitignore`` files (inside a git work tree, from its top down to each walked directory) and
  ``.git/info/exclude``; ``.ignore`` files everywhere. A deeper file's patterns win over an outer one's,
  and a directory that is ignored is never entered, so nothing below it can be re-included — git's rules,
  matched by ``pathspec``'s implementation of them.
- Virtual environments (a directory holding ``pyvenv.cfg``) and ``site-packages`` directories: installed
  libraries are not the project's code, whatever the folder is called.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import List, Optional, Tuple

from pathspec import GitIgnoreSpec

#: Files whose patterns say what to leave out, in the order their patterns apply within one directory.
_IGNORE_FILES = (".gitignore", ".ignore")


def is_installed_code(directory: str) -> bool:
    """A virtual environment or a ``site-packages`` folder: code that was installed, not written here."""
    return os.path.basename(directory) == "site-packages" or os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


@lru_cache(maxsize=4096)
def _git_top(directory: str) -> Optional[str]:
    """The top of the git work tree holding ``directory``, or None outside one."""
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _read_lines(path: str) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


@lru_cache(maxsize=4096)
def _spec_of(directory: str, in_git: bool) -> Optional[GitIgnoreSpec]:
    """The patterns that ``directory``'s own ignore files give, or None when it has none."""
    lines: List[str] = []
    for name in _IGNORE_FILES:
        if name == ".gitignore" and not in_git:
            continue  # as git and ruff: a .gitignore outside a work tree means nothing
        lines.extend(_read_lines(os.path.join(directory, name)))
    if in_git and _git_top(directory) == directory:
        lines = _read_lines(os.path.join(directory, ".git", "info", "exclude")) + lines
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return GitIgnoreSpec.from_lines(lines) if lines else None


@lru_cache(maxsize=4096)
def _specs_above(directory: str) -> Tuple[Tuple[str, GitIgnoreSpec], ...]:
    """(base directory, patterns) of every ignore file that applies in ``directory``, outermost first."""
    top = _git_top(directory)
    chain = []
    current = directory
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if current == top or parent == current:
            break
        current = parent
    found = []
    for base in reversed(chain):
        spec = _spec_of(base, top is not None)
        if spec is not None:
            found.append((base, spec))
    return tuple(found)


def is_ignored(path: str, is_directory: bool) -> bool:
    """Whether the project's ignore files leave ``path`` out (the innermost file that decides wins)."""
    absolute = os.path.abspath(path)
    verdict: Optional[bool] = None
    for base, spec in _specs_above(os.path.dirname(absolute)):
        relative = os.path.relpath(absolute, base).replace(os.sep, "/")
        result = spec.check_file(relative + "/" if is_directory else relative)
        if result.include is not None:
            verdict = result.include
    return bool(verdict)


def clear_cache() -> None:
    _git_top.cache_clear()
    _spec_of.cache_clear()
    _specs_above.cache_clear()
