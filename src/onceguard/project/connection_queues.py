"""Queues that stand for connections: the per-client queue a streaming response (server-sent events, a long
poll) reads its client's messages from.

Such a queue lives in the process that serves the stream, as a WebSocket does; kept in a container, it is a
registry of this process's connections (OG605).  A queue is one when a streaming generator takes from it: it is
made there, or handed back to one by the function that makes and registers it.
"""
from __future__ import annotations

import ast
from typing import Set

from ..analysis.facts import FunctionNode, ModuleFacts, is_generator, walk
from ..knowledge import process_local as known


def connection_queues(function: FunctionNode, facts: ModuleFacts) -> Set[str]:
    """Locals of ``function`` bound to a new queue that a streaming response reads its client's messages from:
    the function is itself the stream's generator and takes from the queue, or it hands the queue back to one
    that does (``q = announcer.listen()`` ... ``yield q.get()``). Put into a container, it is a connection of
    this process, as a WebSocket is."""
    made = {}
    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call) \
                and (facts.callee(node.value) or "") in known.CONNECTION_QUEUE_FACTORIES:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            made.update((t.id, node) for t in targets if isinstance(t, ast.Name))
    if not made:
        return set()
    if is_generator(function):
        return {name for name in made if _reads_queue(function, name)}
    returned = {n.value.id for n in walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
    handed = returned & set(made)
    if not handed:
        return set()
    from .fixed_arguments import callers_of

    for call, other in callers_of(function, facts):
        reader = other.enclosing_function(call)
        statement = other.statement_of(call)
        if reader is None or not is_generator(reader) or not isinstance(statement, (ast.Assign, ast.AnnAssign)):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(isinstance(t, ast.Name) and _reads_queue(reader, t.id) for t in targets):
            return handed
    return set()


def _reads_queue(function: FunctionNode, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in known.QUEUE_READ_METHODS
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in walk(function))
