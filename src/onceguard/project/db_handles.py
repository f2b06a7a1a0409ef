"""Database handles across the project's modules: ``from app.db import engine, SessionLocal``.

:class:`~onceguard.analysis.handles.Handles` sees one module; most services build their engine, pool or
session factory in one module and use it everywhere else.  Here an imported name is followed to the
module-level binding (or the factory's ``return``) of the project module that defines it, when the run
reads across files (the CLI); elsewhere it stays unknown, as before.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..analysis.facts import ModuleFacts
from ..analysis.handles import Handle, Handles
from .definitions import definition_facts, top_level


class ProjectHandles(Handles):
    CACHE_KEY = "project_handles"

    def _elsewhere(self, qualified: str) -> Optional[tuple]:
        located = definition_facts(qualified, self.facts)
        if located is None or located[0] is self.facts:
            return None
        return located

    def _of_imported(self, qualified: str, depth: int) -> Optional[Handle]:
        located = self._elsewhere(qualified)
        if located is None or depth > self._MAX_DEPTH:
            return None
        where, name = located
        other = ProjectHandles.of_module(where)
        bindings = other._bindings(where.tree).get(name)
        found = other._agree(bindings, depth + 1) if bindings else None
        # The binding lives in the other file: its node means nothing here.
        return replace(found, origin=None) if found is not None else None

    def _returned_by_imported(self, qualified: str, depth: int) -> Optional[Handle]:
        located = self._elsewhere(qualified)
        if located is None or depth > self._MAX_DEPTH:
            return None
        where, name = located
        definition = top_level(where, name)
        found = _returned_once(where, definition) if definition is not None else None
        return replace(found, origin=None) if found is not None else None


def _returned_once(where: ModuleFacts, definition) -> Optional[Handle]:
    """What a factory of another module returns is a property of its def: asked from depth 0, once per def (a
    def being asked answers None, which ends a cycle), so a factory behind small helpers in several modules is
    not cut short by how deep the first question was."""
    memo = where.cached("project_handles:returned", lambda _facts: {})
    key = id(definition)
    if key not in memo:
        memo[key] = None
        memo[key] = ProjectHandles.of_module(where).returned_by(definition, 0)
    return memo[key]


def project_handles(facts: ModuleFacts) -> ProjectHandles:
    return ProjectHandles.of_module(facts)
