"""OG605: a message sent to connections that only this process holds.

A WebSocket (or Socket.IO, or Channels) connection lives in the one process that accepted it.  A
registry of connections kept in that process's memory, a Socket.IO server with no message queue, or an
in-memory channel layer can reach only the clients connected to the same replica: a broadcast from
one replica misses the clients of the others, and a socket looked up by user or sid is not there when
the user is connected elsewhere.  Answering on the connection being served is fine; sending to the
others is what needs a shared channel.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.names import dotted
from ..knowledge import process_local as known
from ..model import Diagnostic, Related
from ..project import index as project
from ..project.bindings import own_module_names
from ..project.forwarding import forwarded
from ..project.settings_objects import replaced_where_extended
from ..project.shared_channels import per_replica_by_design
from ..project.app_state_registries import app_state_key, filled_with_sockets
from ..project.socket_registries import foreign_registry, registries_of_module, registry_at, socket_parameters
from ..project.through_helpers import through_helpers
from .base import Rule
from .fix_plans import shared_store_snippet
from .rate_limits import project_mentions
from .registry import register

_MAX_RELATED = 5


def _string(node: Optional[ast.AST]) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _place(facts: ModuleFacts, node: ast.AST, message: str) -> Related:
    return Related(facts.context.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1, message)


# =====================================================================================================
# Socket.IO servers without a message queue
# =====================================================================================================
def _server_bindings(facts: ModuleFacts) -> List[Tuple[str, ast.Call, str]]:
    """(name, constructor call, qualified constructor) of each Socket.IO server bound at module level."""
    found = []
    for statement in facts.tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Call):
            qualified = facts.callee(statement.value) or ""
            if qualified not in known.SOCKETIO_SERVERS:
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else (
                    target.attr if isinstance(target, ast.Attribute) else None)
                if name:
                    found.append((name, statement.value, qualified))
    return found


def _shared_by_keyword(call: ast.Call) -> bool:
    return any(k.arg in known.SOCKETIO_SHARED_KEYWORDS or k.arg is None for k in call.keywords)


def _init_app_shares(facts: ModuleFacts, name: str) -> bool:
    """``name.init_app(app, message_queue=...)`` in this file."""
    for call in facts.calls_named("init_app"):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if receiver is not None and (dotted(receiver) or "").split(".")[-1] == name and _shared_by_keyword(call):
            return True
    return False


def _project_shares(facts: ModuleFacts, name: str) -> bool:
    """Another module of the project gives the server its queue (``init_app``) or names the setting."""
    if project_mentions(facts, known.SOCKETIO_SHARED_SETTINGS):
        return True
    if not facts.context.cross_file:
        return False
    root = project.search_root(facts)
    for word in sorted(known.SOCKETIO_SHARED_KEYWORDS):
        for path in project.files_mentioning(word, root):
            other = project.module_facts(path, facts.config)
            if other is not None and not other.context.is_test and _init_app_shares(other, name):
                return True
    return False


def _own_sid(node: ast.AST, function: Optional[FunctionNode]) -> bool:
    """``to=sid`` with the handler's own ``sid`` parameter (also from a helper defined inside the handler),
    or ``to=request.sid``: the connection served."""
    text = dotted(node) or ""
    if text in ("request.sid", "flask.request.sid"):
        return True
    if not isinstance(node, ast.Name) or node.id not in known.OWN_SID_NAMES:
        return False
    while function is not None:
        parameters = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
        if node.id in parameters:
            return True
        function = ModuleFacts.enclosing_function(function)
    return False


def _server_send_reaches_others(call: ast.Call) -> Optional[str]:
    """How ``server.emit(...)`` addresses clients beyond the connection served, or None when it answers it."""
    function = ModuleFacts.enclosing_function(call)
    for name in known.SOCKETIO_TARGET_KEYWORDS:
        target = _keyword(call, name)
        if target is not None:
            return None if _own_sid(target, function) else "a room or a stored sid"
    if len(call.args) >= 3 and call.func.attr == "emit":  # python-socketio: emit(event, data, to)
        return None if _own_sid(call.args[2], function) else "a room or a stored sid"
    return "every client"


def _context_send_reaches_others(call: ast.Call) -> Optional[str]:
    """Flask-SocketIO's ``emit(...)`` in a handler answers the sender unless given a room or ``broadcast``."""
    function = ModuleFacts.enclosing_function(call)
    broadcast = _keyword(call, "broadcast")
    if isinstance(broadcast, ast.Constant) and broadcast.value is True:
        return "every client"
    for name in known.SOCKETIO_TARGET_KEYWORDS:
        target = _keyword(call, name)
        if target is not None and not _own_sid(target, function):
            return "a room or a stored sid"
    return None


