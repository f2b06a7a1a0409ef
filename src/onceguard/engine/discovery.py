"""Which files a run checks: regular ``.py`` files under the given paths, minus excludes, what the
project's ignore files leave out and installed code (``onceguard.ignores``).

Never opens anything but regular files (a FIFO would block the run), never
follows directory symlinks (loops), and turns every OS error into a skip or
a finding instead of an exception.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional

from .. import ignores
from ..config import Config


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str


def _is_regular_file(path: str) -> Optional[bool]:
    """True: a regular file; False: something else; None: cannot be stat'ed (dangling link, vanished)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None


def discover(paths: List[str], config_of: Callable[[str], Config], problems: List[Problem]) -> Iterator[str]:
    seen = set()
    for given in paths:
        if os.path.isdir(given):
            yield from _walk(given, config_of, seen)
            continue
        regular = _is_regular_file(given)
        if regular is None:
            problems.append(Problem(given, "no such file or directory" if not os.path.lexists(given)
                                    else "cannot read (dangling symbolic link or no permission)"))
        elif not regular:
            problems.append(Problem(given, "not a regular file; skipped"))
        elif given not in seen:
            # Files named on the command line are checked even when excluded (as ruff and flake8 do
            # for pre-commit's explicit file lists), unless they are not Python at all.
            seen.add(given)
            yield given


def _walk(root: str, config_of: Callable[[str], Config], seen: set) -> Iterator[str]:
    def on_error(error: OSError) -> None:  # unreadable directories are skipped, as ruff does
        return None

    for directory, subdirectories, files in os.walk(root, onerror=on_error, followlinks=False):
        config = config_of(directory)
        # One relative path per directory; its entries' paths are built from it.
        rel_directory = config.relative(directory)
        prefix = "" if rel_directory in (".", "") else rel_directory + "/"
        subdirectories[:] = sorted(
            d for d in subdirectories if not config.is_excluded(os.path.join(directory, d), prefix + d)
            and not ignores.is_installed_code(os.path.join(directory, d))
            and not (config.respect_gitignore and ignores.is_ignored(os.path.join(directory, d), True))
        )
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            if path.startswith("./"):
                path = path[2:]
            if path in seen or config.is_excluded(path, prefix + name):
                continue
            if config.respect_gitignore and ignores.is_ignored(path, False):
                continue
            if _is_regular_file(path):
                seen.add(path)
                yield path
