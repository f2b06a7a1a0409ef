"""OG608 for rendezvous: a container of what requests wait on (a future, an event, a queue), stored under a key by
the function that waits and looked up by that key by another function that resolves it
(``_waiting[payment_id] = future`` ... ``await future``; elsewhere ``_waiting.get(payment_id).set_result(...)``).

The waiter and what resolves it meet only inside one process: when the resolving call (a payment provider's
webhook, a worker's callback) is served by another replica, the entry is not there, and the waiting request
times out.  A waiter this process's own code resolves (a task it started) is what such a container is for, so
both sides must be request code.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from ..knowledge import process_state as known
from ..model import Fix, Related
from ..project import process_state as state

#: Methods that hand a waiter its outcome.
_RESOLVES = frozenset({"set_result", "set_exception", "set", "put", "put_nowait"})
#: Methods that make a waiter of the running loop.
_MADE_BY_METHODS = frozenset({"create_future"})


@dataclass
class Rendezvous:
    store: ast.AST  # ``_waiting[key] = future``
    waiter: FunctionNode
    resolve: ast.Call  # ``future.set_result(...)`` on what another function looked up
    resolver: FunctionNode


def rendezvous(binding: state.Binding, facts: ModuleFacts) -> Optional[Rendezvous]:
    """Where one function stores a waiter in ``binding`` under a key and another function resolves the entry it
    looks up there."""
    if binding.scope != state.MODULE:
        return None
    stores = _waiter_stores(facts).get(binding.name)
    if not stores:
        return None
    for function in facts.functions:
        if any(function is waiter for _, waiter in stores):
            continue
        resolve = _resolves_entry(function, binding.name)
        if resolve is not None:
            return Rendezvous(stores[0][0], stores[0][1], resolve, function)
    return None


def _waiter_stores(facts: ModuleFacts) -> Dict[str, List[Tuple[ast.Assign, FunctionNode]]]:
    """container name -> (``name[key] = waiter``, its function) for each waiter a function of the module stores
    under a key, made there or in the statement itself; one pass over the module's assignments."""
    def build(_facts: ModuleFacts) -> Dict[str, List[Tuple[ast.Assign, FunctionNode]]]:
        made: Set[Tuple[int, str]] = set()
        for node in facts.assigns:
            if isinstance(node, ast.Assign) and _makes_waiter(node.value, facts):
                function = facts.enclosing_function(node)
                made.update((id(function), t.id) for t in node.targets if isinstance(t, ast.Name))
        found: Dict[str, List[Tuple[ast.Assign, FunctionNode]]] = {}
        for node in facts.assigns:
            if not isinstance(node, ast.Assign):
                continue
            function = facts.enclosing_function(node)
            if function is None:
                continue
            value = node.value
            if not (_makes_waiter(value, facts)
                    or isinstance(value, ast.Name) and (id(function), value.id) in made):
                continue
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    found.setdefault(target.value.id, []).append((node, function))
        return found

    return facts.cached("waiting_registries:stores", build)


def _makes_waiter(value: ast.AST, facts: ModuleFacts) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr in _MADE_BY_METHODS:
        return True
    return (facts.callee(value) or "") in known.WAITER_CLASSES


def _entry_of(node: ast.AST, name: str) -> bool:
    """``name[key]`` or ``name.get(key)`` / ``name.pop(key)``."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id == name
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == name and bool(node.args)


def _resolves_entry(function: FunctionNode, name: str) -> Optional[ast.Call]:
    """A resolving call on an entry ``function`` looks up in ``name`` (directly, or through a local it binds)."""
    looked: Set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign) and _entry_of(node.value, name):
            looked.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RESOLVES:
            receiver = node.func.value
            if _entry_of(receiver, name) or (isinstance(receiver, ast.Name) and receiver.id in looked):
                return node
    return None


def described(meeting: Rendezvous, binding: state.Binding, waits: str, resolves: str
              ) -> Tuple[str, str, Optional[Fix], None, list]:
    """(message, help, fix, end, related) of a finding on ``meeting``."""
    path = binding.facts.context.path
    waiter, resolver = meeting.waiter.name, meeting.resolver.name
    return (
        f"`{binding.name}` (a module-level container in process memory) holds what {waiter}() waits for and "
        f"{resolver}() resolves it, so a call served by another replica never reaches the waiter.",
        f"The waiter {waiter}() runs {waits}; {resolver}() runs {resolves}, on whichever replica the load balancer "
        "picks. Keep "
        "the outcome where every replica sees it (a row keyed by the id, or a Redis key the waiter polls or a "
        "pub/sub channel it subscribes to), and resolve the local waiter from there.",
        None, None,
        [Related(path, meeting.store.lineno, meeting.store.col_offset + 1, f"{waiter}() stores what it waits on"),
         Related(path, meeting.resolve.lineno, meeting.resolve.col_offset + 1, f"{resolver}() resolves it")],
    )
