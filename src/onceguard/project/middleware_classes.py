"""Classes a web framework makes once per process: middleware.

A middleware class is handed to the framework, not called by the project: ``Middleware(RateLimit, rate=5)`` in
Starlette's (or FastAPI's) list, ``app.add_middleware(RateLimit, rate=5)``, or its dotted path in Django's
``MIDDLEWARE`` setting.  The framework makes one instance as the application is built and passes every request
through it, so what the instance keeps on ``self`` lives as long as the process and is seen by no other worker
process or replica.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Iterator, NamedTuple, Optional

from ..analysis.facts import ModuleFacts
from ..knowledge import startup as known
from . import index as project
from .declared_types import class_of


class Registration(NamedTuple):
    path: str
    line: int
    how: str  # what registers it, for the finding to show


def middleware_registration(cls: ast.ClassDef, facts: ModuleFacts) -> Optional[Registration]:
    """Where the project registers ``cls`` as middleware, or None; read once per class."""
    cached = getattr(cls, "_og_middleware", False)
    if cached is not False:
        return cached
    # (a class a request passes through: what makes it worth a search of the project for its registration)
    found = next(_registrations(cls, facts), None) if passes_requests(cls) else None
    cls._og_middleware = found
    return found


def passes_requests(cls: ast.ClassDef) -> bool:
    """``cls`` defines a method a framework calls a middleware through for each request (``__call__``,
    ``dispatch``, ``process_request``...): only such a class can be one."""
    return any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in known.MIDDLEWARE_METHODS
               for s in cls.body)


def _registrations(cls: ast.ClassDef, facts: ModuleFacts) -> Iterator[Registration]:
    yield from _handed_in(cls, facts, facts)
    if not facts.context.cross_file:
        return
    # (only files whose text hands the class to a registration, or names it in a dotted path, are parsed)
    handed = re.compile(rb"(?:" + b"|".join(re.escape(name.encode()) for name in known.MIDDLEWARE_REGISTRATIONS)
                        + rb")\(\s*(?:[\w.]+\.)?" + re.escape(cls.name.encode()) + rb"\b")
    dotted = re.compile(rb"[\"'][\w.]+\." + re.escape(cls.name.encode()) + rb"[\"']")
    for path in project.files_mentioning(cls.name, project.search_root(facts)):
        if path == facts.context.path:
            continue
        source = project.read_bytes(path)
        by_call, by_path = handed.search(source) is not None, dotted.search(source) is not None
        if not (by_call or by_path):
            continue
        other = project.module_facts(path, facts.config)
        if other is None:
            continue
        if by_call:
            yield from _handed_in(cls, facts, other)
        if by_path:
            yield from _listed_in(cls, facts, other)


def _handed_in(cls: ast.ClassDef, facts: ModuleFacts, other: ModuleFacts) -> Iterator[Registration]:
    """``Middleware(Cls, ...)`` / ``app.add_middleware(Cls, ...)`` in ``other``."""
    for name in known.MIDDLEWARE_REGISTRATIONS:
        for call in other.calls_by_name.get(name, ()):
            handed = call.args[0] if call.args else None
            if handed is None or not isinstance(handed, (ast.Name, ast.Attribute)):
                continue
            ref = class_of(handed, other)
            if ref is not None and ref[0].name == cls.name and ref[1].context.path == facts.context.path:
                yield Registration(other.context.path, call.lineno,
                                   f"`{cls.name}` is registered as middleware: the framework makes one per process")


def _listed_in(cls: ast.ClassDef, facts: ModuleFacts, other: ModuleFacts) -> Iterator[Registration]:
    """``MIDDLEWARE = [..., "shop.middleware.Cls"]``: a dotted path whose module is the class's."""
    for statement in other.tree.body:
        if not isinstance(statement, (ast.Assign, ast.AugAssign)):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if not any(isinstance(t, ast.Name) and t.id in known.MIDDLEWARE_SETTINGS for t in targets):
            continue
        for node in ast.walk(statement.value):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.rsplit(".", 1)[-1] == cls.name and "." in node.value:
                module = node.value.rsplit(".", 1)[0]
                found = project.module_path(module, project.search_root(facts))
                if found is not None and os.path.abspath(found) == os.path.abspath(facts.context.path):
                    yield Registration(other.context.path, node.lineno, f"`{cls.name}` is listed in {targets[0].id}: "
                                       "the framework makes one per process")
