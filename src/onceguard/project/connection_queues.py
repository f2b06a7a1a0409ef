"""Queues that stand for connections: the per-client queue a streaming response (server-sent events, a long
poll) or a WebSocket handler reads its client's messages from.

Such a queue lives in the process that serves the stream, as a WebSocket does; kept in a container, it is a
registry of this process's connections (OG605).  A queue is one when a streaming generator takes from it: it is
made there, or handed back to one by the function that makes and registers it.
"""
from __future__ import annotations

import ast
from typing import Iterator, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, is_generator, walk
from ..analysis.handed import argument_for, parameter_names
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
    if not is_generator(function) and _serves_socket(function, facts):
        # a WebSocket handler's own queue, whose messages it sends on to its connection
        return {name for name in made if _reads_queue(function, name)}
    if is_generator(function):
        read = {name for name in made if _reads_queue(function, name)}
        yielded = {n.value.id for n in walk(function) if isinstance(n, ast.Yield) and isinstance(n.value, ast.Name)}
        if read or not (yielded & set(made)):
            return read
        # ``@asynccontextmanager def attach(...): q = Queue(); reg.add(q); yield q``: the queue is handed to the
        # ``with`` that enters it, and a stream reads it there
        return (yielded & set(made)) if _entered_by_stream(function, facts) else set()
    returned = {n.value.id for n in walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
    handed = returned & set(made)
    if not handed:
        return set()
    from .fixed_arguments import callers_of

    if any(_stream_takes_returned(call, other) for call, other in callers_of(function, facts)):
        return handed
    # A method reached through a receiver whose class is not in view (``registry = app.extensions["boards"]``,
    # ``request.app.ctx.hub``): its calls by the method's name, where the value handed back is a stream's queue.
    if facts.enclosing_class(function) is not None and any(
            _stream_takes_returned(call, other) for call, other in _method_calls_by_name(function, facts)):
        return handed
    return set()


def _stream_takes_returned(call: ast.Call, other: ModuleFacts) -> bool:
    """The value ``call`` hands back is bound to a name that a stream reads its client's messages from: the
    caller's own generator or a def in it closing over the name, or the WebSocket handler the caller is."""
    caller = other.enclosing_function(call)
    statement = other.statement_of(call)
    if caller is None or not isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return False
    value = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
    if value is not call:
        return False  # (the call's value is not what the name holds)
    targets = [t.id for t in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
               if isinstance(t, ast.Name)]
    # the stream's generator: the caller itself, or a def in it that closes over the queue (``async def
    # send_events(): ... await queue.get() ...`` handed to the response)
    readers = [node for node in walk(caller) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and is_generator(node)]
    if any(_reads_queue(reader, name) for name in targets for reader in readers):
        return True
    # a WebSocket handler that takes the messages of the queue and sends them on to its connection
    if any(_reads_queue(caller, name) for name in targets) and _serves_socket(caller, other):
        return True
    # ... or hands the queue to a function of the project that does (``create_task(pump(websocket, queue))``), or
    # to the generator of the stream it answers with (``StreamingResponse(events(queue))``)
    return any(_handed_to_stream(name, caller, other) for name in targets)


def _handed_to_stream(name: str, caller: FunctionNode, facts: ModuleFacts) -> bool:
    """``caller`` hands its ``name`` to a def of the project that takes messages from the matching parameter and
    passes them on to a connection it serves or yields them to a stream."""
    from .definitions import called_def

    for call in (n for n in walk(caller) if isinstance(n, ast.Call)):
        handed = [a for a in list(call.args) + [k.value for k in call.keywords]
                  if isinstance(a, ast.Name) and a.id == name]
        if not handed:
            continue
        found = called_def(call, facts)
        if found is None:
            continue
        reader, where = found
        parameters = [p for p in parameter_names(reader, receiver=False)
                      if argument_for(call, reader, p) is handed[0]]
        if parameters and _reads_queue(reader, parameters[0]) \
                and (is_generator(reader) or _serves_socket(reader, where)):
            return True
    return False


def _method_calls_by_name(function: FunctionNode, facts: ModuleFacts) -> Iterator[Tuple[ast.Call, ModuleFacts]]:
    """``<receiver>.<method name>(...)`` calls in the files of the project that spell one (command line)."""
    for other in _modules_calling_method(function, facts):
        for call in other.calls_by_name.get(function.name, ()):
            if isinstance(call.func, ast.Attribute) and other.enclosing_function(call) is not function:
                yield call, other


def _serves_socket(function: FunctionNode, facts: ModuleFacts) -> bool:
    from .socket_registries import socket_parameters

    return bool(socket_parameters(function, facts))


def _reads_queue(function: FunctionNode, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in known.QUEUE_READ_METHODS
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in walk(function))


def _entered_by_stream(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A streaming generator of the project enters ``function`` with ``with ... as q`` (``async with
    hub.attach(room) as inbox:``) and takes its client's messages from ``q`` (command line; by the method's
    name when the receiver's class is not in view)."""
    for other in _modules_calling_method(function, facts):
        for block in other.withs:
            reader = other.enclosing_function(block)
            if reader is None or not is_generator(reader):
                continue
            for item in block.items:
                entered = item.context_expr
                if isinstance(entered, ast.Call) and isinstance(entered.func, ast.Attribute) \
                        and entered.func.attr == function.name and isinstance(item.optional_vars, ast.Name) \
                        and _reads_queue(reader, item.optional_vars.id):
                    return True
    return False


def _modules_calling_method(function: FunctionNode, facts: ModuleFacts) -> Iterator[ModuleFacts]:
    """The project's modules (tests left out, a bounded number) whose text calls a method named as ``function``
    (command line only)."""
    if not facts.context.cross_file:
        return
    from . import index as project

    for path in project.files_calling_method(function.name, project.search_root(facts))[:_MAX_READER_FILES]:
        other = project.module_facts(path, facts.config)
        if other is not None and not other.context.is_test:
            yield other


#: Files read for the streams that enter a queue-yielding context manager (or call a registering method) by its
#: method's name.
_MAX_READER_FILES = 8
