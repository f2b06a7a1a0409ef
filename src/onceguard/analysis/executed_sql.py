"""The SQL a module sends to the server: which call sends it, on what receiver, with which parameters.

Shared by every rule family that reads SQL (advisory locks, row pickup,
read-modify-write, schema).  The text comes from string literals,
``text("...")`` / ``sql.SQL("...")`` wrappers, implicit and ``+``
concatenation, ``%``/``.format`` templates, f-strings (holes become
placeholders) and names bound to any of these in the same function or at
module level.  SQLAlchemy's ``func.pg_try_advisory_lock(key)`` counts as the
SQL it compiles to.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Tuple

from .facts import ModuleFacts, ancestors, assigned_before, parent, walk, walk_no_nested_functions
from ..knowledge.databases import SQL_METHODS, SQL_WRAPPERS
from .sql import HOLE, SqlFacts, analyse


@dataclass
class ExecutedSql:
    call: ast.Call  # the call that sends the SQL (or the ``func.pg_*`` call when nothing sends it visibly)
    receiver: Optional[ast.AST]  # ``conn`` in ``conn.execute(...)``
    method: str
    text: str
    sql: SqlFacts
    sql_node: ast.AST  # where the SQL text is written
    params: List[ast.AST] = field(default_factory=list)  # parameter expressions, keys among them
    holes: List[ast.AST] = field(default_factory=list)  # expressions formatted into the text


def _string_parts(node: ast.AST, facts: ModuleFacts, holes: List[ast.AST], depth: int = 0) -> Optional[str]:
    """SQL text of an expression, or None when it is not visibly a string."""
    if depth > 6:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        pieces = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                pieces.append(value.value)
            elif isinstance(value, ast.FormattedValue):
                holes.append(value.value)
                pieces.append(HOLE)
        return "".join(pieces)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Add):
            left = _string_parts(node.left, facts, holes, depth + 1)
            right = _string_parts(node.right, facts, holes, depth + 1)
            if left is None and right is None:
                return None
            return (left if left is not None else HOLE) + (right if right is not None else HOLE)
        if isinstance(node.op, ast.Mod):
            text = _string_parts(node.left, facts, holes, depth + 1)
            if text is not None:
                holes.append(node.right)
            return text
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format":
            text = _string_parts(func.value, facts, holes, depth + 1)
            if text is not None:
                holes.extend(node.args)
                holes.extend(k.value for k in node.keywords)
            return text
        if facts.callee(node) in SQL_WRAPPERS and node.args:
            return _string_parts(node.args[0], facts, holes, depth + 1)
        return None
    if isinstance(node, ast.Name):
        value = _bound_value(node, facts)
        if value is not None:
            return _string_parts(value, facts, holes, depth + 1)
        looped = _iterated_texts(node, facts, holes, depth)
        if looped is not None:
            return looped
    if isinstance(node, (ast.Name, ast.Attribute)) and imported_constant is not None and facts.context.cross_file:
        found = imported_constant(node, facts)
        if found is not None:
            return _string_parts(found[0], found[1], holes, depth + 1)
    return None


def _iterated_texts(name: ast.Name, facts: ModuleFacts, holes: List[ast.AST], depth: int) -> Optional[str]:
    """``for ddl in SCHEMA: conn.execute(ddl)`` over a literal tuple or list of strings (here, at module level or
    in a module of constants): the call sends each of them, one per pass, read as one script of them all."""
    child: ast.AST = name
    for above in ancestors(name):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(above, (ast.For, ast.AsyncFor)) and any(child is s for s in above.body):
            if not (isinstance(above.target, ast.Name) and above.target.id == name.id):
                child = above
                continue
            walked, where = above.iter, facts
            if isinstance(walked, ast.Name) and _bound_value(walked, facts) is not None:
                walked = _bound_value(walked, facts)
            elif isinstance(walked, (ast.Name, ast.Attribute)) and imported_constant is not None \
                    and facts.context.cross_file:
                walked, where = imported_constant(walked, facts) or (None, facts)
            if not isinstance(walked, (ast.Tuple, ast.List)) or not walked.elts:
                return None
            texts = [_string_parts(item, where, holes, depth + 1) for item in walked.elts]
            return None if any(text is None for text in texts) else ";\n".join(texts)
        child = above
    return None


#: Set by the project layer: the value another module of the project binds at its top level to what ``node``
#: names (``queries.FETCH_PENDING`` after ``from . import queries``, or the name imported from there), with that
#: module's facts; SQL kept in a module of constants is the SQL of the call that sends it.
imported_constant: Optional[Callable[[ast.AST, ModuleFacts], Optional[Tuple[ast.AST, ModuleFacts]]]] = None


def _bound_value(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    """The value a name was last assigned in its function, else at module level (one binding only)."""
    function = facts.enclosing_function(name)
    scopes = [function] if function is not None else []
    scopes.append(facts.tree)
    for scope in scopes:
        values = _assignments(scope, facts).get(name.id)
        if values:
            return values[-1] if len(values) == 1 or scope is function else None
    return None


def _assignments(scope: ast.AST, facts: ModuleFacts) -> dict:
    def build(_facts: ModuleFacts) -> dict:
        table: dict = {}
        body = walk_no_nested_functions(scope) if scope is not facts.tree else module_statements(scope)
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                table.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                table.setdefault(node.target.id, []).append(node.value)
        return table

    return facts.cached(f"assignments:{id(scope)}", build)


def module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level statements, including those under ``if``/``try``/``with`` (not in functions or classes)."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                stack.extend(reversed(getattr(node, block, []) or []))
            for handler in getattr(node, "handlers", []) or []:
                stack.extend(reversed(handler.body))


def bound_value(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    return _bound_value(name, facts)


def sql_text(node: ast.AST, facts: ModuleFacts) -> Optional[Tuple[str, List[ast.AST]]]:
    holes: List[ast.AST] = []
    text = _string_parts(node, facts, holes)
    if text is None:
        return None
    return text, holes


_SQL_FUNC_PREFIXES = ("sqlalchemy.func.", "sqlalchemy.sql.func.", "sqlalchemy.sql.expression.func.", "sqlmodel.func.")


def _collect(facts: ModuleFacts) -> List[ExecutedSql]:
    found: List[ExecutedSql] = []
    seen_calls = set()
    for call in facts.calls_named(*SQL_METHODS):
        if not call.args or not isinstance(call.func, ast.Attribute):
            continue
        first = call.args[0]
        extracted = sql_text(first, facts)
        if extracted is None:
            continue
        text, holes = extracted
        params = list(call.args[1:]) + [k.value for k in call.keywords]
        found.append(ExecutedSql(call, call.func.value, call.func.attr, text, analyse(text), first, params, holes))
        seen_calls.add(id(call))
    # SQLAlchemy's func.<name>(...): the SQL is the function call itself.
    for call in facts.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr.startswith("pg_")):
            continue
        qualified = facts.qualify(func) or ""
        if not qualified.startswith(_SQL_FUNC_PREFIXES):
            continue
        placeholders = ", ".join(f"${i + 1}" for i in range(len(call.args)))
        text = f"SELECT {func.attr}({placeholders})"
        sender = _sending_call(call)
        receiver = sender.func.value if sender is not None and isinstance(sender.func, ast.Attribute) else None
        method = sender.func.attr if sender is not None and isinstance(sender.func, ast.Attribute) else ""
        found.append(ExecutedSql(sender or call, receiver, method, text, analyse(text), call, list(call.args), []))
    return found


def _sending_call(node: ast.AST) -> Optional[ast.Call]:
    for above in ancestors(node):
        if isinstance(above, ast.Call) and isinstance(above.func, ast.Attribute) and above.func.attr in SQL_METHODS:
            return above
        if isinstance(above, ast.stmt):
            return _sender_of_assigned_statement(above)
    return None


def _sender_of_assigned_statement(statement: ast.stmt) -> Optional[ast.Call]:
    """``stmt = select(func.pg_try_advisory_lock(k))`` then ``conn.execute(stmt)`` two lines later."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    name = statement.targets[0].id
    container = parent(statement)
    if container is None:
        return None
    for node in walk(container):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_METHODS
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == name):
            return node
    return None


