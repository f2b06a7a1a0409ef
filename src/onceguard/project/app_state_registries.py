"""Registries of connections kept in the application's own state: aiohttp's ``app["clients"]`` (also read as
``request.app["clients"]`` or ``request.config_dict["clients"]``) and Starlette's ``app.state.clients``
(``request.app.state.clients``, ``websocket.app.state.clients``).

The application object lives once per process, like a module: a container kept on it into which a WebSocket
handler puts the connection it serves holds this process's connections only, whichever module reads it.  Such a
registry is known by its key on the application, the same wherever the application is reached from.
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..knowledge import process_local as known
from . import index as project
from .socket_registries import SOCKET_WORDS, registering_chains

#: What reaches the application in a handler: the app itself, a request's or a connection's ``.app``, and
#: aiohttp's ``config_dict`` (the app's mapping with its parents').
_APP_HOLDERS = frozenset({"app", "config_dict"})
#: Calls whose result is the same container: a copy taken before a broadcast (``known.CONTAINER_COPIES``), a view.
_VIEWS = frozenset({"values", "copy", "items"})
#: Modules read for a handler filling one key (those whose text names the key and a WebSocket, the first few).
_MAX_FILLING_MODULES = 12
_SOCKET_WORDS = SOCKET_WORDS + (b".prepare(",)  # (aiohttp's ``await ws.prepare(request)``)


def app_state_key(node: ast.AST, function: Optional[FunctionNode], depth: int = 0) -> Optional[str]:
    """``app["clients"]`` or ``app.state.clients`` for an expression that reads that entry of the application's
    state (through a copy, a view, or a local name bound to it in ``function``); None otherwise."""
    if depth > 3:
        return None
    while isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in known.CONTAINER_COPIES and len(node.args) == 1:
            node = node.args[0]
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS and not node.args:
            node = node.func.value
        else:
            return None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str) and _is_app(node.value):
        return f'app["{node.slice.value}"]'
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "state" \
            and _is_app(node.value.value):
        return f"app.state.{node.attr}"
    if isinstance(node, ast.Name) and function is not None:
        bound = _local_binding(node.id, function)
        if bound is not None:
            return app_state_key(bound, function, depth + 1)
    return None


def _is_app(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "app") or (
        isinstance(node, ast.Attribute) and node.attr in _APP_HOLDERS)


def _local_binding(name: str, function: FunctionNode) -> Optional[ast.AST]:
    """The value ``name`` is bound to in ``function``, when it is bound once."""
    found = [node.value for node in walk(function) if isinstance(node, (ast.Assign, ast.AnnAssign))
             and node.value is not None and any(isinstance(t, ast.Name) and t.id == name
                                                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    return found[0] if len(found) == 1 else None


_FILLED: Dict[Tuple[str, str], Optional[Tuple[ast.AST, ModuleFacts]]] = {}
project.on_clear(_FILLED.clear)


def filled_with_sockets(key: str, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """Where a WebSocket handler of the project (this module's, or on the command line another's) puts the
    connection it serves into the application's entry ``key``: the registering statement and its module."""
    spelled = key.split('"')[1] if '"' in key else key.rsplit(".", 1)[-1]
    cache_key = (project.search_root(facts) if facts.context.cross_file else facts.context.path or "", key)
    if cache_key in _FILLED:
        return _FILLED[cache_key]
    modules = [facts]
    if facts.context.cross_file:
        read = 0
        for path in project.files_mentioning(spelled, project.search_root(facts)):
            if not any(word in project.read_bytes(path) for word in _SOCKET_WORDS):
                continue
            read += 1
            if read > _MAX_FILLING_MODULES:
                break
            other = project.module_facts(path, facts.config)
            if other is not None and other is not facts and not other.context.is_test:
                modules.append(other)
    found = None
    for module in modules:
        for function, node, chain in registering_chains(module):
            # (the entry itself may be what is written: ``request.app["feeds"].append(q)`` puts ``q`` into the
            # entry, which the registry's reading of ``x[key]`` as a group under a key would take for the app)
            if key in (app_state_key(chain, function), app_state_key(_written_container(node), function)):
                found = (node, module)
                break
        if found is not None:
            break
    _FILLED[cache_key] = found
    return found


def _written_container(node: ast.AST) -> ast.AST:
    """The container a registering call or assignment writes, as spelled (``x.append(q)``: ``x``; ``x[k] = q``:
    ``x``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
        return node.targets[0].value
    return node
