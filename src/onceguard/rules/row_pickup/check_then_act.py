"""Check-then-act on one row's state: a state tested in Python, then written unconditionally around the
work it guards."""

import ast
from dataclasses import dataclass
from typing import Iterable, List, Optional, Set

from ...project.claim_syntax import is_log_call
from ...project.claims import ClaimAnalyzer
from ...project.unique_fields import catches_duplicates
from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, call_name, parent, walk, walk_no_nested_functions
from ...knowledge import orm
from ..data_races import plain_name, django_queryset, function_nodes, later, names_in, sa_source, target_names, unwrap
from ..redis_leases import result_tested
from .selection import (
    _PURE_CALLS, _contains, _django_status_filter, _is_constant, _sa_status_condition, _sa_update, status_column)
from .callers import _resolver


# -- check-then-act on one row's state ---------------------------------------------------------------------------
#: Words of a field that records how far a row has got: ``status``, ``last_state``, ``reminder_sent``,
#: ``alerted_at``, ``is_used``.
_STATE_WORDS = frozenset({
    "status", "state", "sent", "notified", "alerted", "mailed", "emailed", "reminded", "processed", "published",
    "delivered", "handled", "claimed", "submitted", "redeemed", "consumed", "used", "done",
})
#: Words of a flag that, once set, stops a mail or notification going out again.
_SENT_WORDS = frozenset({"sent", "notified", "alerted", "mailed", "emailed", "reminded"})
#: Methods that persist an instance already changed in Python (not themselves an effect of the work).
_PERSIST_METHODS = frozenset({"save", "asave", "add", "commit", "flush", "merge", "refresh_from_db", "refresh"})
#: Calls whose effect stays with the request being answered (a flash message for the next page).
_REQUEST_LOCAL_MODULES = ("django.contrib.messages",)
#: Method-name beginnings of a project's read and write-back of a whole record (``get_backfill`` /
#: ``update_backfill``, ``update_event_by_id``).
_LOAD_PREFIXES = ("get", "load", "fetch", "find", "read")
_STORE_PREFIXES = ("update", "save", "put", "store", "upsert", "replace", "write")
#: Query methods that only read.
_READ_METHODS = frozenset({
    "get", "filter", "exclude", "first", "last", "exists", "count", "values", "values_list", "all", "only",
    "select_related", "prefetch_related", "order_by", "aget", "afirst", "acount", "aexists", "scalar", "scalars",
    "one", "one_or_none", "get_object_or_404",
})


def _words(name: str) -> Set[str]:
    return set(name.lower().split("_"))


def _state_field(name: str) -> bool:
    return bool(name) and not name[0].isupper() and (status_column(name) or bool(_words(name) & _STATE_WORDS))


#: ``a.b.c`` for a chain of names and attributes only (no calls): the same reading as OG301's.
_path = plain_name


def _root(path: str) -> str:
    return path.split(".", 1)[0]


@dataclass
class StateRead:
    node: ast.AST  # the read: ``obj.status`` / ``obj.meta.get("alerted_at")``
    path: str  # the object holding the field: ``obj`` / ``obj.meta``
    field: str


def _state_reads(test: ast.AST) -> List[StateRead]:
    reads = []
    for node in walk(test):
        path = field = None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _state_field(node.attr):
            above = parent(node)
            if isinstance(above, ast.Call) and above.func is node:
                continue
            path, field = _path(node.value), node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            path, field = _path(node.func.value), node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
                node.slice.value, str):
            path, field = _path(node.value), node.slice.value
        if path is None or not _state_field(field or "") or _root(path)[:1].isupper():
            continue
        if _compared_to_a_value(node, path):
            reads.append(StateRead(node, path, field))
    return reads


def _compared_to_a_value(read: ast.AST, path: str) -> bool:
    """The read is tested for truth or compared with a constant (or another field of the same row), not with a
    value from elsewhere (``token.state != request_state`` checks a caller's input)."""
    above = parent(read)
    if isinstance(above, ast.Compare):
        others = [above.left] + list(above.comparators)
        others = [o for o in others if o is not read]
        return all(_is_constant(o) or (isinstance(o, ast.Constant)) or (
            _path(o) is not None and _root(_path(o)) == _root(path)) for o in others)
    return isinstance(above, (ast.UnaryOp, ast.BoolOp, ast.If))


