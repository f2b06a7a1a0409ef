"""Next-number allocation, an OG301 shape: the highest value of a column is read, one is added in
Python, and the result is stored in a row.  Two replicas (or requests) that read at the same time
compute the same number: two rows share a position, an invoice number or a local id, or one insert
fails on a unique constraint.

What counts as reading the highest value: a ``MAX`` aggregate (Django ``aggregate(Max(...))[...]``,
SQLAlchemy ``func.max(...)`` read with ``scalar()``, SQL text ``SELECT max(n) ...`` read with ``fetchone()`` /
``fetchval()``), or the column of the first row in descending order of it (``order_by(M.n.desc()).first().n``,
``order_by("-n").first().n``, ``latest("n").n``).  What counts as storing: the number (or a name holding it)
assigned to an attribute or an item, passed as a keyword argument (a constructor, ``create``, ``values``), or
sent as a parameter of an ``INSERT``/``UPDATE`` written as SQL text.  A ``return`` is not followed.

Silent when the function (or, for a private helper, every caller of it in the module, before the
call) takes a row or advisory lock before reading (a lock of the read itself does not count: it locks the
rows already numbered, none on the first number, never the one being added) (``select_for_update``,
``with_for_update``, SQL text ``FOR UPDATE``, a call whose name says it locks), when the allocation sits in a
``try`` that catches the unique-violation error (the insert is retried with a fresh number), or in a branch
taken only on SQLite (one file on one host).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

from ..analysis.facts import (FunctionNode, ModuleFacts, ancestors, call_name, parent, position, walk,
                              walk_no_nested_functions)
from ..knowledge import orm


@dataclass(frozen=True)
class Allocation:
    statement: ast.stmt  # where the number is computed (``n = last.n + 1``)
    read: ast.AST  # the expression reading the highest value
    column: str  # the column, when known ("" otherwise)
    stored: ast.AST  # where the number goes into a row


#: calls one of which a function must make to read a highest value
_READ_CALLS = ("aggregate", "latest", "order_by", "max")
#: SQL text that selects a column's maximum, and the column; a statement that stores a row.
_SQL_MAX = re.compile(r"(?is)\bselect\b.*?\bmax\s*\(\s*([A-Za-z_][\w.]*)\s*\)")
_WRITE_SQL = re.compile(r"(?i)^\s*(insert|update)\b")
#: Calls that send SQL text, and those that read its result.
_SQL_SENDS = ("execute", "fetchval", "fetchrow", "fetch", "fetchone")
_SQL_FETCHES = frozenset({"fetchone", "fetchval", "fetchrow", "scalar", "scalar_one", "first", "one"})


def allocations(facts: ModuleFacts) -> Iterator[Allocation]:
    # Only functions that call something reading a highest value are walked: most modules have none.
    candidates = {id(function): function for call in facts.calls_named(*_READ_CALLS)
                  for function in [facts.enclosing_function(call)] if function is not None}
    if _spells_max(facts) and any(_SQL_MAX.search(line) for line in facts.lines):
        # raw SQL that selects a maximum: the functions that send SQL
        candidates.update((id(function), function) for call in facts.calls_named(*_SQL_SENDS)
                          for function in [facts.enclosing_function(call)] if function is not None)
    for function in candidates.values():
        yield from _in_function(function, facts)


def _spells_max(facts: ModuleFacts) -> bool:
    """The module's text holds ``max`` in some case: the one word every line the SQL pattern matches has (the
    pattern itself, tried on every line of every module, costs more)."""
    return facts.cached("spells max", lambda _facts: "max" in "\n".join(facts.lines).lower())


def _in_function(function: FunctionNode, facts: ModuleFacts) -> Iterator[Allocation]:
    nodes = list(walk_no_nested_functions(function))
    bound: Dict[str, List[ast.Assign]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node)
    locks = [node for node in nodes if isinstance(node, ast.Call) and _locks(node)]
    if _every_caller_locks_first(function, facts):
        return
    callers_lock: Optional[bool] = None  # (asked of the project only once an allocation is found: it reads callers)
    for node in nodes:
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_small_step(node.right)):
            continue
        read = _highest_read(node.left, bound, facts)
        if read is None:
            continue
        highest, column = read
        # A lock taken by the read itself (``.select_for_update().aggregate(Max(...))``) locks only the rows the
        # read matches: none on the first number of a period, and never the row being added.
        within = {id(n) for n in ast.walk(highest)}
        if any(position(lock) < position(node) and id(lock) not in within for lock in locks) \
                or _retried_on_conflict(node, facts):
            continue
        if _only_on_sqlite(node):
            continue
        stored = _stored(node, bound)
        if stored is None and _returned(node, bound):
            stored = _stored_by_callers(function, facts)
        if stored is None:
            continue
        if callers_lock is None:
            callers_lock = _every_project_caller_locks_first(function, facts)
        if callers_lock:
            return
        yield Allocation(facts.statement_of(node), highest, column, stored)


def _returned(number: ast.AST, bound: Dict[str, List[ast.Assign]]) -> bool:
    """The number is what the function returns (``return last + 1``, or a local it was bound to)."""
    above = _parent_skipping_or(number)
    if isinstance(above, ast.Return):
        return True
    if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
        name = above.targets[0].id
        function = next((a for a in ancestors(above) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        return function is not None and any(
            isinstance(n, ast.Return) and _hands_back(n.value, name) for n in walk_no_nested_functions(function))
    return False


def _hands_back(value: Optional[ast.AST], name: str) -> bool:
    """``return n``, or the number formatted into the text returned (``return f"INV-{day}-{n:04d}"``)."""
    if isinstance(value, ast.Name):
        return value.id == name
    return isinstance(value, ast.JoinedStr) and any(
        isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id == name
        for part in value.values)


def _stored_by_callers(function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    """A helper handing the next number back (``next_invoice_number(tenant)``): where a caller, without a lock
    taken first, puts its answer into a row (``Invoice.objects.create(number=next_invoice_number(t))``)."""
    from ..project.fixed_arguments import callers_of

    for call, where in callers_of(function, facts):
        caller = where.enclosing_function(call)
        if where.context.is_test or caller is None:
            continue
        if any(isinstance(n, ast.Call) and _locks(n) and position(n) < position(call)
               for n in walk_no_nested_functions(caller)):
            continue
        above = _parent_skipping_or(call)
        if _is_store(above, call):
            return above
    return None


def _every_caller_locks_first(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A private helper (``self._apply()``, ``_apply()``) whose every call in the module comes after its
    caller took a lock: the allocation runs under that lock.  Only private names: a public function or a
    framework hook (``save``) is called from other modules too."""
    if not function.name.startswith("_") or function.name.startswith("__"):
        return False
    calls = [call for call in facts.calls_named(function.name)
             if isinstance(call.func, ast.Name) or (isinstance(call.func, ast.Attribute)
                                                     and isinstance(call.func.value, ast.Name)
                                                     and call.func.value.id in ("self", "cls"))]
    if not calls:
        return False
    for call in calls:
        caller = facts.enclosing_function(call)
        if caller is None or caller is function:
            return False
        if not any(isinstance(node, ast.Call) and _locks(node) and position(node) < position(call)
                   for node in walk_no_nested_functions(caller)):
            return False
    return True


