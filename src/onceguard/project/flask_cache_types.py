"""Which backend a Flask-Caching ``Cache`` runs with.

``Cache(config={"CACHE_TYPE": "SimpleCache"})`` says it where the cache is made; more often the object is made
bare (``cache = Cache()`` in ``extensions.py``) and the application's configuration names the backend: a
config class's ``CACHE_TYPE = "SimpleCache"`` loaded with ``app.config.from_object``, ``app.config["CACHE_TYPE"]
= ...``, ``app.config.update(CACHE_TYPE=...)``, a settings dict.  Every value the project assigns counts; one
read from the environment counts as each value the deployment files set the variable to (a ConfigMap's
``CACHE_TYPE: SimpleCache``).  A backend chosen at run time otherwise (a variable the deployment files never set,
a computed value) makes the answer unknown.
"""
from __future__ import annotations

import ast
from typing import FrozenSet, Optional

from ..analysis.facts import ModuleFacts
from ..knowledge import process_state as known
from . import index as project
from .deployed_environment import deployed_values, environment_read


def cache_types(value: ast.AST, facts: ModuleFacts) -> Optional[FrozenSet[str]]:
    """The ``CACHE_TYPE`` values the ``Cache(...)`` built by ``value`` can run with: its own ``config`` dict's,
    else every constant the project's configuration assigns to the key (command line only).  None when one is
    chosen at run time or none is written down."""
    own = _constructor_type(value)
    if own is not None:
        return frozenset({own})
    if not facts.context.cross_file:
        return None

    def scan():
        found = set()
        paths = []
        for path in project.files_mentioning(known.FLASK_CACHE_TYPE_SETTING, project.search_root(facts)):
            other = project.module_facts(path, facts.config)
            if other is None or other.context.is_test:
                continue
            paths.append(path)
            for assigned in _assigned_values(other):
                if isinstance(assigned, ast.Constant) and isinstance(assigned.value, str):
                    found.add(assigned.value)
                    continue
                # read from the environment: what the deployment files set the variable to, when they do
                variable = environment_read(assigned, other)
                deployed = deployed_values(variable, other) if variable is not None else []
                if not deployed:
                    return None, tuple(paths)
                found.update(value for value, _, _ in deployed)
        return (frozenset(found) or None), tuple(paths)

    return project.scan_once(_by_root, project.search_root(facts), scan)


_by_root: dict = {}
project.on_clear(_by_root.clear)


def _constructor_type(value: ast.AST) -> Optional[str]:
    if not isinstance(value, ast.Call):
        return None
    for keyword in value.keywords:
        if keyword.arg == "config" and isinstance(keyword.value, ast.Dict):
            for key, item in zip(keyword.value.keys, keyword.value.values):
                if isinstance(key, ast.Constant) and key.value == known.FLASK_CACHE_TYPE_SETTING \
                        and isinstance(item, ast.Constant):
                    return str(item.value)
    return None


def _assigned_values(facts: ModuleFacts):
    """The values a module assigns to the setting: ``CACHE_TYPE = v`` (module or class level, or an attribute),
    ``config["CACHE_TYPE"] = v``, ``{"CACHE_TYPE": v}`` and ``update(CACHE_TYPE=v)``."""
    setting = known.FLASK_CACHE_TYPE_SETTING
    for statement in facts.assigns:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if statement.value is None:
            continue
        for target in targets:
            named = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) \
                else target.slice.value if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                else None
            if named == setting:
                yield statement.value
    for node in facts.nodes:
        if isinstance(node, ast.Dict):
            for key, item in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == setting:
                    yield item
    for call in facts.calls:
        for keyword in call.keywords:
            if keyword.arg == setting:
                yield keyword.value