def _bails(body: List[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _end(node: ast.AST):
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


def _region(guard: ast.If, function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    """What runs because the test passed: the rest of the function after an ``if ...: return`` guard, or the
    ``if`` body."""
    if _bails(guard.body) and not guard.orelse:
        end = _end(guard)
        loop = _enclosing_loop(guard, function)
        inside = None
        if loop is not None and isinstance(guard.body[-1], (ast.Continue, ast.Break)):
            inside = {id(n) for n in walk(loop)}  # ``continue`` skips to the next row, not past the loop
        return [n for n in function_nodes(function, facts)
                if hasattr(n, "lineno") and (n.lineno, n.col_offset) > end and (inside is None or id(n) in inside)]
    if _bails(guard.body):
        return []
    return [n for statement in guard.body for n in [statement, *walk_no_nested_functions(statement)]]


def _enclosing_loop(node: ast.AST, function: FunctionNode) -> Optional[ast.AST]:
    for above in ancestors(node):
        if above is function:
            return None
        if isinstance(above, (ast.For, ast.AsyncFor, ast.While)):
            return above
    return None


@dataclass
class StateWrite:
    node: ast.AST  # the assignment or the store call
    persisted: bool
    value: Optional[ast.AST] = None  # the state written, when one value is visible


def _state_writes(read: StateRead, region: List[ast.AST], function: FunctionNode,
                  facts: ModuleFacts) -> Iterable[StateWrite]:
    root = _root(read.path)
    for node in region:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Attribute):
                path, field = _path(target.value), target.attr
            elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                path, field = _path(target.value), target.slice.value
            else:
                continue
            if path != read.path or field != read.field or not _is_constant(node.value):
                continue
            if _persisted_after(node, path, region, function, facts):
                yield StateWrite(node, True, node.value)
            elif (bool(_words(field) & _SENT_WORDS) and isinstance(node.value, ast.Constant)
                    and node.value.value is True and "." in path and root != "self"):
                yield StateWrite(node, False, node.value)  # a send-once flag of a settings store, written on assignment
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.lower().startswith(_STORE_PREFIXES):
            arguments = list(node.args) + [k.value for k in node.keywords]
            if not any(root in names_in(a) for a in arguments):
                continue
            keys = {k.arg for k in node.keywords} | {k.arg for n in arguments for k in walk(n) if isinstance(k, ast.keyword)} | {
                key.value for n in arguments for d in walk(n) if isinstance(d, ast.Dict)
                for key in d.keys if isinstance(key, ast.Constant)}
            if read.field in keys:
                yield StateWrite(node, True, _keyed_value(node, read.field))
            elif any(isinstance(a, ast.Name) and a.id == root for a in node.args) and _loaded_by_same_store(
                    root, node, read.node, function, facts):
                yield StateWrite(node, True)


def _keyed_value(call: ast.Call, field: str) -> Optional[ast.AST]:
    for node in walk(call):
        if isinstance(node, ast.keyword) and node.arg == field:
            return node.value
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == field:
                    return value
    return None


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a, annotate_fields=False) == ast.dump(b, annotate_fields=False)


def _guard_matches_write(read: StateRead, guard: ast.If, write: StateWrite) -> bool:
    """The test asks whether the transition the write makes is still to be made: it lets through only the
    old state (``status == PENDING`` / ``if status != PENDING: return``) and the write moves to another one,
    or it stops when the new state is already there (``if state in (SENT, SENDING): raise`` before writing
    SENDING; ``if not sent:`` before ``sent = True``).  A test that only stops on some other state (``if
    status == STOPPED: return`` before writing SUCCESS) is a cancellation check, not a dedupe."""
    if write.value is None:
        return True  # the whole record written back: the state it carries is not visible
    must_hold = not (_bails(guard.body) and not guard.orelse)
    condition: ast.AST = read.node
    above = parent(condition)
    if isinstance(above, ast.Compare):
        condition = above
    path = []
    node = condition
    while node is not guard.test:
        node = parent(node)
        if node is None or not isinstance(node, ast.expr):
            return False
        path.append(node)
    # Polarity from the top of the test down: each ``not`` flips what the read must be for the guarded code
    # to run.  ``and``/``or`` keep it: the other operands only add cases (``if meta and meta.get(k) == v:
    # continue`` still skips the rows already marked).
    for above in path:
        if isinstance(above, ast.UnaryOp) and isinstance(above.op, ast.Not):
            must_hold = not must_hold
    if condition is read.node:
        # ``if not obj.sent:`` lets through a falsy flag, which the write must make truthy.
        written = write.value.value if isinstance(write.value, ast.Constant) else True
        return bool(written) != must_hold
    if len(condition.ops) != 1:
        return False
    op = condition.ops[0]
    other = condition.comparators[0] if condition.left is read.node else condition.left
    values = list(other.elts) if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
    equal = isinstance(op, (ast.Eq, ast.In, ast.Is))
    if not isinstance(op, (ast.Eq, ast.In, ast.Is, ast.NotEq, ast.NotIn, ast.IsNot)):
        return False
    written_listed = any(_same(write.value, v) for v in values)
    # Passing requires state in values (equal == must_hold): the write must move to a value not listed.
    # Passing requires state not in values: the write must move to one of them.
    return (not written_listed) if equal == must_hold else written_listed


def _reaches(write: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` (after ``write``) can run after it: not when the block holding the write ends in a
    ``return``/``raise`` before reaching ``node``."""
    child = write
    for above in ancestors(write):
        if isinstance(above, ast.If) and _contains(above, node):
            in_body = any(_contains(s, child) for s in above.body)
            if in_body != any(_contains(s, node) for s in above.body):
                return False  # the other branch of an ``if`` the write is in
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        child = above
    # Each block around the write, innermost first: a ``return``/``raise`` that follows the write in any of
    # them, before the statement holding ``node``, leaves before ``node`` runs (``if expired: if system:
    # row.status = X; row.save()`` then ``raise`` after the inner ``if``).  A ``continue``/``break`` leaves
    # only its loop: what follows the loop still runs.
    statement = write
    while not isinstance(statement, ast.stmt):
        statement = parent(statement)
    while True:
        block = parent(statement)
        if block is None or isinstance(block, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            return True
        for field in ("body", "orelse", "finalbody", "handlers"):
            statements = getattr(block, field, None)
            if not (isinstance(statements, list) and any(s is statement for s in statements)):
                continue
            rest = statements[[i for i, s in enumerate(statements) if s is statement][0] + 1:]
            for following in rest:
                if _contains(following, node):
                    return True
                if isinstance(following, (ast.Return, ast.Raise)):
                    return False
                if isinstance(following, (ast.Continue, ast.Break)):
                    loop = next((a for a in ancestors(following) if isinstance(a, (ast.For, ast.AsyncFor, ast.While))), None)
                    return loop is not None and not _contains(loop, node)
            break
        if isinstance(block, (ast.For, ast.AsyncFor, ast.While)):
            return True  # the next iteration may reach it
        statement = block


def _insert_claims(function: FunctionNode, facts: ModuleFacts) -> List[ast.Try]:
    """``try: session.add(Membership(...)); session.commit()`` ``except IntegrityError: return``: a row the
    database refuses twice, inserted, with the refusal ending the function.  Of two requests that passed the
    same test, only the one whose insert went through runs what follows the ``try``."""
    found = []
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Try) or not node.handlers:
            continue
        catches = any(catches_duplicates(handler, facts) and handler.body
                      and isinstance(handler.body[-1], (ast.Return, ast.Raise)) for handler in node.handlers)
        sends = any(isinstance(call, ast.Call) and call_name(call) in orm.INSERT_SENDERS
                    for statement in node.body for call in walk(statement))
        if catches and sends:
            found.append(node)
    return found


def _after_an_insert_claim(effect: ast.AST, guard: ast.AST, claims: List[ast.Try]) -> bool:
    """``effect`` runs only past an insert claim that itself runs after the test."""
    return any(later(claim, guard) and later(effect, claim) and not _contains(claim, effect) for claim in claims)


def _persist_call(write: StateWrite, path: str, region: List[ast.AST]) -> Optional[ast.AST]:
    """The ``obj.save()`` / commit that stores an assigned state (work prepared before it is not after it)."""
    if not isinstance(write.node, ast.Assign):
        return None
    for node in region:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, write.node)
                and node.func.attr in _PERSIST_METHODS and (
                    _path(node.func.value) == path or any(_path(a) == path for a in node.args)
                    or node.func.attr in orm.SA_FLUSH)):
            return node
    return None


def _persisted_after(assign: ast.AST, path: str, region: List[ast.AST], function: FunctionNode,
                     facts: ModuleFacts) -> bool:
    """``obj.save()`` / ``session.add(obj)`` after the change, or a commit of the session ``obj`` was loaded
    through."""
    for node in region:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, assign)):
            continue
        method = node.func.attr
        if method in ("save", "asave") and _path(node.func.value) == path:
            return True
        if method in ("add", "merge") and any(_path(a) == path for a in node.args):
            return True
        if method in orm.SA_FLUSH and _sa_loaded(_root(path), function, facts):
            return True
    return False


def _sa_loaded(name: str, function: FunctionNode, facts: ModuleFacts) -> bool:
    for node in function_nodes(function, facts):
        if isinstance(node, ast.Assign) and name in [n for t in node.targets for n in target_names(t)]:
            if sa_source(node.value, facts, many=False) is not None:
                return True
    return False


def _loaded_by_same_store(name: str, store: ast.Call, before: ast.AST, function: FunctionNode,
                          facts: ModuleFacts) -> bool:
    """``row = repo.get_x(...)`` ... ``repo.update_x(row)``: the whole record read and written back through
    the same object."""
    receiver = _path(store.func.value)
    if receiver is None:
        return False
    for node in function_nodes(function, facts):
        if not (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and later(before, node)
                and name in [n for t in _targets(node) for n in target_names(t)]):
            continue
        for call in walk(node.value):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr.lower().startswith(_LOAD_PREFIXES) and _path(call.func.value) == receiver):
                return True
    return False


def _targets(node: ast.AST) -> List[ast.AST]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _effects(region: List[ast.AST], write: StateWrite, path: str, facts: ModuleFacts) -> List[ast.Call]:
    """Calls that do the work the state guards (send, enqueue, convert, submit): calls made for what they do
    (their result dropped) or that hand the row to other code, not the write and its save, not logging or
    an audit-log entry, and not what only computes a value for a test or an argument."""
    skipped: Set[int] = {id(n) for n in walk(write.node)}
    effects = []
    for node in region:
        if id(node) in skipped or not isinstance(node, ast.Expr):
            continue
        call = unwrap(node.value)
        if not isinstance(call, ast.Call) or id(call) in skipped or is_log_call(call):
            continue
        name = call_name(call) or ""
        receiver = _path(call.func.value) if isinstance(call.func, ast.Attribute) else None
        if name in _PURE_CALLS or name.lower().startswith("log") or name in _READ_METHODS:
            continue
        if receiver is not None and "log" in receiver.lower():
            continue  # a logger or metrics client (``stats_logger.incr``)
        if (facts.callee(call) or "").startswith(_REQUEST_LOCAL_MODULES):
            continue
        if name in _PERSIST_METHODS and (receiver == path or receiver is None or _is_session_like(call)) \
                and not _adds_a_new_row(call):
            continue
        effects.append(call)
    return effects


def _adds_a_new_row(call: ast.Call) -> bool:
    """``session.add(LedgerEntry(...))``: a row made here and inserted, the work the state guards (a second
    payment's ledger entry), not the read row written back."""
    return call_name(call) == "add" and len(call.args) == 1 and isinstance(call.args[0], ast.Call) \
        and isinstance(call.args[0].func, (ast.Name, ast.Attribute)) \
        and (plain_name(call.args[0].func) or "").rsplit(".", 1)[-1][:1].isupper()


def _is_session_like(call: ast.Call) -> bool:
    """``session.commit()`` / ``db.session.flush()`` / ``session.add(row)``: persisting, not work."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in _PERSIST_METHODS and call.func.attr != "save"


def _function_locks_rows(function: FunctionNode, facts: ModuleFacts, before: Optional[ast.AST] = None) -> bool:
    """A row lock taken (before ``before``, when given), or a conditional transition whose result is read."""
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Call):
            continue
        if before is not None and later(node, before) and call_name(node) not in ("update", "aupdate", "execute"):
            continue
        name = call_name(node)
        if name in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
            return True
        if any(k.arg in orm.ROW_LOCK_KEYWORDS and not _falsy(k.value) for k in node.keywords):
            return True
        if name in ("update", "aupdate") and django_queryset(node) is not None and _django_status_filter(
                django_queryset(node)[1]) and result_tested(node, facts):
            return True
        if name == "execute" and node.args:
            links = _sa_update(node.args[0], facts)
            if links is not None and _sa_status_condition(links) and result_tested(node, facts):
                return True
    return False


def _falsy(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _rows_source(name: str, guard: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    """When ``name`` is the target of a loop around ``guard``: the statement that selected what it iterates
    (``rows = repo.due(...)``; ``for row in rows``), else the loop's own iterable."""
    for above in ancestors(guard):
        if above is function:
            return None
        if isinstance(above, (ast.For, ast.AsyncFor)) and name in target_names(above.target):
            iterated = unwrap(above.iter)
            source: ast.AST = above.iter
            if isinstance(iterated, ast.Name):
                for node in function_nodes(function, facts):
                    if isinstance(node, ast.Assign) and later(above, node) and iterated.id in [
                            n for t in node.targets for n in target_names(t)]:
                        source = node
            return source
    return None


def _source_locks(source: ast.AST, facts: ModuleFacts) -> bool:
    """The rows come from a project function that selects them under a row lock."""
    for call in walk(source):
        if not isinstance(call, ast.Call):
            continue
        if call_name(call) in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
            return True
        found = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)._helper_target(call)
        if found is not None:
            target, analyzer = found
            if _function_locks_rows(target, analyzer.facts) or any(
                    "FOR UPDATE" in (s.value.upper() if isinstance(s.value, str) else "")
                    for s in walk(target) if isinstance(s, ast.Constant)):
                return True
    return False
