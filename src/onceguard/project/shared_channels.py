"""Sends each replica makes to its own clients of what every replica saw.

A loop over this process's WebSocket registry is a hazard when what it sends only this replica learned (a
request, a job). It is per-replica by design when every replica runs it on what every replica receives: code
start-up runs (a watcher, a ticker), and code run for each message of a subscription to a shared channel (a
loop over ``pubsub.listen()``, a subscription callback), directly or through every call that reaches it.
"""
from __future__ import annotations

import ast
import os
from typing import FrozenSet, List, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, parent, walk
from ..knowledge import process_local as known
from . import index as project
from .startup import StartupMap

_MAX_CALLERS_DEPTH = 4  # calls followed up from a send to the code that runs it
_MAX_CALLER_FILES = 30  # files read for the references to one function


def per_replica_by_design(node: ast.AST, facts: ModuleFacts, depth: int = 0) -> bool:
    """Code that every replica runs on what every replica sees tells its own clients about it, and together
    the replicas' sends reach every client: code start-up runs (a watcher, a ticker), and code run for each
    message of a subscription to a shared channel (a loop over ``pubsub.listen()``, an ``add_listener``
    callback), directly or through every call that reaches it.  What one replica alone learns (a request, an
    event from one client, a job) must reach the others: a function such code also calls is not excused."""
    function = facts.enclosing_function(node)
    if function is None or depth > _MAX_CALLERS_DEPTH:
        return False
    if _in_subscription(node, function, facts):
        return True
    references = references_to(function, facts)
    calls = [(parent(r), where) for r, where in references if _called(r)]
    startup, outer = StartupMap.of_module(facts), function
    while outer is not None and startup.reason(outer) is None:  # (a def nested in start-up code runs with it)
        outer = facts.enclosing_function(outer)
    if outer is None and not (references and all(_called(r) or _subscribed_callback(r, w) or _handed_to_subscriber(r, w)
                                                 for r, w in references)):
        return False  # reached from nowhere in sight, or handed to code that is not a subscription
    return all(per_replica_by_design(call, where, depth + 1) for call, where in calls)


def _called(reference: ast.AST) -> bool:
    return isinstance(parent(reference), ast.Call) and parent(reference).func is reference


def _broker_in_sight(facts: ModuleFacts) -> bool:
    """The module imports a broker whose channels give every subscriber each message, opens a Redis
    ``.pubsub()`` or sends ``LISTEN``: what its subscriptions receive, every replica received."""
    return facts.cached("broadcast:broker", lambda _facts: any(
        target.split(".")[0] in known.SHARED_CHANNEL_PACKAGES for target in facts.imports.aliases.values())
        or any(True for _ in facts.calls_named(*known.PUBSUB_FACTORIES))
        or any(_listen_statement(node) for node in facts.nodes if isinstance(node, ast.Constant)))


def _listen_statement(node: ast.AST) -> bool:
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
    return text.lstrip().upper().startswith(known.LISTEN_STATEMENT + " ")


def channel_call(node: ast.AST, methods: FrozenSet[str], facts: ModuleFacts) -> bool:
    """A call of one of ``methods`` on a broker's client, not on this module's own class (an in-process bus),
    nor one that shares the messages out among the subscribers."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods):
        return False
    receiver = node.func.value
    return not ((isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")) or facts.module_method(node.func)
                or any(k.arg in known.SHARED_CHANNEL_SPLIT_KEYWORDS for k in node.keywords)) and _broker_in_sight(facts)


def _in_subscription(node: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``node`` is in a loop of ``function`` over a subscription's messages: a ``for`` over ``listen()`` (or
    over a name a subscription was bound to), a ``while`` that reads the channel (a ``subscribe`` there is a
    client joining), an ``async with`` that subscribes, or any loop of a function that sends ``LISTEN``."""
    reads = known.SHARED_CHANNEL_RECEIVES | known.SHARED_CHANNEL_SUBSCRIBES
    bound = {t.id for a in walk(function) if isinstance(a, ast.Assign) and any(
        channel_call(c, reads, facts) for c in walk(a.value)) for t in a.targets if isinstance(t, ast.Name)}
    listens = _broker_in_sight(facts) and any(_listen_statement(n) for n in walk(function))
    for above in ancestors(node):
        if above is function:
            return False
        if isinstance(above, (ast.For, ast.AsyncFor, ast.While)) and listens:
            return True
        if isinstance(above, (ast.For, ast.AsyncFor)):
            heads, methods = [above.iter], reads
        elif isinstance(above, ast.While):
            heads, methods = [above.test] + above.body, known.SHARED_CHANNEL_RECEIVES
        elif isinstance(above, (ast.With, ast.AsyncWith)):
            heads, methods = [item.context_expr for item in above.items], reads
        else:
            continue
        if any(channel_call(n, methods, facts) or (isinstance(n, ast.Name) and n.id in bound)
               for head in heads for n in walk(head)):
            return True
    return False


