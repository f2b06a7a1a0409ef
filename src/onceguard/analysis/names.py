"""Imports -> qualified names, at ``ast`` speed.

The part of libcst's QualifiedNameProvider the rules need: ``bg.BackgroundScheduler()``
after ``import apscheduler.schedulers.background as bg`` is
``apscheduler.schedulers.background.BackgroundScheduler``.  As in libcst, call
parentheses inside a chain are dropped (``Redis.from_url(u).lock`` is
``redis.Redis.from_url.lock``) so fluent APIs match by prefix, and a name that
was not imported keeps its local spelling (``s.add_job``).
"""
from __future__ import annotations

import ast
from typing import Dict, Iterable, Optional, Set


def dotted(node: ast.AST) -> Optional[str]:
    """The attribute chain of ``node`` as written, dropping calls and awaits; None if not a chain."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Await):
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        else:
            return None
    return ".".join(reversed(parts))


def plain_name(node: ast.AST) -> Optional[str]:
    """``self.token`` -> "self.token"; None for anything but names and attributes (no calls, no subscripts)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class ImportTable:
    """Local names bound by import statements anywhere in a module."""

    __slots__ = ("aliases", "package", "modules")

    def __init__(self, imports: Iterable[ast.AST], package: str = "") -> None:
        self.package = package
        self.aliases: Dict[str, str] = {}
        #: local names an ``import`` statement binds to a module (``sa`` after ``import sqlalchemy as sa``)
        self.modules: Set[str] = set()
        for node in imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                        self.modules.add(alias.asname)
                    else:
                        head = alias.name.split(".", 1)[0]
                        self.aliases.setdefault(head, head)
                        self.modules.add(head)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    module = self._relative(module, node.level)
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    self.modules.discard(local)
                    self.aliases[local] = f"{module}.{alias.name}" if module else alias.name

    def _relative(self, module: str, level: int) -> str:
        parts = self.package.split(".") if self.package else []
        if level - 1 > 0:
            parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        base = ".".join(parts)
        if not base:
            return "." * level + module
        return f"{base}.{module}" if module else base

    def qualify(self, node: ast.AST) -> Optional[str]:
        """Qualified name of a chain; its head is replaced by what the import bound it to."""
        name = dotted(node)
        if name is None:
            return None
        return self.qualify_dotted(name)

    def qualify_dotted(self, name: str) -> str:
        head, sep, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return name
        return f"{target}{sep}{rest}"

    def is_imported(self, local: str) -> bool:
        return local in self.aliases

    def is_module(self, local: str) -> bool:
        """Whether an ``import`` statement binds ``local`` to a module (so ``local.f(...)`` calls a module's
        function, not a method of an object)."""
        return local in self.modules and not self.aliases.get(local, local).startswith(".")
