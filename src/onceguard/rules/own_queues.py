"""Queues a replica declares for itself on RabbitMQ (OG602, with ``channel_subscribers``).

``queue = await channel.declare_queue(exclusive=True)`` then ``await queue.bind(exchange)`` (aio-pika), or
``channel.queue_declare(queue="", exclusive=True)`` then ``queue_bind`` (pika): the queue belongs to this
connection, and every replica declares its own, so each receives a copy of every message the exchange routes
to it (a fanout exchange: all of them).  A named, shared queue is a work queue: each message goes to one
consumer, and is no such subscription.
"""
from __future__ import annotations

import ast
from typing import Iterator, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..analysis.handed import call_argument
from ..analysis.names import dotted
from ..knowledge import event_consumers as known

WHAT = "a RabbitMQ queue of its own"


def uses_amqp(facts: ModuleFacts) -> bool:
    return any(target.split(".")[0] in known.AMQP_PACKAGES for target in facts.imports.aliases.values())


def own_queue_read(head: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A loop head that reads a queue of the replica's own: ``queue.iterator()``, or the name ``async with
    queue.iterator() as messages`` binds."""
    if isinstance(head, ast.Call) and isinstance(head.func, ast.Attribute) and head.func.attr in known.AMQP_ITERATORS:
        return _own_queue(head.func.value, function, facts)
    if isinstance(head, ast.Name):
        for node in walk(function):
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == head.id \
                            and own_queue_read(item.context_expr, function, facts):
                        return True
    return False


def own_queue_callbacks(facts: ModuleFacts) -> Iterator[Tuple[ast.Call, ast.AST]]:
    """(the consume call, the callback it hands) for each consumption of a queue of the replica's own."""
    for method, (keyword, position) in known.AMQP_CALLBACK_CONSUMES.items():
        for call in facts.calls_named(method):
            function = facts.enclosing_function(call)
            if function is None or not isinstance(call.func, ast.Attribute):
                continue
            queue = call.func.value if method == "consume" else call_argument(call, 0, "queue")
            callback = call_argument(call, position, keyword)
            if queue is not None and callback is not None and _own_queue(queue, function, facts):
                yield call, callback


def _own_queue(queue: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``queue`` (a name, ``self.<attr>``, or ``result.method.queue`` of pika's answer) was declared in
    ``function`` as a queue of the caller's own."""
    spelled = dotted(queue) or ""
    root = spelled.split(".method.")[0] if ".method." in spelled else spelled
    for node in walk(function):
        if not isinstance(node, ast.Assign) or not any(dotted(t) in (root, spelled) for t in node.targets):
            continue
        value = node.value.value if isinstance(node.value, ast.Await) else node.value
        if isinstance(value, ast.Attribute) and ".method." in (dotted(value) or "") + ".":
            return _own_queue(value, function, facts)  # ``queue_name = result.method.queue``
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in known.AMQP_QUEUE_DECLARES:
            return _declared_own(value)
    return False


def _declared_own(call: ast.Call) -> bool:
    keyword, position = known.AMQP_QUEUE_DECLARES[call.func.attr]  # type: ignore[union-attr]
    exclusive = next((k.value for k in call.keywords if k.arg == known.AMQP_EXCLUSIVE_KEYWORD), None)
    if isinstance(exclusive, ast.Constant) and exclusive.value is True:
        return True
    name = call_argument(call, position, keyword)
    return name is None or (isinstance(name, ast.Constant) and name.value in ("", None))
