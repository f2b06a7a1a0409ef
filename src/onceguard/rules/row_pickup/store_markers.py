"""Check-then-set on a marker in a shared store: ``if not cache.get(key): act(); cache.set(key, True)``.

A marker read, tested, and then set with a plain SET around the work it guards lets two replicas (or two
overlapping runs of one job) both read "not there", both act, and both set it.  An atomic claim (``cache.add``,
``SET NX``, ``setnx``) whose result decides is the guard.  The read and the write may sit in small helpers of
the same module (``if not _was_sent(order): ...; _mark_sent(order)``): a helper's key is compared with its
parameters replaced by the caller's arguments.  Helpers are followed within the module only, so the file
that holds the test also holds every word the prefilter looks for.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...knowledge import redis_clients as redis_known
from ...project.claim_syntax import is_log_call
from ..data_races import function_nodes, later, unwrap
from ...project.redis_clients import command_name
from ..redis_leases import argument, command_of, key_argument, per_process, redis_call

#: Store reads that can tell whether a marker is there.
_MARKER_READS = frozenset({"get", "exists"})
#: Keywords that make a SET conditional (``set(key, v, nx=True)``): that is the claim, not the hazard.
_CONDITIONAL_SET = frozenset({"nx", "xx"})
#: Prefilter: a test, and a store read and write as they are spelled on a client or the Django cache.
STORE_MARKER_TRIGGERS = tuple((b"if ", client, read, write) for client in (b"cache", b"redis", b"Redis")
                              for read in (b".get(", b".exists(", b".has_key(", b".aget(")
                              for write in (b".set(", b".setex(", b".aset("))


@dataclass
class MarkerCall:
    call: ast.Call  # the call in the guarded function: the store call itself or the helper's call
    key: str  # the key, as text, with a helper's parameters replaced by the arguments


def _key_text(node: ast.AST, function: FunctionNode, facts: ModuleFacts, before: ast.AST) -> str:
    """The key expression, a local followed to the value it was bound to before ``before``."""
    node = unwrap(node)
    if isinstance(node, ast.Name):
        bound = None
        for statement in function_nodes(function, facts):
            if (isinstance(statement, ast.Assign) and later(before, statement) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == node.id):
                bound = statement.value
        if bound is not None:
            return ast.unparse(bound)
    return ast.unparse(node)


def _store_call(call: ast.Call, facts: ModuleFacts, wanted: frozenset) -> Optional[ast.AST]:
    """The key of a store read or unconditional write of a shared store, else None."""
    if not isinstance(call.func, ast.Attribute):
        return None
    named = command_name(call.func.attr)
    if named is None or named[0] not in wanted:
        return None  # no client, known or wrapped, does one of ``wanted`` under this name: skip resolving it
    handle = redis_call(call, facts)
    if handle is None or per_process(handle, facts):
        return None
    command = command_of(call, handle)
    if command not in wanted:
        return None
    if command == "set" and (any(k.arg in _CONDITIONAL_SET for k in call.keywords)
                             or not _marker_value(argument(call, redis_known.WRITES["set"][2]))):
        return None
    key_arg = redis_known.WRITES["set"][0] if command == "set" else redis_known.READS["get"][0]
    return key_argument(call, handle, key_arg)


def _marker_value(value: Optional[ast.AST]) -> bool:
    """What a marker holds: a constant (``True``, ``1``, ``"sent"``) or a timestamp taken now (``time.time()``).
    A value computed by the work (``cache.set(key, report)``) fills a cache; it marks nothing."""
    value = unwrap(value) if value is not None else None
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Attribute):
        return True  # ``Status.SENT``
    return isinstance(value, ast.Call) and not value.args and not value.keywords


def _direct(call: ast.Call, function: FunctionNode, facts: ModuleFacts, wanted: frozenset) -> Optional[MarkerCall]:
    key = _store_call(call, facts, wanted)
    return MarkerCall(call, _key_text(key, function, facts, call)) if key is not None else None


def _through_helper(call: ast.Call, facts: ModuleFacts, wanted: frozenset,
                    helpers: Dict[str, FunctionNode]) -> Optional[MarkerCall]:
    """``_was_sent(order)`` where the module's own ``def _was_sent(o)`` reads (or sets) one marker whose key
    is built from its parameters (or a method of a module-level instance of the module's class doing so)."""
    if isinstance(call.func, ast.Name):
        helper = helpers.get(call.func.id)
    else:
        helper = facts.module_method(call.func)
    if helper is None:
        return None
    found = [direct for node in function_nodes(helper, facts) if isinstance(node, ast.Call)
             for direct in [_direct(node, helper, facts, wanted)] if direct is not None]
    if len(found) != 1:
        return None
    parameters = [a.arg for a in helper.args.posonlyargs + helper.args.args]
    if isinstance(call.func, ast.Attribute) and parameters and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in helper.decorator_list) and not (
            isinstance(call.func.value, ast.Name) and call.func.value.id == getattr(facts.enclosing_class(helper), "name", None)):
        parameters = parameters[1:]  # ``instance.method(x)``: ``self`` is the instance
    passed = {name: ast.unparse(value) for name, value in zip(parameters, call.args)}
    passed.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
    tree = ast.parse(found[0].key, mode="eval")
    for node in walk(tree):
        if isinstance(node, ast.Name) and node.id in passed:
            node.id = passed[node.id]
    return MarkerCall(call, ast.unparse(tree))