def _every_project_caller_locks_first(function: FunctionNode, facts: ModuleFacts) -> bool:
    """Command line: every call of ``function`` in the project (tests aside) comes after its caller took a lock
    (``if not try_store_lock(store_id): retry`` … ``publishing.build_snapshot(store_id)``): allocations run one at
    a time."""
    if not facts.context.cross_file or facts.enclosing_function(function) is not None:
        return False
    from ..project.fixed_arguments import callers_of

    calls = [(call, where) for call, where in callers_of(function, facts) if not where.context.is_test]
    if not calls:
        return False
    for call, where in calls:
        caller = where.enclosing_function(call)
        if caller is None or caller is function or not any(
                isinstance(node, ast.Call) and _locks(node) and position(node) < position(call)
                for node in walk_no_nested_functions(caller)):
            return False
    return True


def _is_small_step(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and 0 < node.value <= 10


def _highest_read(node: ast.AST, bound: Dict[str, List[ast.Assign]], facts: ModuleFacts,
                  depth: int = 0) -> Optional[tuple]:
    """(the reading expression, its column) when ``node`` is the highest value of a column."""
    if depth > 3:
        return None
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # ``(highest or 0)``
        return _highest_read(node.values[0], bound, facts, depth + 1)
    if isinstance(node, ast.Name):
        for assign in bound.get(node.id, ())[-1:]:
            if position(assign) < position(node):
                return _highest_read(assign.value, bound, facts, depth + 1)
        return None
    if isinstance(node, ast.Subscript) and _aggregate_max(node.value, facts):
        return node, _max_column(node, facts.qualify, orm.DJANGO_MAX)
    if isinstance(node, ast.Call) and call_name(node) == "get" and isinstance(node.func, ast.Attribute) \
            and node.args:  # ``result.get("max_seq")`` of ``result = qs.aggregate(max_seq=Max(...))``
        owner = _last_value(node.func.value, node, bound)
        if _aggregate_max(owner, facts):
            return owner, _max_column(owner, facts.qualify, orm.DJANGO_MAX)
    if isinstance(node, ast.Call) and call_name(node) in orm.SCALAR_READS and _contains_max(node, facts):
        return node, _max_column(node, facts.qualify, orm.SQLALCHEMY_MAX)
    raw = _raw_max_read(node, bound)
    if raw is not None:
        return raw
    if isinstance(node, ast.Attribute):
        row = _last_value(node.value, node, bound)
        if isinstance(row, ast.Await):
            row = row.value
        if _first_in_descending_order(row, node.attr):
            return node, node.attr
    return None


def _raw_max_read(node: ast.AST, bound: Dict[str, List[ast.Assign]]) -> Optional[tuple]:
    """``(await cur.fetchone())["last"]`` after ``cur = await conn.execute("SELECT max(number) AS last ...")``, or
    ``await conn.fetchval("SELECT max(n) ...")``: the highest value read through SQL text."""
    value = node
    while isinstance(value, (ast.Subscript, ast.Await)):
        value = value.value
    if not (isinstance(value, ast.Call) and call_name(value) in _SQL_FETCHES):
        return None
    sent = value
    if not _sql_text(sent) and isinstance(sent.func, ast.Attribute):
        sent = _last_value(sent.func.value, node, bound)  # the cursor: what its ``execute`` sent
        sent = sent.value if isinstance(sent, ast.Await) else sent
    match = _SQL_MAX.search(_sql_text(sent)) if isinstance(sent, ast.Call) else None
    return (node, match.group(1)) if match else None


def _sql_text(call: ast.AST) -> str:
    """The SQL text a call sends as its first argument (a literal, or ``text("...")``), else ""."""
    first = call.args[0] if isinstance(call, ast.Call) and call.args else None
    if isinstance(first, ast.Call) and first.args:
        first = first.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def _last_value(value: ast.AST, at: ast.AST, bound: Dict[str, List[ast.Assign]]) -> ast.AST:
    """What a name was last bound to before ``at`` (``value`` itself when it is no such name)."""
    if isinstance(value, ast.Name):
        assigns = [a for a in bound.get(value.id, ()) if position(a) < position(at)]
        if assigns:
            return assigns[-1].value
    return value


def _max_column(read: ast.AST, qualify, names) -> str:
    for node in walk(read):
        if isinstance(node, ast.Call) and (qualify(node.func) or "") in names and node.args:
            column = node.args[0]
            if isinstance(column, ast.Constant) and isinstance(column.value, str):
                return column.value
            if isinstance(column, ast.Attribute):
                return column.attr
    return ""


def _aggregate_max(node: ast.AST, facts: ModuleFacts) -> bool:
    if not (isinstance(node, ast.Call) and call_name(node) == "aggregate"):
        return False
    values = list(node.args) + [keyword.value for keyword in node.keywords]
    return any(isinstance(v, ast.Call) and (facts.qualify(v.func) or "") in orm.DJANGO_MAX for v in values)


def _contains_max(node: ast.AST, facts: ModuleFacts) -> bool:
    return any(isinstance(n, ast.Call) and (facts.qualify(n.func) or "") in orm.SQLALCHEMY_MAX
               for n in walk(node))


def _first_in_descending_order(row: ast.AST, column: str) -> bool:
    """``<query>.order_by(<column> descending).first()`` (or ``[0]``), or ``<query>.latest("<column>")``."""
    if isinstance(row, ast.Subscript) and isinstance(row.slice, ast.Constant) and row.slice.value == 0:
        query = row.value
    elif isinstance(row, ast.Call) and call_name(row) in orm.FIRST_ROW and not row.args:
        query = row.func.value if isinstance(row.func, ast.Attribute) else None
    elif isinstance(row, ast.Call) and call_name(row) == "latest":
        return not row.args or any(isinstance(a, ast.Constant) and a.value == column for a in row.args)
    else:
        return False
    for node in walk(query) if query is not None else ():
        if isinstance(node, ast.Call) and call_name(node) == "order_by" and node.args:
            return _descending(node.args[0], column)
    return False


def _descending(order: ast.AST, column: str) -> bool:
    if isinstance(order, ast.Constant) and isinstance(order.value, str):
        return order.value == "-" + column
    if isinstance(order, ast.Call) and isinstance(order.func, ast.Attribute):
        if order.func.attr == "desc":
            target = order.func.value
            return isinstance(target, ast.Attribute) and target.attr == column
        if order.func.attr in ("nullslast", "nulls_last"):
            return _descending(order.func.value, column)
    if isinstance(order, ast.Call) and call_name(order) == "desc" and order.args:  # ``desc(M.n)``
        target = order.args[0]
        return isinstance(target, ast.Attribute) and target.attr == column
    return False


def _stored(number: ast.AST, bound: Dict[str, List[ast.Assign]]) -> Optional[ast.AST]:
    """Where the number is put into a row: an attribute or item assignment, or a keyword argument,
    directly or through one local name."""
    above = _parent_skipping_or(number)
    if _is_store(above, number):
        return above
    if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
        name = above.targets[0].id
        function = next((a for a in ancestors(above) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
                        None)
        for node in walk_no_nested_functions(function) if function is not None else ():
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) \
                    and position(node) > position(above):
                use = _parent_skipping_or(node)
                if _is_store(use, node):
                    return use
    return None


def _parent_skipping_or(node: ast.AST) -> Optional[ast.AST]:
    """The node the value flows into, through ``x or 0`` and ``a if c else b``."""
    for above in ancestors(node):
        if not isinstance(above, (ast.BoolOp, ast.IfExp)):
            return above
    return None


def _is_store(above: Optional[ast.AST], value: ast.AST) -> bool:
    if isinstance(above, (ast.Tuple, ast.List)):
        # a parameter of an INSERT or UPDATE sent as text (``execute("INSERT ... VALUES (%s, %s)", (p, n + 1))``)
        sent = parent(above)
        return isinstance(sent, ast.Call) and above in sent.args and _WRITE_SQL.search(_sql_text(sent)) is not None
    if isinstance(above, ast.Call) and any(argument is value for argument in above.args[1:]):
        return _WRITE_SQL.search(_sql_text(above)) is not None  # asyncpg: ``execute(sql, p, n + 1)``
    if isinstance(above, ast.keyword):
        return above.arg is not None
    if isinstance(above, ast.Assign):
        return any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in above.targets)
    if isinstance(above, ast.Dict):
        return any(v is value for v in above.values)
    return False


