"""What the claim reading asks of code's spelling alone: log calls and loggers, the names a statement assigns, an
``if``'s failed side as its test is written, whether a branch leaves, SQL that inserts unless present."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from pglast.enums import OnConflictAction

from ..analysis.facts import ModuleFacts, ancestors, call_name, walk, walk_no_nested_functions
from ..analysis.names import plain_name
from ..analysis.sql import parse_statements, returns_rows, sql_nodes
from ..knowledge import claims as known
from .claim_kinds import CONDITIONAL_UPDATE, UNIQUE_INSERT, ClaimHit

def _inserts_unless_present(text: str) -> bool:
    """``INSERT ... ON CONFLICT DO NOTHING``, or a lease taken with an upsert that updates the existing row only
    where a condition holds (``ON CONFLICT (name) DO UPDATE SET owner = ... WHERE t.owner = EXCLUDED.owner OR
    t.lease_until < now()``): the caller whose row goes in (or is allowed to update) gets it back."""
    statements = parse_statements(text) or ()  # (None: text pglast cannot parse)
    for s in statements:
        clause = getattr(s, "onConflictClause", None) if type(s).__name__ == "InsertStmt" else None
        if clause is None:
            continue
        if int(clause.action) == int(OnConflictAction.ONCONFLICT_NOTHING):
            return True
        if getattr(clause, "whereClause", None) is not None and returns_rows(s):
            return True
    return False


def sends_conflict_insert(call: ast.Call, facts) -> bool:
    """``session.execute(<statement>)`` of a SQLAlchemy dialect insert that skips a row already present
    (``insert(Run).values(day=d).on_conflict_do_nothing()``, or a name the function bound to one): the caller whose
    row goes in gets it back."""
    from ..analysis.executed_sql import bound_value

    if not (isinstance(call.func, ast.Attribute) and call.func.attr in known.STATEMENT_SENDS and call.args):
        return False
    statement = call.args[0]
    if isinstance(statement, ast.Name):
        statement = bound_value(statement, facts)
    links = []
    while isinstance(statement, ast.Call) and isinstance(statement.func, ast.Attribute):
        links.append(statement.func.attr)
        statement = statement.func.value
    return known.SQLALCHEMY_SKIP_CONFLICT in links and isinstance(statement, ast.Call) \
        and (facts.callee(statement) or "") in known.SQLALCHEMY_CONFLICT_INSERTS


def _update_has_where(text: str) -> bool:
    """An UPDATE that moves rows on only from the state it tests: its WHERE reads a column its SET writes
    (``SET status = 'running' WHERE id = %s AND status = 'pending'``, a version bumped where it matched), so a
    second run finds nothing left to change.  ``SET balance = balance + 10 WHERE active`` changes the same rows
    every time: work, not a claim."""
    statements = parse_statements(text)
    if not statements:
        return False
    # (an UPDATE inside a ``WITH claimed AS (UPDATE ... RETURNING ...) SELECT ... FROM claimed`` claims alike)
    for statement in (node for top in statements for node in sql_nodes(top)):
        if type(statement).__name__ != "UpdateStmt" or getattr(statement, "whereClause", None) is None:
            continue
        written = {getattr(target, "name", None) for target in statement.targetList or ()}
        if written & _column_names(statement.whereClause):
            return True
    return False


def _column_names(node, depth: int = 0) -> set:
    """The last name of every column reference under a pglast node (subqueries included)."""
    found: set = set()
    if node is None or depth > 40:
        return found
    if isinstance(node, (tuple, list)):
        for item in node:
            found |= _column_names(item, depth + 1)
        return found
    if type(node).__name__ == "ColumnRef":
        fields = [getattr(field, "sval", None) for field in node.fields or ()]
        if fields and fields[-1]:
            found.add(fields[-1])
        return found
    for attribute in getattr(node, "__slots__", ()):
        value = getattr(node, attribute, None)
        if value is not None and not isinstance(value, (str, int, float, bool)):
            found |= _column_names(value, depth + 1)
    return found


def _makes_lock(node: ast.Call, facts: ModuleFacts) -> bool:
    qualified = facts.callee(node) or ""
    if qualified in known.IN_PROCESS_LOCKS:
        return False
    if qualified in known.LOCK_CLASSES:
        return True
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr in (known.REDIS_LOCK_METHOD, known.HUEY_LOCK_METHOD)
            and bool(node.args or node.keywords))


def _non_blocking(call: ast.Call) -> bool:
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg in known.NO_WAIT_KEYWORDS and isinstance(value, ast.Constant) and value.value is False:
            return True
        if keyword.arg == "blocking_timeout" and isinstance(value, ast.Constant) and value.value == 0:
            return True
    if call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False:
        return True
    return False


def _is_huey_lock(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == known.HUEY_LOCK_METHOD and bool(call.args)


def sets_with_nx(call: ast.Call) -> bool:
    """The call passes Redis SET's NX flag: ``nx=True``, or coredis's ``condition=PureToken.NX``."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    nx = keywords.get(known.REDIS_NX_KEYWORD)
    condition = keywords.get(known.REDIS_CONDITION_KEYWORD)
    return (isinstance(nx, ast.Constant) and nx.value is True) or (
        isinstance(condition, ast.Attribute) and condition.attr == known.REDIS_NX_TOKEN)