@dataclass
class CheckThenSet:
    read: MarkerCall
    write: MarkerCall
    effect: ast.Call
    guard: ast.If


def checks_then_sets(facts: ModuleFacts) -> Iterable[CheckThenSet]:
    helpers = {f.name: f for f in facts.functions if facts.enclosing_function(f) is None
               and facts.enclosing_class(f) is None}
    reads = frozenset(_MARKER_READS)
    writes = frozenset(redis_known.CACHE_SET)
    for guard in facts.ifs:
        function = facts.enclosing_function(guard)
        if function is None:
            continue
        tested = [marker for node in walk(guard.test) if isinstance(node, ast.Call)
                  for marker in [_direct(node, function, facts, reads) or _through_helper(node, facts, reads, helpers)]
                  if marker is not None]
        if not tested:
            continue
        region = _guarded_region(guard, function)
        calls = [n for statement in region for n in walk(statement) if isinstance(n, ast.Call)]
        for read in tested:
            set_calls: List[MarkerCall] = [
                marker for call in calls
                for marker in [_direct(call, function, facts, writes) or _through_helper(call, facts, writes, helpers)]
                if marker is not None and marker.key == read.key]
            if not set_calls:
                continue
            write = set_calls[0]
            deletes = [marker for node in function_nodes(function, facts) if isinstance(node, ast.Call)
                       for marker in [_direct(node, function, facts, frozenset({"delete"}))
                                      or _through_helper(node, facts, frozenset({"delete"}), helpers)]
                       if marker is not None and marker.key == read.key]
            if deletes:
                continue  # set, work, delete: a lock held around the work, the lease rules' (OG501/OG502) to judge
            inside = {id(n) for n in walk(write.call)}
            # The work: a call for its effect.  Writes to the store itself (a value set twice) repeat to the
            # same result and are left out, as are logging and the marker's own calls.
            effects = [c for c in calls if id(c) not in inside and not is_log_call(c)
                       and redis_call(c, facts) is None
                       and _through_helper(c, facts, reads | writes, helpers) is None]
            if effects:
                yield CheckThenSet(read, write, effects[0], guard)
                break


def _guarded_region(guard: ast.If, function: FunctionNode) -> List[ast.stmt]:
    """What runs only when the test lets it: the body, or (for ``if marker: return``) the statements after."""
    body = list(guard.body)
    if body and isinstance(body[-1], (ast.Return, ast.Continue, ast.Raise)) and len(body) == 1:
        owner = None
        for node in walk(function):
            for name in ("body", "orelse"):
                block = getattr(node, name, None)
                if isinstance(block, list) and any(s is guard for s in block):
                    owner = block
        if owner is not None:
            index = next(i for i, s in enumerate(owner) if s is guard)
            return owner[index + 1:]
    return body