def executed_sql(facts: ModuleFacts) -> List[ExecutedSql]:
    """Every SQL text the module visibly sends, in source order; built once per module."""
    return facts.cached("executed_sql", _collect)


@dataclass
class OrmSetStatement:
    """``Model.objects.filter(...).delete()`` / ``session.query(M).filter(...).update({...})``: one DELETE or
    UPDATE ... WHERE over the rows the chain matches, as set-based as the SQL it compiles to."""

    call: ast.Call  # the run (``.delete()`` / ``.update(...)``)
    kind: str  # "delete" | "update"
    values: List[ast.AST]  # the values an update writes
    chain: List[ast.Call]  # the calls that build the query (not effects of their own)


#: Local names followed back to the query they hold (``q = q.filter(...)`` rebinds once per hop).
_BINDING_HOPS = 3


@dataclass
class OrmQuery:
    chain: List[ast.Call]  # the shaping calls, outermost first
    filtered: bool  # one of them narrows the rows


def orm_query(expr: ast.AST, function: Optional[ast.AST] = None) -> Optional[OrmQuery]:
    """``session.query(M).filter(...)``, ``Model.objects.filter(...)``: a query being shaped, which sends
    nothing until it is run.  With ``function``, a local name is followed to the query assigned to it."""
    from ..knowledge import orm

    chain: List[ast.Call] = []
    filtered = False
    node = expr
    hops = 0
    while isinstance(node, (ast.Call, ast.Attribute, ast.Await, ast.Name)):
        if isinstance(node, ast.Name):
            hops += 1
            value = assigned_before(node, function) if hops <= _BINDING_HOPS else None
            if value is None:
                break
            node = value
            continue
        if isinstance(node, ast.Await):
            node = node.value
            continue
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute) or node.func.attr not in orm.SET_STATEMENT_SHAPERS:
                return None
            filtered = filtered or node.func.attr in orm.SET_STATEMENT_FILTERS
            chain.append(node)
            node = node.func.value
        else:
            node = node.value
    return OrmQuery(chain, filtered) if chain else None


def orm_set_statement(call: ast.Call, function: Optional[ast.AST] = None) -> Optional[OrmSetStatement]:
    """The set-based statement ``call`` runs, or None.  With ``function``, a query built into a local name
    and run later (``expired = session.query(Order).filter(...)`` ... ``expired.update({...})``) is the same
    statement: building a query sends nothing."""
    from ..knowledge import orm

    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in orm.SET_STATEMENT_RUNS:
        return None
    kind = "delete" if "delete" in func.attr else "update"
    if kind == "delete" and call.args and func.attr not in orm.SET_STATEMENT_RUNS_WITH_ALIAS:
        return None  # ``session.delete(obj)``: one instance, not a statement
    query = orm_query(func.value, function)
    if query is None or not query.filtered:
        return None
    values = [k.value for k in call.keywords if k.arg != "synchronize_session"] + [
        v for a in call.args if isinstance(a, ast.Dict) for v in a.values]
    if kind == "update" and not values:
        return None
    return OrmSetStatement(call, kind, values, query.chain)