def _fetch_from(value: ast.AST, executed: Dict[str, ClaimHit]) -> Optional[ClaimHit]:
    """``cur.fetchone()[0]`` after ``cur.execute(<claim SQL>)``, or ``result.rowcount`` of a conditional update's
    result: the fetched value is the claim's result."""
    for node in walk(value):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in known.FETCH_METHODS:
            receiver = plain_name(node.func.value)
            if receiver in executed:
                return executed[receiver]
        elif isinstance(node, ast.Attribute) and node.attr == "rowcount":
            receiver = plain_name(node.value)
            if receiver in executed and executed[receiver].kind in (CONDITIONAL_UPDATE, UNIQUE_INSERT):
                return executed[receiver]
    return None


def _assigned(statement: ast.AST) -> Set[str]:
    """The names an assignment binds (unpacking too), and the dotted text of an attribute it sets
    (``self.acquired``); not the names a subscript or an attribute target only reads."""
    stack = list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]
    found: Set[str] = set()
    while stack:
        target = stack.pop()
        if isinstance(target, ast.Name):
            found.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(target.elts)
        elif isinstance(target, ast.Starred):
            stack.append(target.value)
        elif isinstance(target, ast.Attribute):
            text = plain_name(target)
            if text:
                found.add(text)
    return found


def mentions(expr: ast.AST, names: Set[str]) -> bool:
    """Whether ``expr`` reads one of ``names`` (plain names, or dotted texts such as ``self.acquired``)."""
    for node in walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.Attribute) and plain_name(node) in names:
            return True
    return False


