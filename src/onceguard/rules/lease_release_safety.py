"""Which plain deletes of a Redis lease cannot drop another holder's lease (OG502): the stored token
compared right before the delete, a delete only while the clock is before the holder's own deadline, and a
once-marker given back only when the attempt that took it failed.  A release here is ``redis_leases.Release``
(its ``call``, ``key`` and ``identity``)."""
from __future__ import annotations

import ast
from typing import List, Optional

from ..analysis.facts import ModuleFacts, ancestors, in_handler, parent, walk, walk_no_nested_functions
from ..knowledge import redis_clients as known
from ..project.forwarding import forwarded
from ..project.redis_clients import client_calls
from ..project.redis_keys import key_identity


def after(first: ast.AST, second: ast.AST) -> bool:
    """Whether ``second`` starts after ``first`` in the source."""
    return (second.lineno, second.col_offset) > (first.lineno, first.col_offset)


def reads_of_key(later: ast.Call, key: ast.AST, facts: ModuleFacts) -> List[ast.Call]:
    """GET/EXISTS of the same key on a client, earlier in the same function as ``later``."""
    function = facts.enclosing_function(later)
    if function is None:
        return []
    identity = key_identity(key, facts)
    candidates = [node for node in walk_no_nested_functions(function)
                  if isinstance(node, ast.Call) and after(node, later) and node.args
                  and key_identity(node.args[0], facts) == identity]
    reads = ("get", "exists", known.HASH_READ)
    found = [call for call, _, _ in client_calls(facts, reads, candidates)]
    taken = {id(call) for call in found}
    for call in candidates:
        # ``_read(key)`` where ``def _read(k): return client.hgetall(k)``: the read the helper makes, at its call
        through = forwarded(call, facts) if id(call) not in taken and isinstance(call.func, ast.Name) else None
        if through is not None and client_calls(through.facts, reads, [through.call]):
            found.append(call)
    return found


def owner_checked_first(release, facts: ModuleFacts) -> Optional[str]:
    """``if r.get(key) == token: r.delete(key)`` or ``owner = r.get(key)`` compared before the delete:
    ``"sync"``, or ``"async"`` when the GET and the DEL are awaited (other tasks run in between); ``None``
    when nothing compares the stored value."""
    reads = reads_of_key(release.call, release.key, facts)
    if not reads:
        return None
    read_ids = {id(r) for r in reads}
    holders = set()
    for read in reads:
        statement = facts.statement_of(read)
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            holders.update(t.id for t in targets if isinstance(t, ast.Name))

    def compares_stored_value(test: ast.AST) -> bool:
        for node in walk(test):
            if isinstance(node, ast.Compare) and any(
                    isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for op in node.ops):
                for side in [node.left, *node.comparators]:
                    inner = side.value if isinstance(side, ast.Await) else side
                    if id(inner) in read_ids or (isinstance(inner, ast.Name) and inner.id in holders):
                        if not (isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None):
                            return True
        return False

    function = facts.enclosing_function(release.call)
    compared = False
    for above in ancestors(release.call):
        if above is function:
            break
        if isinstance(above, ast.If) and compares_stored_value(above.test):
            compared = True
            break
    if not compared and function is not None:
        # An earlier ``if owner != token: return`` guards the delete too.
        for node in walk_no_nested_functions(function):
            if (isinstance(node, ast.If) and after(node, release.call) and compares_stored_value(node.test)
                    and any(isinstance(n, (ast.Return, ast.Raise)) for n in node.body)):
                compared = True
                break
    if not compared:
        return None
    awaited = isinstance(parent(release.call), ast.Await) or any(isinstance(parent(r), ast.Await) for r in reads)
    return "async" if awaited else "sync"


def freed_only_on_failure(release, releases, locks, facts: ModuleFacts) -> bool:
    """The key the function claimed (set only if absent, with an expiry) is deleted only in an ``except``
    handler, and kept when the work succeeds: a once-marker (a webhook's dedupe record), whose expiry is how
    long a finished delivery is remembered, not how long the work may hold a lock.  The delete frees it for a
    retry right after the one attempt that took it failed, long before that expiry."""
    function = facts.enclosing_function(release.call)
    if function is None or not in_handler(release.call, function):
        return False
    if any(other.identity == release.identity and facts.enclosing_function(other.call) is function
           and not in_handler(other.call, function) for other in releases):
        return False
    return any(taken.identity == release.identity and taken.nx and taken.expires
               and facts.enclosing_function(taken.call) is function for taken in locks)


def released_before_any_work(release, locks, facts: ModuleFacts) -> bool:
    """The key is deleted after this function set it only if absent, with an expiry, and nothing is called on
    the way from the one to the other (``if not cache.add(claim): abort(...)`` then ``if entry is None:
    cache.delete(claim)``): the claim is taken back before it could expire, so nobody else can hold the key
    yet.  What the branch for a claim not taken does (``abort(...)``) is not on that way; a ``yield`` is (the
    caller's block runs there)."""
    function = facts.enclosing_function(release.call)
    if function is None:
        return False
    start = (release.call.lineno, release.call.col_offset)
    for taken in locks:
        if not (taken.identity == release.identity and taken.nx and taken.expires
                and facts.enclosing_function(taken.call) is function and after(taken.call, release.call)):
            continue
        end = (taken.call.end_lineno or taken.call.lineno, taken.call.end_col_offset or 0)
        claim_test = next((above for above in ancestors(taken.call) if isinstance(above, ast.If)
                           and _inside(taken.call, above.test)), None)
        on_failure = claim_test is not None and not _inside(release.call, claim_test)
        # (a ``yield`` hands control to the ``with`` block of a context manager's caller: the work runs there)
        between = [node for node in walk(function) if isinstance(node, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom))
                   and end <= (node.lineno, node.col_offset) < start
                   and not _inside(release.call, node) and not (on_failure and _inside(node, claim_test))]
        if not between:
            return True
    return False


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return node is outer or any(above is outer for above in ancestors(node))


def _reads_clock(node: ast.AST, facts: ModuleFacts) -> bool:
    return isinstance(node, ast.Call) and (facts.callee(node) or "") in known.CLOCK_CALLS


def _clock_before_deadline(test: ast.AST, facts: ModuleFacts, negated: bool = False) -> bool:
    """``now() < deadline`` / ``deadline > now()`` (``negated``: ``now() >= deadline``, the early-return form)."""
    before = (ast.Lt, ast.LtE) if not negated else (ast.Gt, ast.GtE)
    after = (ast.Gt, ast.GtE) if not negated else (ast.Lt, ast.LtE)
    for node in walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = node.left, node.comparators[0], node.ops[0]
            if _reads_clock(left, facts) and isinstance(op, before):
                return True
            if _reads_clock(right, facts) and isinstance(op, after):
                return True
    return False


def before_own_deadline(release, facts: ModuleFacts) -> bool:
    """The delete runs only while the clock is before a deadline the holder computed: the lease it took has not
    expired, so the key is still its own (``if time.monotonic() < expires_at: cache.delete(key)``)."""
    function = facts.enclosing_function(release.call)
    for above in ancestors(release.call):
        if above is function:
            break
        if isinstance(above, ast.If) and _clock_before_deadline(above.test, facts) and any(
                release.call in walk(statement) for statement in above.body):
            return True
    if function is None:
        return False
    for node in walk_no_nested_functions(function):
        if (isinstance(node, ast.If) and after(node, release.call) and _clock_before_deadline(node.test, facts, True)
                and any(isinstance(n, (ast.Return, ast.Raise)) for n in node.body)):
            return True
    return False
