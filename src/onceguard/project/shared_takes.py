"""Work a pass takes out of a shared store in one step, so that each item goes to exactly one taker.

A loop every replica runs is no duplicated job when what it works on is taken out of a store the replicas share
by an atomic command: popped from a Redis list, set or sorted set (``LPOP key count``, ``SPOP``, ``ZPOPMIN``,
``LMPOP``), fetched and deleted at once (``GETDEL``), moved to a private name (``RENAME``), or read whole and
deleted in one MULTI/EXEC (``pipeline()`` queuing ``LRANGE`` and ``DELETE`` of the same key).  Each replica takes
other items, as consumers of one queue do; read and delete in two commands are OG609's to report.
"""
from __future__ import annotations

import ast
from typing import Optional, Set

from ..analysis.facts import FunctionNode, ModuleFacts, position, walk_no_nested_functions
from ..knowledge import redis_clients as known
from .minted_keys import minted
from .redis_clients import redis_call

#: Commands that take what they return out of the key: no other client can take it too.
_TAKING_COMMANDS = frozenset({
    "lpop", "rpop", "spop", "zpopmin", "zpopmax", "lmpop", "zmpop", "blpop", "brpop", "bzpopmin", "bzpopmax",
    "blmpop", "getdel", "lmove", "blmove", "rpoplpush", "brpoplpush",
})
#: How many project calls deep a pass's takes are looked for.
_DEPTH = 2


def takes_its_items(function: FunctionNode, facts: ModuleFacts, depth: int = _DEPTH,
                    seen: Optional[Set[int]] = None) -> bool:
    """``function`` (or a project function it calls, ``depth`` calls deep) takes what it works on in one atomic
    step: out of a shared Redis key (``_takes_from_redis``), or as rows one statement moves and returns
    (``_takes_rows``). One walk of the calls asks both."""
    seen = set() if seen is None else seen
    if id(function) in seen:
        return False
    seen.add(id(function))
    if _takes_from_redis(function, facts) or _takes_rows(function, facts):
        return True
    return depth > 0 and _a_callee(function, facts, lambda target, where: takes_its_items(
        target, where, depth - 1, seen))


def _takes_from_redis(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A pop of a shared Redis key, or a read-and-delete of one in a MULTI/EXEC pipeline."""
    for node in walk_no_nested_functions(function):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        command = node.func.attr
        if command in _TAKING_COMMANDS and node.args and redis_call(node, facts) is not None:
            return True
        if command == "pipeline" and _drains_in_one_step(node, function):
            return True
        if command in _RENAMES and len(node.args) >= 2 and minted(node.args[1], facts) \
                and redis_call(node, facts) is not None:
            return True  # ``rename(PENDING, f"pending:{uuid4().hex}")``: the whole key taken, by one renamer
    return False


#: A key renamed to one only this caller knows: the whole collection moves to it in one step.
_RENAMES = frozenset({"rename", "renamenx"})


def _a_callee(function: FunctionNode, facts: ModuleFacts, asked) -> bool:
    """``asked(def, its module)`` holds for a project function ``function`` calls (tests left out)."""
    from .summaries import resolve

    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call):
            for target, where in resolve(node, facts, function, by_name=False):
                if not where.context.is_test and asked(target, where):
                    return True
    return False


def _takes_rows(function: FunctionNode, facts: ModuleFacts) -> bool:
    """One statement that moves the rows out of the state it picks them by and returns them (``UPDATE orders SET
    status = 'expired' WHERE status = 'pending' ... RETURNING ...``, in SQL or as SQLAlchemy's
    ``update(...).where(...).values(...).returning(...)``), or deletes and returns them: each row goes to the one
    replica whose statement moved it."""
    from ..analysis.executed_sql import executed_sql
    from ..analysis.sql import updates_tested_state

    for executed in executed_sql(facts):
        if facts.enclosing_function(executed.call) is not function or "RETURNING" not in executed.text.upper():
            continue
        types = executed.sql.statement_types + executed.sql.cte_writes
        if "DeleteStmt" in types or ("UpdateStmt" in types and updates_tested_state(executed.text)):
            return True
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "returning"
               and _update_moves_its_rows(node.func.value) for node in walk_no_nested_functions(function))


def _update_moves_its_rows(chain: ast.AST) -> bool:
    """``update(Order).where(Order.status == "pending", ...).values(status="expired")``: a column the ``where``
    compares is one the ``values`` set."""
    tested: Set[str] = set()
    written: Set[str] = set()
    updates = False
    while isinstance(chain, ast.Call):
        func = chain.func
        if isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name):
            updates = True  # ``sa.update(Order)``
            break
        if isinstance(func, ast.Attribute):
            if func.attr in ("where", "filter"):
                tested.update(n.attr for a in chain.args for n in ast.walk(a) if isinstance(n, ast.Attribute))
            elif func.attr == "values":
                written.update(k.arg for k in chain.keywords if k.arg)
            chain = func.value
            continue
        updates = isinstance(func, ast.Name) and func.id == "update"
        break
    return updates and bool(tested & written)


def _drains_in_one_step(pipeline: ast.Call, function: FunctionNode) -> bool:
    """``with r.pipeline() as pipe: pipe.lrange(k, 0, -1); pipe.delete(k); pipe.execute()``: a transaction (the
    default) that reads a key whole and clears it."""
    if any(k.arg == "transaction" and isinstance(k.value, ast.Constant) and k.value.value is False
           for k in pipeline.keywords):
        return False
    name = _bound_name(pipeline)
    if name is None:
        return False
    read, cleared = set(), set()
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id == name:
                key = ast.dump(node.args[0])
                if node.func.attr in known.READ_ALL_COMMANDS:
                    read.add(key)
                elif node.func.attr in known.CLEAR_COMMANDS or node.func.attr == known.TRIM_COMMAND:
                    cleared.add(key)
    return bool(read & cleared)


def _bound_name(pipeline: ast.Call) -> Optional[str]:
    from ..analysis.facts import parent

    above = parent(pipeline)
    if isinstance(above, ast.withitem) and isinstance(above.optional_vars, ast.Name):
        return above.optional_vars.id
    if isinstance(above, ast.Assign) and len(above.targets) == 1 and isinstance(above.targets[0], ast.Name):
        return above.targets[0].id
    return None


def handed_taken_items(call: ast.Call, facts: ModuleFacts) -> bool:
    """``sink.write(events)`` after ``events = buffer.drain(100)`` in the same pass: the call works on what a
    project function (or a command) took out of a shared store in one step, so each replica's pass works on
    other items."""
    from .summaries import resolve

    function = facts.enclosing_function(call)
    names = {a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)}
    if function is None or not names:
        return False
    for node in walk_no_nested_functions(function):
        if not (isinstance(node, ast.Assign) and position(node) < position(call)
                and any(isinstance(t, ast.Name) and t.id in names for t in node.targets)):
            continue
        value = node.value.value if isinstance(node.value, ast.Await) else node.value
        if not isinstance(value, ast.Call):
            continue
        if isinstance(value.func, ast.Attribute) and value.func.attr in _TAKING_COMMANDS \
                and redis_call(value, facts) is not None:
            return True
        if any(takes_its_items(target, where) for target, where in resolve(value, facts, function, by_name=False)
               if not where.context.is_test):
            return True
    return False