def _sends_in(facts: ModuleFacts, names: Set[str], flask: bool) -> List[Tuple[ast.Call, str]]:
    """Sends beyond the served connection in ``facts``: through the server (by any of ``names``, qualified
    or as the last attribute of a chain) and, for Flask-SocketIO, its context functions."""
    found = []
    for call in facts.calls_named(*known.SOCKETIO_SEND_METHODS):
        func = call.func
        if flask and (facts.callee(call) or "") in known.FLASK_SOCKETIO_CONTEXT_SENDS:
            judge = _context_send_reaches_others
        elif isinstance(func, ast.Attribute):
            receiver = dotted(func.value) or ""
            qualified = facts.qualify(func.value) or ""
            if not (qualified in names or receiver in names or receiver.split(".")[-1] in names):
                continue
            judge = _server_send_reaches_others
        else:
            continue
        sites = _helper_sites(call, facts)
        for site in (sites if sites is not None else [call]):
            how = judge(site)
            if how and not per_replica_by_design(site, facts):
                found.append((site, how))
    return found


def _helper_sites(call: ast.Call, facts: ModuleFacts) -> Optional[List[ast.Call]]:
    """When ``call`` is all a small helper does (``def _emit(e, d, to): return sio.emit(e, d, to=to)``), the
    send as each caller in this module makes it, its arguments in place; None for any other call."""
    helper = ModuleFacts.enclosing_function(call)
    body = [s for s in helper.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))] \
        if helper is not None else []
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is not call:
        return None
    sites = []
    for site in facts.calls_named(helper.name):
        through = forwarded(site, facts)
        if through is None:
            return None  # a caller the helper cannot be read through: judge the send as written
        sites.append(through.call)
    return sites or None


