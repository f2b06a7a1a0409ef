"""Which Django caches are per process: the default cache of a project whose settings configure no shared one.

A key there is never another replica's lock or counter (Django: LocMemCache is "private to each process").
"""
from __future__ import annotations

import ast
import os
from typing import Dict, List, Optional, Tuple

from . import index as project
from ..analysis.facts import ModuleFacts, walk
from ..analysis.handles import Handle
from ..knowledge import process_state as process_known
from ..knowledge import redis_clients as known
from .instance_lifetimes import _top_level_statements

_settings_cache: Dict[str, Optional[bool]] = {}
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", "site-packages", ".tox"})


def per_process(handle: Handle, facts: ModuleFacts) -> bool:
    """Django's default cache in a project whose settings (visible, CLI only) configure no shared one: it is
    ``LocMemCache`` (or a file/dummy cache) in every process, so a key there excludes nobody on another replica."""
    if handle.kind != known.DJANGO_CACHE or handle.how != "cache" or not facts.context.cross_file:
        return False
    if not facts.context.path:
        return False
    # The checked file's own project (the directory above its top package), not every project under the
    # configured root: a monorepo's other services have settings of their own.
    roots = project.package_root(facts.context.path)
    if roots not in _settings_cache:
        _settings_cache[roots] = _default_cache_is_local(roots, facts)
    return bool(_settings_cache[roots])


def _default_cache_is_local(roots: str, facts: ModuleFacts) -> Optional[bool]:
    """True: the settings leave the default cache per process; False: they configure it; None: no settings seen."""
    seen_settings = False
    backends: List[Optional[str]] = []
    for root in roots.split(os.pathsep):
        if not root or not os.path.isdir(root):
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
            in_settings_package = os.path.basename(directory) == "settings"
            for filename in files:
                if not filename.endswith(".py") or "test" in filename:
                    continue
                if not (filename.startswith("settings") or in_settings_package):
                    continue
                other = project.module_facts(os.path.join(directory, filename), facts.config)
                if other is None:
                    continue
                names = _module_assigned_names(other.tree)
                if not names & known.DJANGO_SETTINGS_MARKERS and "CACHES" not in names:
                    continue
                seen_settings = True
                backends.extend(_default_backends(other.tree))
    if not seen_settings:
        return None
    return all(b is not None and b in known.PER_PROCESS_CACHE_BACKENDS for b in backends)


def _module_assigned_names(tree: ast.Module) -> set:
    names = set()
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Name):
                    names.add(target.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "CACHES":
            names.add("CACHES")
    return names


def _default_backends(tree: ast.Module) -> List[Optional[str]]:
    """The backend given to the default cache by each assignment (``None`` where it is not a literal)."""
    found: List[Optional[str]] = []

    def backend_of(value: ast.AST) -> Optional[str]:
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == "BACKEND":
                    return v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
        return None

    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "CACHES":
            found.append(None)  # CACHES.update(...)
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "CACHES":
                if isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values):
                        if k is None:
                            found.append(None)
                        elif isinstance(k, ast.Constant) and k.value == "default":
                            found.append(backend_of(v))
                else:
                    found.append(None)
            elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                  and target.value.id == "CACHES"):
                key = target.slice
                if isinstance(key, ast.Constant) and key.value != "default":
                    continue
                found.append(backend_of(node.value))
    return found


def cache_alias_bound(receiver: ast.AST, facts: ModuleFacts) -> Optional[ast.Subscript]:
    """``caches["quota"]`` that a local ``receiver`` was bound to, once, in its function."""
    function = facts.enclosing_function(receiver)
    if not isinstance(receiver, ast.Name) or function is None:
        return None
    values = [node.value for node in walk(function) if isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and node.targets[0].id == receiver.id]
    if len(values) == 1 and isinstance(values[0], ast.Subscript) \
            and (facts.qualify(values[0].value) or "") in process_known.DJANGO_CACHE_NAMES:
        return values[0]
    return None


def django_cache_behind(receiver: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The Django cache (``cache``, ``caches["quota"]``) a receiver holds for the process's life, with the module
    it is spelled in: a module-level name bound to it, or ``self.cache = caches[alias]`` in the receiver's class
    (an object that keeps its cache handle).  None for anything else."""
    if not isinstance(receiver, (ast.Name, ast.Attribute)):
        return None
    from .process_state import binding_of

    binding = binding_of(receiver, facts)
    if binding is None:
        return None
    value, where = binding.value, binding.facts or facts
    spelled = value.value if isinstance(value, ast.Subscript) else value
    if isinstance(spelled, (ast.Name, ast.Attribute)) \
            and (where.qualify(spelled) or "") in process_known.DJANGO_CACHE_NAMES:
        return value, where
    return None


def caches_settings(facts: ModuleFacts) -> List[ast.AST]:
    """The value of each top-level ``CACHES = ...`` of the project's modules (tests left out), command line only."""
    if not facts.context.cross_file:
        return []
    found: List[ast.AST] = []
    for path in project.files_mentioning(process_known.DJANGO_CACHES_SETTING, project.search_root(facts)):
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for statement in _top_level_statements(other.tree):
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == process_known.DJANGO_CACHES_SETTING for t in targets):
                found.append(statement.value)
    return found


def alias_is_per_process(facts: ModuleFacts, alias: str) -> Optional[str]:
    """Why the Django cache ``alias`` (``caches["quota"]``) is per process: every ``CACHES`` setting of the
    project that names it gives it a local-memory, file or dummy backend.  None when unknown or shared."""
    backends: List[object] = []
    for setting in caches_settings(facts):
        if not isinstance(setting, ast.Dict):
            continue
        for key, value in zip(setting.keys, setting.values):
            if isinstance(key, ast.Constant) and key.value == alias and isinstance(value, ast.Dict):
                backend = next((v.value if isinstance(v, ast.Constant) else None
                                for k, v in zip(value.keys, value.values)
                                if isinstance(k, ast.Constant) and k.value == "BACKEND"), None)
                backends.append(backend)
    if backends and all(b in process_known.DJANGO_PROCESS_BACKENDS for b in backends):
        return f"`CACHES[{alias!r}]` is `{str(backends[0]).rsplit('.', 1)[-1]}`, private to each process"
    return None
