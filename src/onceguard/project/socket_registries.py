"""Registries of connections: the containers a module keeps the WebSocket connections (or the queues of the
streams) it serves in.

A container at module or class level, or on ``self``, into which a function puts a connection it was handed
(``self.active.append(ws)``, ``rooms[room].add(ws)``) holds the connections this process serves, and only those.
``registries_of_module`` finds them in a module, ``registry_at`` says which one an expression reads, and
``foreign_registry`` finds one another module of the project keeps.
"""
from __future__ import annotations

import ast
import os
from typing import Dict, Iterator, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.names import dotted
from ..knowledge import process_local as known
from . import index as project
from .connection_queues import connection_queues
from .definitions import definition_facts


def is_socket_annotation(annotation: Optional[ast.AST], facts: ModuleFacts) -> bool:
    if annotation is None:
        return False
    for node in walk(annotation):
        if isinstance(node, (ast.Name, ast.Attribute)):
            if (facts.qualify(node) or "") in known.SOCKET_TYPES or (dotted(node) or "") in known.SOCKET_TYPES:
                return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in known.SOCKET_TYPES:
            return True
    return False


def socket_parameters(function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    """The WebSocket connections ``function`` serves: parameters that are (annotated, or accepted/sent on), the
    connection it makes for the request it handles (aiohttp's ``ws = web.WebSocketResponse()``), and the one a
    framework binds for the handler (Quart's ``websocket``)."""
    arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    found = {a.arg for a in arguments if is_socket_annotation(a.annotation, facts)}
    owner = facts.enclosing_class(function)
    if owner is not None and arguments and arguments[0].arg == "self" and any(
            (facts.qualify(base) or "") in known.SOCKET_HANDLER_CLASSES for base in owner.bases):
        found.add("self")  # (a Tornado ``WebSocketHandler``'s methods serve the connection it is)
    names = {a.arg for a in arguments}
    for node in walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in known.SOCKET_ONLY_METHODS and isinstance(node.func.value, ast.Name)
                and node.func.value.id in names):
            found.add(node.func.value.id)
        elif isinstance(node, ast.Name) and (facts.qualify(node) or "") in known.SOCKET_GLOBALS:
            found.add(node.id)  # (Quart's ``websocket``: the connection this handler serves)
        elif (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call)
              and isinstance(node.value.func, (ast.Name, ast.Attribute))
              and (facts.qualify(node.value.func) or "") in known.SOCKET_TYPES):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(target.id for target in targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _opens_stream(node.value, arguments, facts):
            # ``response = await request.respond(content_type="text/event-stream")``: the request's own stream
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(target.id for target in targets if isinstance(target, ast.Name))
    return found


def _opens_stream(value: Optional[ast.AST], arguments, facts: ModuleFacts) -> bool:
    """``await request.respond(...)`` on a parameter declared as a request whose method opens its stream."""
    call = value.value if isinstance(value, ast.Await) else value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)):
        return False
    for argument in arguments:
        if argument.arg == call.func.value.id and argument.annotation is not None:
            methods = known.STREAM_OPENING_METHODS.get(facts.qualify(argument.annotation) or "", frozenset())
            return call.func.attr in methods
    return False


def registries_of_module(facts: ModuleFacts) -> Dict[str, ast.AST]:
    """Registries of this module: containers at module or class level, or assigned to ``self.<attr>`` in a
    class, into which a function puts a WebSocket connection.  Key: ``name`` or ``.attr`` (instance)."""
    def build(_facts: ModuleFacts) -> Dict[str, ast.AST]:
        containers: Dict[str, ast.AST] = {}
        for statement in facts.tree.body:
            _collect_containers(statement, containers, facts, prefix="")
            if isinstance(statement, ast.ClassDef):
                for inner in statement.body:
                    _collect_containers(inner, containers, facts, prefix=".")
                for node in walk(statement):
                    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for target in targets:
                            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                                    and target.value.id == "self" and _is_empty_container(node.value)):
                                containers.setdefault("." + target.attr, node)
        registries: Dict[str, ast.AST] = {}
        for chain in _registrations(facts):
            key = _chain_root(chain)
            if key is None:
                continue
            for candidate in (key, "." + key.split(".")[-1]):
                if candidate in containers and (candidate.startswith(".") or "." not in key):
                    registries.setdefault(candidate, containers[candidate])
        for name in _filled_elsewhere([n for n in containers if not n.startswith(".") and n not in registries], facts):
            registries[name] = containers[name]
        return registries

    return facts.cached("broadcast:registries", build)