def _socketio_servers(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    bindings = _server_bindings(facts)
    if not bindings:
        return
    for name, construction, qualified in bindings:
        flask = qualified == known.FLASK_SOCKETIO
        if _shared_by_keyword(construction) or _init_app_shares(facts, name) or _project_shares(facts, name):
            continue
        local = _sends_in(facts, {name}, flask)
        sends: List[Tuple[ast.Call, str, ModuleFacts]] = [(c, h, facts) for c, h in local]
        if facts.context.cross_file:
            sends.extend(_sends_elsewhere(facts, name, flask))
        if not sends:
            continue
        _, how, _ = sends[0]
        library = "Flask-SocketIO" if flask else "python-socketio"
        yield rule.finding(
            construction,
            f"This {library} server has no message queue, yet the code sends to {how}, so clients connected to "
            "another replica never get the message.",
            "Rooms, sids and the client list exist only in the process holding the connections. "
            + known.SOCKETIO_INSTEAD,
            fix=shared_store_snippet(
                "socketio-message-queue",
                'message_queue="redis://redis:6379/0"' if flask else
                'client_manager=socketio.AsyncRedisManager("redis://redis:6379/0")',
                "pass a queue every replica shares"),
            related=[_place(w, c, f"sends to {h} through the server") for c, h, w in sends[:_MAX_RELATED]],
        )


def _sends_elsewhere(facts: ModuleFacts, name: str, flask: bool) -> List[Tuple[ast.Call, str, ModuleFacts]]:
    qualified = {f"{module}.{name}" for module in own_module_names(facts)}
    root = project.search_root(facts)
    found: List[Tuple[ast.Call, str, ModuleFacts]] = []
    paths = list(project.files_mentioning(name, root))
    own = facts.context.path
    for path in paths:
        if path == own:
            continue
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        imported = {local for local, target in other.imports.aliases.items() if target in qualified}
        modules = own_module_names(facts)
        if not imported and not any(target.split(".")[-1] == name for target in other.imports.aliases.values()) \
                and not any(m in other.imports.aliases.values() for m in modules) \
                and not any(isinstance(node, ast.Import) and any(a.name in modules for a in node.names)
                            for node in walk(other.tree)):  # ``import pkg.extensions``
            continue
        names = qualified | imported | {name}
        found.extend((c, h, other) for c, h in _sends_in(other, names, flask))
    return found


# =====================================================================================================
# Django Channels: the in-memory layer
# =====================================================================================================
def _uses_channel_layer(facts: ModuleFacts) -> bool:
    """Some file of the project (the settings module's tree is not enough: consumers live in the apps beside
    it) sends through a channel layer or joins its groups."""
    root = facts.config.root or project.search_root(facts)
    return any(project.files_mentioning(word, root) for word in known.CHANNEL_LAYER_USES)


def _channel_layers(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    stem = facts.context.filename[:-3] if facts.context.filename.endswith(".py") else facts.context.filename
    if stem in known.DEVELOPMENT_SETTINGS_NAMES:
        return
    for statement in facts.tree.body:
        if not (isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CHANNEL_LAYERS" for t in statement.targets)):
            continue
        for node in walk(statement.value):
            if _string(node) in known.IN_MEMORY_CHANNEL_LAYERS:
                if facts.context.cross_file and not _uses_channel_layer(facts):
                    return  # nothing in the project sends through a layer: each process's own layer is unused
                if replaced_where_extended("CHANNEL_LAYERS", facts):
                    return  # a base value every deployed settings module built on it replaces
                yield rule.finding(
                    node,
                    "`InMemoryChannelLayer` keeps groups and channels in this process, so a `group_send` on one "
                    "replica never reaches the consumers connected to the others.",
                    "Groups and channels exist only in the process that made them. " + known.CHANNELS_INSTEAD,
                    fix=shared_store_snippet("channels-redis-layer", '"BACKEND": "channels_redis.core.RedisChannelLayer"',
                                             "use a layer every replica shares"),
                )


# =====================================================================================================
# Registries of connections kept in memory
# =====================================================================================================
def _send_target(call: ast.Call) -> Optional[ast.AST]:
    func = call.func
    if isinstance(func, ast.Attribute) and (func.attr in known.SOCKET_SEND_METHODS or func.attr in known.QUEUE_SEND_METHODS):
        return func.value
    return None


def _registry_sends(rule: Rule, facts: ModuleFacts) -> Iterator[Diagnostic]:
    registries = registries_of_module(facts)
    if not registries and not facts.context.cross_file and not any("app" in line for line in facts.lines):
        return  # (read alone, a module can only send to a registry it keeps, or one the application does)
    foreign: Dict[str, Optional[Tuple[str, ModuleFacts]]] = {}
    reported: Set[int] = set()
    for function in facts.functions:
        own = socket_parameters(function, facts)
        picked = _picked_sockets(function, facts, registries, foreign)
        for node in walk(function):
            if not isinstance(node, ast.Call):
                continue
            target = _send_target(node)
            found = None
            if target is not None and not (isinstance(target, ast.Name) and target.id in own):
                if isinstance(target, ast.Name) and target.id in picked:
                    found = picked[target.id]
                elif not _stores_own_under_same_key(target, function, own):
                    looked = _lookup(target, facts, registries, foreign, function)
                    if looked is not None:
                        found = ("a socket looked up in", node, looked[0], looked[1])
            elif target is None:
                # a socket picked out of the registry and handed on: the callee sends on it
                handed = [a for a in list(node.args) + [k.value for k in node.keywords]
                          if isinstance(a, ast.Name) and a.id in picked and picked[a.id][0] != _EVERY]
                if handed:
                    found = picked[handed[0].id]
            if found is None:
                continue
            how, pick, registry, where = found
            if id(pick) in reported:
                continue
            reported.add(id(pick))
            if per_replica_by_design(pick, facts):
                continue
            yield rule.finding(
                pick,
                f"`{function.name}()` sends to {how} `{_shown(registry)}`, a registry of the connections this "
                "process serves, so clients of the other replicas never get the message.",
                "The registry holds only the clients connected to this replica: another replica's client is not in "
                "it, or its socket is not found. " + known.REGISTRY_INSTEAD,
                related=[_place(where, registries_node(where, registry),
                                f"`{_shown(registry)}` holds this process's connections")],
            )


_EVERY = "every connection in"


def registries_node(facts: ModuleFacts, registry: str) -> ast.AST:
    if registry.startswith("app"):  # (kept on the application: where a handler puts its connection in)
        found = filled_with_sockets(registry, facts)
        return found[0] if found is not None else facts.tree
    return registries_of_module(facts).get(registry, facts.tree)


def _shown(registry: str) -> str:
    return registry.lstrip(".")


def _lookup(target: ast.AST, facts: ModuleFacts, registries, foreign,
            function: Optional[FunctionNode] = None) -> Optional[Tuple[str, ModuleFacts]]:
    key = registry_at(target, registries) if isinstance(target, (ast.Subscript, ast.Call)) else None
    if key is not None:
        return key, facts
    if isinstance(target, (ast.Subscript, ast.Call)):
        return foreign_registry(target, facts, foreign) or _in_app_state(target, facts, function)
    return None


def _in_app_state(node: ast.AST, facts: ModuleFacts, function: Optional[FunctionNode]
                  ) -> Optional[Tuple[str, ModuleFacts]]:
    """A registry the application keeps (``request.app["clients"]``, ``app.state.clients``) that a WebSocket
    handler of the project fills."""
    key = app_state_key(node, function)
    found = filled_with_sockets(key, facts) if key is not None else None
    return (key, found[1]) if found is not None else None


def _picked_sockets(function: FunctionNode, facts: ModuleFacts, registries, foreign) -> Dict[str, tuple]:
    """Names bound to a member of a registry in ``function``: loop variables over it (a broadcast) and
    ``ws = registry[0]`` / ``registry.get(user_id)`` (a socket picked out)."""
    picked: Dict[str, tuple] = {}
    own = socket_parameters(function, facts)

    def iterate(loop: ast.AST, target: ast.AST, iterated: ast.AST, place: ast.AST) -> None:
        """``for <target> in <iterated>`` (a loop, or a comprehension's generator): its names are members."""
        if not isinstance(target, (ast.Name, ast.Tuple)):
            return
        if isinstance(iterated, ast.Name) and iterated.id in picked and picked[iterated.id][0] == _EVERY:
            found = picked[iterated.id][2], picked[iterated.id][3]  # the members of a group of the registry
        else:
            found = _registry_or_foreign(iterated, facts, registries, foreign, iterated=True, function=function)
        if found is None:
            return
        names = [target] if isinstance(target, ast.Name) else [e for e in target.elts if isinstance(e, ast.Name)]
        for name in names:
            picked[name.id] = (_EVERY, place, found[0], found[1])

    nodes = list(walk(function))
    for node in nodes:
        # ``targets = list(self._clients)``: a copy of the whole registry (taken before sending, so that a
        # disconnect meanwhile does not change it), walked later -- read before the loops that walk it
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _copied(node.value) is not None:
            iterate(node, node.targets[0], _copied(node.value), node)
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            iterate(node, node.target, node.iter, node)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            # ``(ws.send_json(m) for ws in targets)``, ``[ws for sid in ids for ws in registry.get(sid, ())]``
            for generator in node.generators:
                iterate(node, generator.target, generator.iter, node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            # ``targets = [ws for ... in <registry>]``: a group of the registry's members, walked later
            comprehension = node.value
            for generator in comprehension.generators:
                iterate(comprehension, generator.target, generator.iter, node)
            element = comprehension.elt
            if isinstance(element, ast.Name) and element.id in picked and picked[element.id][0] == _EVERY:
                picked[node.targets[0].id] = picked[element.id]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value.body if isinstance(node.value, ast.IfExp) else node.value
            if _copied(value) is not None:
                continue  # (read first, below)
            if isinstance(value, (ast.Subscript, ast.Call)):
                if _stores_own_under_same_key(value, function, own):
                    continue
                found = _registry_or_foreign(value, facts, registries, foreign, iterated=False, function=function)
                if found is not None:
                    picked[node.targets[0].id] = ("a socket picked out of", node, found[0], found[1])
    return picked


def _copied(value: ast.AST) -> Optional[ast.AST]:
    """The container ``list(x)`` / ``tuple(x)`` / ``sorted(x)`` copies."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in known.CONTAINER_COPIES \
            and len(value.args) == 1 and not value.keywords:
        return value.args[0]
    return None


def _stores_own_under_same_key(value: ast.AST, function: FunctionNode, own: Set[str]) -> bool:
    """``registry[key]`` read back in the handler that stored its own socket under ``key``."""
    if not own or not isinstance(value, ast.Subscript):
        return False
    key = ast.dump(value.slice)
    for node in walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in own:
            for target in node.targets:
                if isinstance(target, ast.Subscript) and ast.dump(target.slice) == key:
                    return True
    return False


def _registry_or_foreign(node: ast.AST, facts: ModuleFacts, registries, foreign, iterated: bool,
                         function: Optional[FunctionNode] = None):
    if iterated:
        key = registry_at(node, registries)
        if key is not None:
            return key, facts
        return foreign_registry(node, facts, foreign) or _in_app_state(node, facts, function)
    if isinstance(node, (ast.Subscript, ast.Call)):
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            return None
        key = registry_at(node, registries)
        if key is not None:
            return key, facts
        return foreign_registry(node, facts, foreign) or _in_app_state(node, facts, function)
    return None


@register
class InMemoryBroadcast(Rule):
    code = "OG605"
    name = "in-memory-broadcast"
    summary = "a message sent to connections only this process holds: clients of the other replicas never get it"
    triggers = known.BROADCAST_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        yield from _socketio_servers(self, facts)
        yield from _channel_layers(self, facts)
        # (a registry filled or read through small forwarding helpers is read through them)
        yield from _registry_sends(self, through_helpers(facts))
