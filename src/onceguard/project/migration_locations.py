"""Which migrations directory an Alembic or Flask-Migrate run applies: a path the code spells (``static_path``),
an ``alembic.ini``'s ``script_location``, and the ``.ini`` files a name may be."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional

from ..config import Config
from . import index as project
from .deployment_files import read_text, resolve_file

_PATH_CONSTRUCTORS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path", "PurePath"})
_PATH_IDENTITY_CALLS = frozenset({"str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                                  "os.path.expanduser"})
_PATH_IDENTITY_METHODS = frozenset({"resolve", "absolute", "expanduser"})
_MAX_PATH_DEPTH = 8


def static_path(expr, facts, depth: int = 0) -> Optional[str]:
    """The path an expression spells, when the code fixes it: a string, ``__file__``, ``Path(...)`` and
    ``/``, ``.parent``, ``os.path.join``/``dirname``, ``str(...)``, a name bound once in the function or
    the module, or a module constant of another project module.  Relative paths stay relative."""
    import ast

    from ..analysis.executed_sql import bound_value

    if depth > _MAX_PATH_DEPTH or expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr):
        parts = []
        for value in expr.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                part = static_path(value.value, facts, depth + 1)
                if part is None:
                    return None
                parts.append(part)
        return "".join(parts)
    if isinstance(expr, ast.Name):
        if expr.id == "__file__":
            return os.path.abspath(facts.context.path) if facts.context.path else None
        value = bound_value(expr, facts)
        if value is not None:
            return static_path(value, facts, depth + 1)
        qualified = facts.imports.aliases.get(expr.id)
        return _imported_constant(qualified, facts, depth) if qualified else None
    if isinstance(expr, ast.Attribute):
        if expr.attr == "parent":
            inner = static_path(expr.value, facts, depth + 1)
            return os.path.dirname(inner.rstrip("/")) if inner else None
        qualified = facts.qualify(expr)
        return _imported_constant(qualified, facts, depth) if qualified else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.Add)):
        left = static_path(expr.left, facts, depth + 1)
        right = static_path(expr.right, facts, depth + 1)
        if left is None or right is None:
            return None
        return os.path.join(left, right) if isinstance(expr.op, ast.Div) else left + right
    if isinstance(expr, ast.Call):
        callee = facts.callee(expr) or ""
        func = expr.func
        if callee in _PATH_CONSTRUCTORS or callee in _PATH_IDENTITY_CALLS:
            if not expr.args:
                return None
            parts = [static_path(a, facts, depth + 1) for a in expr.args]
            return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if callee == "os.path.join" and expr.args:
            parts = [static_path(a, facts, depth + 1) for a in expr.args]
            return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if callee == "os.path.dirname" and expr.args:
            inner = static_path(expr.args[0], facts, depth + 1)
            return os.path.dirname(inner) if inner is not None else None
        if isinstance(func, ast.Attribute):
            if func.attr in _PATH_IDENTITY_METHODS and not expr.args:
                return static_path(func.value, facts, depth + 1)
            if func.attr == "joinpath" and expr.args:
                parts = [static_path(func.value, facts, depth + 1)] + [static_path(a, facts, depth + 1) for a in expr.args]
                return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


def _imported_constant(qualified: str, facts, depth: int) -> Optional[str]:
    if not facts.context.cross_file:
        return None
    found = project.find_assignment(qualified, facts.config, project.roots_for(facts))
    if found is None:
        return None
    value, other = found
    return static_path(value, other, depth + 1)


@dataclass(frozen=True)
class MigrationsLocation:
    """Where a migration command's env.py lives: ``path`` absolute, or relative to a directory the command
    runs from (``relative=True``); ``path`` None when the code does not fix it."""

    path: Optional[str]
    relative: bool = False
    how: str = ""

    def matches(self, env_directory: str, near: str) -> bool:
        """Whether this is ``env_directory``; a relative location may start from ``near`` or any directory
        above it."""
        if self.path is None:
            return False
        target = os.path.normpath(os.path.abspath(env_directory))
        if not self.relative:
            return os.path.normpath(self.path) == target
        current = os.path.abspath(near)
        while True:
            if os.path.normpath(os.path.join(current, self.path)) == target:
                return True
            above = os.path.dirname(current)
            if above == current:
                return False
            current = above


def script_location_of_ini(ini_path: str, config: Config) -> MigrationsLocation:
    """``[alembic] script_location`` of an .ini file (``%(here)s`` is the file's directory; a relative
    location starts from the directory Alembic runs in, normally the file's own; ``pkg:dir`` is a
    directory of a package)."""
    import configparser

    text = read_text(ini_path)
    if not text:
        return MigrationsLocation(None)
    parser = configparser.ConfigParser(defaults={"here": os.path.dirname(os.path.abspath(ini_path))},
                                       interpolation=configparser.BasicInterpolation(), strict=False)
    try:
        parser.read_string(text)
        location = parser.get("alembic", "script_location", fallback=None)
    except (configparser.Error, ValueError):
        return MigrationsLocation(None)
    if not location:
        return MigrationsLocation(None)
    return location_from_text(location.strip(), os.path.dirname(os.path.abspath(ini_path)), config,
                              f"script_location in {os.path.basename(ini_path)}")


def location_from_text(text: str, directory: str, config: Config, how: str) -> MigrationsLocation:
    if ":" in text and not os.path.isabs(text) and not re.match(r"^[A-Za-z]:[\\/]", text):
        package, _, inner = text.partition(":")
        for base in (directory, config.root):
            current = base
            while current:
                path = project.module_path(package, current)
                if path is not None:
                    return MigrationsLocation(os.path.join(os.path.dirname(path), inner), False, how)
                above = os.path.dirname(current)
                if above == current:
                    break
                current = above
        return MigrationsLocation(None)
    if os.path.isabs(text):
        return MigrationsLocation(text, False, how)
    return MigrationsLocation(os.path.normpath(os.path.join(directory, text)), False, how)


def ini_files_for(name: str, near: str) -> List[str]:
    """The .ini files a relative or container path may be, from ``near`` and the directories above it."""
    return resolve_file(name, near, ())