def _locks(call: ast.Call) -> bool:
    name = (call_name(call) or "").lower()
    if name in orm.ROW_LOCKS:
        return True
    if "lock" in name and "unlock" not in name:
        return True
    return any(isinstance(a, ast.Constant) and isinstance(a.value, str) and _locking_sql(a.value) for a in call.args)


def _locking_sql(text: str) -> bool:
    lowered = text.lower()
    return ("advisory_xact_lock" in lowered or "advisory_lock" in lowered or "lock table" in lowered
            or re.search(r"\bfor\s+(no\s+key\s+)?update\b", lowered) is not None)  # a parent row locked first


def _only_on_sqlite(node: ast.AST) -> bool:
    """Inside ``if <the database is SQLite>:``: one file on one host, one writer at a time."""
    child = node
    for above in ancestors(node):
        if isinstance(above, ast.If) and any(child is statement for statement in above.body):
            if any("sqlite" in _word(n).lower() for n in walk(above.test)):
                return True
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        child = above
    return False


def _word(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _retried_on_conflict(node: ast.AST, facts: Optional[ModuleFacts] = None) -> bool:
    for above in ancestors(node):
        if isinstance(above, ast.Try):
            for handler in above.handlers:
                caught = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
                if any(_names_conflict(t, facts) for t in caught if t is not None):
                    return True
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
    return False


def _names_conflict(node: ast.AST, facts: Optional[ModuleFacts] = None) -> bool:
    """``IntegrityError``, however it was imported (``from django.db import IntegrityError as E``)."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    qualified = (facts.qualify(node) or "") if facts is not None else ""
    return name in orm.UNIQUE_VIOLATION_ERRORS or qualified.rsplit(".", 1)[-1] in orm.UNIQUE_VIOLATION_ERRORS
