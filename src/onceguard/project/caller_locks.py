"""Transaction-level advisory locks a helper takes for its caller.

``def xact_lock(conn, name): conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(name),))`` takes the lock
as the last thing it does, on the connection its caller handed in: the lock lasts until the caller's transaction
ends, so to the caller the call is the lock (``xact_lock(conn, JOB)``).  With a key the helper fixes itself, the
helper is one critical section every caller passes in turn; with a key made of its parameters, each caller chooses
the key, and ``caller_locks`` finds those calls in a module, for the rule to judge each where it is made.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..analysis.executed_sql import executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, parent
from ..analysis.handed import argument_for, parameter_names
from ..config import Config
from . import index as project
from .advisory_helpers import advisory_sending_modules

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def locks_for_caller(statement_call: ast.Call, connection: Optional[ast.AST], scope: Optional[ast.AST]) -> bool:
    """``statement_call`` is the last thing ``scope`` does (each block on the way up ends with it), run on
    ``connection``, a connection or session the caller handed in (one of ``scope``'s parameters): a
    transaction-level lock taken so lasts until the caller's transaction ends, so the function makes the rest of
    that transaction a critical section, as a generator lock helper makes its block one."""
    if not isinstance(scope, _FUNCTION_TYPES):
        return False
    receiver = connection
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    arguments = scope.args
    if not (isinstance(receiver, ast.Name) and receiver.id in
            {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}):
        return False
    node: ast.AST = ModuleFacts.statement_of(statement_call)
    while node is not scope:
        above = parent(node)
        if above is None:
            return False
        block = next((b for b in (getattr(above, name, None) for name in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(s is node for s in b)), None)
        if block is not None and block[-1] is not node:
            return False
        node = above
    return True


@dataclass(frozen=True)
class HelperLock:
    lock: ast.Call  # where the helper sends the lock
    connection: ast.Name  # the helper's parameter the lock runs on
    keys: Tuple[ast.AST, ...]  # what the key is computed from (the statement's parameters, its f-string holes)


def helper_locks(facts: ModuleFacts) -> Dict[int, HelperLock]:
    """id(def) -> the blocking transaction-level lock it takes for its caller, keyed on its own parameters."""

    def build(_facts: ModuleFacts) -> Dict[int, HelperLock]:
        found: Dict[int, HelperLock] = {}
        for executed in executed_sql(facts):
            if not any(a.function.blocking and a.function.is_lock and not a.function.session
                       for a in executed.sql.advisory):
                continue
            scope = facts.enclosing_function(executed.call)
            if scope is None or not locks_for_caller(executed.call, executed.receiver, scope):
                continue
            connection = executed.receiver
            while isinstance(connection, ast.Attribute):
                connection = connection.value
            keys = tuple(executed.params) + tuple(executed.holes)
            own = set(parameter_names(scope, receiver=False)) - {connection.id}
            if any(isinstance(n, ast.Name) and n.id in own for key in keys for n in ast.walk(key)):
                found[id(scope)] = HelperLock(executed.call, connection, keys)
        return found

    return facts.cached("caller_locks:helpers", build)


@dataclass(frozen=True)
class CallerLock:
    call: ast.Call  # the call of the helper, in the module read
    helper: FunctionNode
    facts: ModuleFacts  # the helper's module
    lock: HelperLock
    connection: Optional[ast.AST]  # what the call hands the helper to lock on


def caller_locks(facts: ModuleFacts) -> List[CallerLock]:
    """The calls of this module that run a helper taking a blocking transaction-level lock for its caller, keyed on
    what it is handed: the project's (command line) and this module's own."""

    def build(_facts: ModuleFacts) -> List[CallerLock]:
        from .summaries import resolve

        names = {f.name for f in facts.functions if id(f) in helper_locks(facts)}
        if facts.context.cross_file:
            names.update(word[:-1].decode() for word in caller_lock_helper_words(facts.config,
                                                                                 project.search_root(facts)))
        found: List[CallerLock] = []
        for call in facts.calls_named(*sorted(names)):
            function = facts.enclosing_function(call)
            for target, target_facts in resolve(call, facts, function, by_name=False):
                held = helper_locks(target_facts).get(id(target)) if target is not function else None
                if held is not None:
                    found.append(CallerLock(call, target, target_facts, held,
                                            argument_for(call, target, held.connection.id)))
        return found

    return facts.cached("caller_locks:calls", build)


#: A blocking transaction-level lock spelled in a file's text.
_BLOCKING_XACT = re.compile(rb"pg_advisory_xact_lock")
_words_by_root: Dict[str, Tuple[bytes, ...]] = {}
project.on_clear(_words_by_root.clear)


def caller_lock_helper_words(config: Config, root: str = "") -> Tuple[bytes, ...]:
    """``name(`` for each def of the project that takes a blocking transaction-level lock for its caller, keyed on
    what it is handed: a module calling one (``xact_lock(conn, JOB)``) need not spell "advisory" at all."""
    root = root or config.root or ""
    if not root:
        return ()
    cached = _words_by_root.get(root)
    if cached is None:
        words = set()
        for facts in advisory_sending_modules(config, root, _BLOCKING_XACT):
            words.update(f.name for f in facts.functions if id(f) in helper_locks(facts))
        cached = _words_by_root[root] = tuple(sorted(f"{word}(".encode() for word in words))
    return cached