def _subscribed_callback(reference: ast.AST, facts: ModuleFacts) -> bool:
    """``reference`` is handed to a subscription as the callback of its messages (not as its channel)."""
    call = parent(reference)
    while isinstance(call, (ast.keyword, ast.Dict)):
        call = parent(call)
    return (isinstance(call, ast.Call) and reference is not call.func and not (call.args and call.args[0] is reference)
            and channel_call(call, known.SHARED_CHANNEL_CALLBACKS, facts))


def _handed_to_subscriber(reference: ast.AST, facts: ModuleFacts) -> bool:
    """``reference`` is handed to a project function (``relay_forever(ChatSocket.deliver)``) that calls the
    parameter it arrives as only for the messages of a subscription (``async for m in pubsub.listen(): deliver(...)``)."""
    from ..analysis.handed import parameter_names
    from .definitions import called_def

    call = parent(reference)
    if isinstance(call, ast.keyword):
        keyword, call = call, parent(call)
    else:
        keyword = None
    if not isinstance(call, ast.Call) or reference is call.func:
        return False
    found = called_def(call, facts)
    if found is None:
        return False
    target, where = found
    parameters = parameter_names(target, receiver=False)
    if keyword is not None:
        handed = keyword.arg
    else:
        index = next((i for i, a in enumerate(call.args) if a is reference), None)
        handed = parameters[index] if index is not None and index < len(parameters) else None
    if handed not in parameters:
        return False
    runs = [n for n in walk(target) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == handed]
    return bool(runs) and all(_in_subscription(run, target, where) for run in runs)


def references_to(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.AST, ModuleFacts]]:
    """Where ``function`` is named outside itself: ``name`` (not for a method) or ``<object>.name`` in its
    module (``self.name`` only in its own class) and, from the command line, in the project's other
    modules (tests left out)."""
    name, holder = function.name, parent(function)
    method = isinstance(holder, ast.ClassDef)

    def named(where: ModuleFacts) -> List[ast.AST]:
        return [n for n in where.nodes
                if (isinstance(n, ast.Name) and not method and n.id == name and isinstance(n.ctx, ast.Load))
                or (isinstance(n, ast.Attribute) and n.attr == name and not (
                    method and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")
                    and where.enclosing_class(n) is not holder)
                    and not (method and _something_else(n.value, holder, where)))]
    found = [(n, facts) for n in named(facts) if function not in ancestors(n) and not _unsubscribed(n)]
    paths = project.files_mentioning(name, project.search_root(facts)) if facts.context.cross_file else []
    if len(paths) > _MAX_CALLER_FILES:
        return found + [(function, facts)]  # (too common a name to read every caller: one not excused)
    for path in paths:
        own = os.path.abspath(path) == os.path.abspath(facts.context.path or "")
        other = None if own else project.module_facts(path, facts.config)
        if other is not None and not other.context.is_test:
            found.extend((n, other) for n in named(other) if not _unsubscribed(n))
    return found


def _something_else(receiver: ast.AST, holder: ast.ClassDef, where: ModuleFacts) -> bool:
    """The receiver of ``<receiver>.<method name>`` is shown to be no instance of the method's class: an imported
    module of the project (``relay.publish``), or a value declared as another class (``redis: Redis``)."""
    from . import declared_types

    if isinstance(receiver, ast.Name) and where.imports.is_imported(receiver.id):
        qualified = where.qualify(receiver) or ""
        if project.module_path(qualified, project.roots_for(where)) is not None:
            return True
    declared = declared_types.type_of(receiver, where, where.enclosing_function(receiver))
    if declared is None:
        return False
    if declared_types.library_class(declared) is not None:
        return True
    made = declared_types.classes(declared)
    # (by name: the class may have been read from another parse of its module)
    return bool(made) and all(cls.name != holder.name for cls, _ in made)


def _unsubscribed(reference: ast.AST) -> bool:
    """``conn.remove_listener(channel, self._on_notify)``: the callback taken off a subscription, not run."""
    call = parent(reference)
    return isinstance(call, ast.Call) and reference is not call.func and isinstance(call.func, ast.Attribute) \
        and call.func.attr in known.SHARED_CHANNEL_UNSUBSCRIBES