def _target_names(statement: ast.AST) -> List[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    names = []
    for target in targets:
        for node in walk(target):
            if isinstance(node, ast.Name):
                names.append(node.id)
    return names


def _target_attributes(statement: ast.AST) -> List[str]:
    """The attributes an assignment writes, dotted (``self.is_leader``)."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return [plain_name(node) or "" for target in targets for node in walk(target) if isinstance(node, ast.Attribute)]


def is_log_call(node: ast.AST) -> bool:
    """``logger.info(...)``, ``logging.warning(...)``, ``self.log.debug(...)``, ``print(...)``, and a call on a
    name the module binds to a logger whatever it is called (``audit = logging.getLogger(...)``)."""
    if isinstance(node, ast.Await):
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in known.PRINT_FUNCTIONS
    if isinstance(func, ast.Attribute) and func.attr in known.LOG_METHODS:
        receiver = func.value
        while isinstance(receiver, ast.Call):
            receiver = receiver.func
        text = plain_name(receiver) or ""
        return "log" in text.lower() or is_logger(func.value)
    return False


def is_logger(expr: ast.AST) -> bool:
    """Whether ``expr`` is a logger by what made it: a logger factory's result (``logging.getLogger(...)``,
    ``structlog.get_logger()``), or a name bound to one in the enclosing function or at module level."""
    if isinstance(expr, ast.Call):
        return (call_name(expr) or "") in known.LOGGER_FACTORY_NAMES
    if not isinstance(expr, ast.Name):
        return False
    scopes = [above for above in ancestors(expr) if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]
    for scope in scopes[:1] + scopes[-1:]:
        statements = scope.body if isinstance(scope, ast.Module) else walk_no_nested_functions(scope)
        for statement in statements:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == expr.id):
                return isinstance(statement.value, ast.Call) and (call_name(statement.value) or "") in known.LOGGER_FACTORY_NAMES
    return False


def _is_preamble(statement: ast.stmt) -> bool:
    """Statements allowed before the claim: docstrings, logging, pass, imports, key/config assignments, asserts."""
    if isinstance(statement, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal,
                              ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(statement, ast.Expr):
        value = statement.value
        return isinstance(value, ast.Constant) or is_log_call(value)
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return True
    # ``assert self._broker is not None``: a check that stops the run or lets it on, acting on nothing
    return isinstance(statement, ast.Assert) and not _has_call(statement.test)


def commits(statement: ast.stmt) -> bool:
    """``session.commit()`` (awaited or not), handed nothing: it makes what the transaction wrote so far lasting (a
    claim's row, inserted just before) and sends no work of its own."""
    value = statement.value if isinstance(statement, ast.Expr) else None
    value = value.value if isinstance(value, ast.Await) else value
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr == _COMMIT and not value.args and not value.keywords


#: The method that ends a transaction keeping what it wrote.
_COMMIT = "commit"


def _real_statements(body: List[ast.stmt]) -> List[ast.stmt]:
    return [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def _negative_test(test: ast.AST) -> bool:
    """``not got``, ``got is False``, ``lease is Lease.FOLLOWER``, ``got == 0``: true when the claim failed."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq)):
            return (isinstance(right, ast.Constant) and right.value in (None, False, 0)) or isinstance(
                right, ast.Attribute)
    return False


def failed_side(node: ast.If) -> Optional[Tuple[List[ast.stmt], ast.AST]]:
    """The branch an ``if`` runs when what it tests is false, as its test is spelled (``if not got:``, ``if got is
    None:``, ``if count < 1:`` run the body), and the tested value; None for a test no claim's answer is read by.
    Asked before the value is resolved as a claim: a caller that needs the failed branch to hold something (a
    ``return``, the log it looks at) skips the ``if`` whose failed branch does not."""
    test = node.test
    negated = False
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and all(
            isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) for v in test.values):
        # ``if not leased or not still_due(x): continue`` is ``if not (leased and still_due(x))``: the body runs
        # unless every part holds, the answer among them
        conjunction = ast.copy_location(ast.BoolOp(op=ast.And(), values=[v.operand for v in test.values]), test)
        conjunction._og_parent = node
        negated, test = True, conjunction
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = True, test.operand
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(right, ast.Constant) and (
            (isinstance(op, (ast.Is, ast.Eq)) and right.value in (None, False, 0))
            or (isinstance(op, ast.Lt) and right.value == 1)
        ):
            negated, test = True, test.left
        elif isinstance(right, ast.Constant) and isinstance(op, (ast.IsNot, ast.Gt, ast.NotEq)) \
                and right.value in (None, False, 0):
            test = test.left
        else:
            return None
    # ``if lease.acquired and lease.conn is not None:`` runs its body only when every part holds: the tested value
    # is the conjunction, one part of which may be the answer (``_tested_claim`` reads each)
    return (node.body if negated else node.orelse), test


def _leaves(body: List[ast.stmt]) -> bool:
    """A branch that ends by leaving (what it records on the way out, a metric or a log, is its own)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return):
        return last.value is None or not _has_call(last.value)
    return isinstance(last, (ast.Raise, ast.Continue, ast.Break))


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Call, ast.Await)) for n in walk(node))


def _is_huey_lock_expr(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _is_huey_lock(node)