def _is_empty_container(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not getattr(value, "keys", None) and not getattr(value, "elts", None)
    if isinstance(value, ast.Call) and not value.args:
        name = dotted(value.func) or ""
        return name.split(".")[-1] in ("dict", "list", "set", "defaultdict", "deque", "OrderedDict", "WeakSet",
                                        "WeakValueDictionary")
    if isinstance(value, ast.Call) and value.args:
        name = dotted(value.func) or ""
        return name.split(".")[-1] == "defaultdict"
    return False


def _collect_containers(statement: ast.AST, containers: Dict[str, ast.AST], facts: ModuleFacts, prefix: str) -> None:
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if _is_empty_container(statement.value):
            for target in targets:
                if isinstance(target, ast.Name):
                    containers.setdefault(prefix + target.id, statement)


def _registering_chain(node: ast.AST, sockets: Set[str]) -> Optional[ast.AST]:
    """The expression of the container a socket is put into at ``node`` (a group of it under a key included)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in known.REGISTER_METHODS:
        if any(isinstance(a, ast.Name) and a.id in sockets for a in node.args):
            return _group_owner(node.func.value)
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in sockets:
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                return _group_owner(target.value)
    return None


def _group_owner(node: ast.AST) -> ast.AST:
    # ``registry[key]`` and ``registry.setdefault(key, set())``: the group of the registry under a key
    while isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("setdefault", "get")):
        node = node.value if isinstance(node, ast.Subscript) else node.func.value
    return node


#: At most this many other modules are read for the handlers that fill a module's container.
_MAX_FILLING_MODULES = 12


def _filled_elsewhere(names, facts: ModuleFacts) -> Set[str]:
    """Module-level containers of ``facts`` (``names``) into which a function of another module of the project
    puts a connection it serves (``hub.subscribers.add(ws)`` beside ``from . import hub``): the module keeps the
    registry, the handlers live elsewhere.  Command line only; only a module that names a WebSocket is asked."""
    if not names or not facts.context.cross_file:
        return set()
    text = "\n".join(facts.lines)
    if not any(word.decode() in text for word in SOCKET_WORDS):
        return set()
    from .bindings import own_module_names

    own = os.path.abspath(facts.context.path or "")
    root = project.search_root(facts)
    found: Set[str] = set()
    for name in names:
        wanted = {f"{module}.{name}" for module in own_module_names(facts)}
        read = 0
        for path in project.files_mentioning(name, root):
            if os.path.abspath(path) == own or not any(word in project.read_bytes(path) for word in SOCKET_WORDS):
                continue
            read += 1
            if read > _MAX_FILLING_MODULES:
                break
            other = project.module_facts(path, facts.config)
            if other is not None and not other.context.is_test and _fills(other, wanted):
                found.add(name)
                break
    return found


def _fills(other: ModuleFacts, wanted: Set[str]) -> bool:
    """A function of ``other`` puts a connection it serves into one of the containers ``wanted`` names."""
    return any(isinstance(chain, (ast.Name, ast.Attribute)) and (other.qualify(chain) or "") in wanted
               for chain in _registrations(other))


def _registrations(facts: ModuleFacts) -> Iterator[ast.AST]:
    """The containers (or a group of one under a key) that a function of the module puts a connection it
    serves into, as written there."""
    return (chain for _, _, chain in registering_chains(facts))


def registering_chains(facts: ModuleFacts) -> Iterator[Tuple[FunctionNode, ast.AST, ast.AST]]:
    """(function, statement or call, container) for each place a function of the module puts a connection it
    serves into a container (or a group of one under a key), as written there."""
    for function in facts.functions:
        sockets = socket_parameters(function, facts) | connection_queues(function, facts)
        if not sockets:
            continue
        for node in walk(function):
            chain = _registering_chain(node, sockets)
            if chain is not None:
                yield function, node, chain


def _chain_root(node: ast.AST) -> Optional[str]:
    text = dotted(node)
    if text and text.startswith("self."):
        return "." + text[len("self."):]
    return text


def registry_at(node: ast.AST, registries: Dict[str, ast.AST]) -> Optional[str]:
    """The registry key ``node`` (a chain, maybe subscripted or ``.values()``) reads, if it is one."""
    while isinstance(node, (ast.Subscript, ast.Call)):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("values", "items", "copy", "get"):
                node = node.func.value
                continue
            if isinstance(node.func, (ast.Name,)) and node.func.id in ("list", "tuple", "set") and node.args:
                node = node.args[0]
                continue
            return None
        node = node.value
    text = dotted(node)
    if not text:
        return None
    if text in registries:
        return text
    attr = "." + text.split(".")[-1]
    if "." in text and attr in registries:
        return attr
    return None


_FOREIGN_REGISTRIES: Dict[Tuple[str, str], Optional[Tuple[str, ModuleFacts]]] = {}
project.on_clear(_FOREIGN_REGISTRIES.clear)
#: A module that keeps a registry of WebSocket connections says so in its bytes.
SOCKET_WORDS = (b"WebSocket", b"websocket", b".accept(")
#: ... and one that keeps the queues of its connections' streams names a queue.
_REGISTRY_MODULE_WORDS = SOCKET_WORDS + (b"Queue", b"memory_object_stream", b"memory_channel")


def foreign_registry(node: ast.AST, facts: ModuleFacts, foreign) -> Optional[Tuple[str, ModuleFacts]]:
    """A registry attribute (``manager.active_connections``) of a class in another module of the project:
    found by the attribute's name among the files that mention it and a WebSocket (command line only; one
    search per attribute name and project in a run)."""
    if not facts.context.cross_file:
        return None
    while isinstance(node, (ast.Subscript, ast.Call)):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "set", "sorted") and node.args:
                node = node.args[0]  # a copy walked: ``for q in tuple(registry.clients)``
                continue
            if not isinstance(node.func, ast.Attribute):
                return None
            node = node.func.value
            continue
        node = node.value
    if not isinstance(node, ast.Attribute) or (dotted(node) or "").startswith("self."):
        return None
    if isinstance(node.value, ast.Name) and facts.imports.is_imported(node.value.id):
        # ``registry.clients`` of ``from .realtime import registry``: a module-level registry of that module
        qualified = facts.qualify(node) or ""
        located = definition_facts(qualified, facts, lambda path, name: any(
            word in project.read_bytes(path) for word in _REGISTRY_MODULE_WORDS)) if "." in qualified else None
        if located is not None and located[1] in registries_of_module(located[0]):
            return located[1], located[0]
    attr = "." + node.attr
    root = project.search_root(facts)
    key = (root, attr)
    if key in _FOREIGN_REGISTRIES:
        return _FOREIGN_REGISTRIES[key]
    holders = []
    for path in project.files_mentioning(node.attr, root):
        text = project.read_bytes(path)
        if not any(word in text for word in SOCKET_WORDS):
            continue
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        if attr in registries_of_module(other):
            holders.append(other)
            if len(holders) > 1:
                break
    found = (attr, holders[0]) if len(holders) == 1 else None
    _FOREIGN_REGISTRIES[key] = found
    return found
