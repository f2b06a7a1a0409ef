"""OG502, renewals: a Redis lock kept alive with a plain EXPIRE of its key, whatever value the key now holds.

The holder that paused past its TTL (a GC pause, a slow call, a stopped container) finds the key still there
— taken meanwhile by another replica — and its ``expire`` succeeds: it extends the other replica's lock and goes
on believing it holds its own, so two replicas run the guarded work at once.  A renewal must check the stored
token in the same step (a Lua script comparing ``GET`` with the token before ``PEXPIRE``, redis-py's
``Lock.extend``), as a release must before ``DEL``.
"""
from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.facts import ModuleFacts, walk
from ..analysis.redis_arguments import short
from ..model import Diagnostic
from ..project.redis_clients import redis_call
from ..project.redis_keys import key_identity

#: Commands that set a key's time to live, whatever the key holds.
_EXPIRY_COMMANDS = frozenset({"expire", "pexpire", "expireat", "pexpireat"})


def unsafe_renewals(rule, facts: ModuleFacts, lock_keys) -> Iterator[Diagnostic]:
    """Renewals of the keys this module takes as locks (``SET key token NX``) with a plain ``EXPIRE``, when no
    comparison of the stored value with the holder's token comes first in the same function."""
    for call in facts.calls_named(*sorted(_EXPIRY_COMMANDS)):
        if not isinstance(call.func, ast.Attribute) or not call.args or redis_call(call, facts) is None:
            continue
        acquire = lock_keys.get(key_identity(call.args[0], facts))
        if acquire is None or acquire.two_step_expiry is call or _follows_the_take(call, acquire.call, facts):
            continue  # (the expiry a SETNX is given right after it is OG501's, not a renewal)
        function = facts.enclosing_function(call)
        if function is None or _compares_stored_value_first(function, call):
            continue
        if _reads_parameters(call.args[0], function) or _reads_parameters(acquire.key, facts.enclosing_function(
                acquire.call)):
            continue  # a client wrapper forwarding whatever key it is given (``def expire(self, name, ...)``)
        yield rule.finding(
            call,
            f"`{short(call.func)}({short(call.args[0], 40)}, …)` renews the lock without checking that this replica "
            "still holds it, so after an expiry it extends the other replica's lock and both run the work.",
            "A holder that paused past its TTL finds the key taken by another replica; a plain EXPIRE succeeds on "
            "it, and the paused holder goes on as if the lock were still its own. Renew by compare-and-extend: a "
            "Lua script that checks `redis.call('get', KEYS[1]) == ARGV[1]` before `PEXPIRE` (or redis-py's "
            "`Lock.extend()`), and stop the work when the renewal fails; `run_exclusive(key, ttl, work)` (`from "
            "onceguard.guards import run_exclusive`) renews this way.",
        )


def _reads_parameters(key, function) -> bool:
    """The key is built from a parameter of its function (not ``self``): each call names its own key."""
    if key is None or function is None:
        return False
    arguments = function.args
    names = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs} - {"self", "cls"}
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(key))


def _follows_the_take(call: ast.Call, take: ast.Call, facts: ModuleFacts) -> bool:
    """The expiry is in the function that took the key (``setnx`` then ``expire``): the take's own TTL."""
    return facts.enclosing_function(call) is facts.enclosing_function(take)


def _compares_stored_value_first(function: ast.AST, renewal: ast.Call) -> bool:
    """An ``if`` before the renewal compares what a ``get`` read with something (the holder's token)."""
    for node in walk(function):
        if isinstance(node, ast.If) and (node.lineno, node.col_offset) < (renewal.lineno, renewal.col_offset):
            for inner in walk(node.test):
                if isinstance(inner, ast.Compare) and any(
                        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                        for n in walk(inner)):
                    return True
    return False
