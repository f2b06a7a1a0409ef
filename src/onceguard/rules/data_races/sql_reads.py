"""Read-modify-write through SQL: a SELECT read, an UPDATE whose parameter is computed from it in
Python (raw SQL and SQLAlchemy Core)."""
from __future__ import annotations

import ast
from typing import Callable, Dict, Iterable, List, Optional, Set

from pglast import ast as pg

from ...analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ...analysis.facts import FunctionNode, ModuleFacts
from ...knowledge import orm
from ...project.claims import one_runner_reaches
from ...project.held_locks import holds_blocking_lock
from ...model import Diagnostic
from ...analysis.names import dotted
from ...analysis.sql import parse_statements, placeholder_names, sql_nodes
from .loads import _core_reads, _names_compared, chain, later, module_chain
from .model_updates import model_update_write_backs
from .queryset_updates import queryset_writes
from .flow import Flow, _merged
from .merged_documents import merged_from_read
from ..redis_leases import short


def _sql_by_function(facts: ModuleFacts) -> List[List[ExecutedSql]]:
    """The parsed SQL each function sends, in source order (shared by OG301 and OG302)."""

    def build(_facts: ModuleFacts) -> List[List[ExecutedSql]]:
        by_function: Dict[int, List[ExecutedSql]] = {}
        for executed in executed_sql(facts):
            function = facts.enclosing_function(executed.call)
            if function is not None and executed.sql.parsed:
                by_function.setdefault(id(function), []).append(executed)
        return list(by_function.values())

    return facts.cached("sql_by_function", build)


def _columns(node) -> Set[str]:
    """Column names a pglast expression mentions."""
    if node is None:
        return set()
    return {current.fields[-1].sval for current in sql_nodes(node)
            if isinstance(current, pg.ColumnRef) and isinstance(current.fields[-1], pg.String)}


def _tables(statement) -> Set[str]:
    return {current.relname for current in sql_nodes(statement) if isinstance(current, pg.RangeVar)}


def _selected_columns(select: ExecutedSql, table: str) -> Set[str]:
    """Columns a SELECT returns from ``table`` ("*" for all); empty when it reads another table."""
    statements = parse_statements(select.text)
    if not statements or table not in _tables(statements[0].fromClause):
        return set()
    columns: Set[str] = set()
    for target in statements[0].targetList or ():
        if isinstance(target.val, pg.ColumnRef):
            last = target.val.fields[-1]
            columns.add("*" if isinstance(last, pg.A_Star) else last.sval)
    return columns


_FETCH = frozenset({"fetchone", "fetchall", "fetchmany", "scalar", "one", "first", "scalar_one",
                    "scalar_one_or_none", "one_or_none", "all", "mappings"})


def _select_result_source(select: ExecutedSql) -> Callable[[ast.AST], bool]:
    """What carries the SELECT's result: the sending call itself, or a later fetch on the same cursor."""
    receiver = dotted(select.receiver) if select.receiver is not None else None

    def is_source(node: ast.AST) -> bool:
        if node is select.call:
            return True
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FETCH
                and receiver is not None and dotted(node.func.value) == receiver and later(node, select.call))

    return is_source


def _parameter(executed: ExecutedSql, number: int, facts: ModuleFacts) -> Optional[ast.AST]:
    """The Python expression sent for ``$number`` of the normalised SQL."""
    spelled = placeholder_names(executed.text)  # per counted placeholder: its name, or None when positional
    params = executed.params
    if not spelled:  # native $n placeholders (asyncpg)
        values = _sequence(params)
        return values[number - 1] if values and number <= len(values) else None
    if number > len(spelled):
        return None
    name = spelled[number - 1]
    if name is None:
        values = _sequence(params)
        return values[number - 1] if values and number <= len(values) else None
    call = executed.call
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    for param in params:
        mapping = bound_value(param, facts) if isinstance(param, ast.Name) else param
        if isinstance(mapping, ast.Dict):
            for key, value in zip(mapping.keys, mapping.values):
                if isinstance(key, ast.Constant) and key.value == name:
                    return value
    return None


def _sequence(params: List[ast.AST]) -> List[ast.AST]:
    if len(params) == 1 and isinstance(params[0], (ast.Tuple, ast.List)):
        return list(params[0].elts)
    return [p for p in params if not isinstance(p, ast.keyword)]


class SqlChecks:
    """OG301 on SQL statements (mixed into the rule)."""

    # SQLAlchemy Core: select(M.col) read, update(M).values(col=<computed from it>) ----------------------------
    def _core_updates(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for call in facts.calls_named("values"):
            head, links = module_chain(*chain(call), facts)
            if isinstance(head, ast.Call) and facts.callee(head) in orm.SA_UPDATE and head.args:
                model = dotted(head.args[0])
            elif isinstance(head, (ast.Name, ast.Attribute)) and links and links[0][0] == "update" \
                    and isinstance(links[0][1], ast.Call) and not links[0][1].args and not links[0][1].keywords:
                # ``accounts.update().where(...).values(...)``: a Core table's own UPDATE (that it is a table, its
                # reads through ``accounts.c.<column>`` show)
                model, links = dotted(head), links[1:]
            else:
                continue
            function = facts.enclosing_function(call)
            if model is None or function is None:
                continue
            reads = _core_reads(model, call, function, facts)
            if not reads:
                continue
            flow = Flow(function, facts, lambda n: id(n) in reads, at=call)
            guarded = _names_compared(links)
            if guarded & {keyword.arg for keyword in call.keywords if keyword.arg}:
                continue  # compare-and-set: the WHERE checks a column this UPDATE changes (a version, the value)
            for keyword in call.keywords:
                column = keyword.arg
                if column is None or not any(c in (None, column) for c in reads.values()):
                    continue
                if flow.arithmetic(keyword.value) or _merged(keyword.value, flow.reads_here):
                    if one_runner_reaches(call, facts):
                        break  # one replica at a time runs it: the claim serialises the read and the write
                    # (a Core table's columns are spelled through ``.c``)
                    spelled = f"{model}.c.{column}" if any(f"{model}.c." in line for line in facts.lines) \
                        else f"{model}.{column}"
                    yield self.finding(
                        call,
                        f"`{column}` of `{model}` is read by an earlier SELECT, "
                        f"{'merged' if not flow.arithmetic(keyword.value) else 'changed'} in Python and written "
                        f"back whole by this UPDATE, so one of two replicas' changes is lost.",
                        f"Two replicas (or requests) start from the same value and the later UPDATE overwrites the "
                        f"other's change. Change the value in the statement (`{spelled} + delta`, or a JSON "
                        f"function such as `func.jsonb_set` / `{spelled}.concat(...)` for one key); or read the row "
                        f"`.with_for_update()` in the same transaction; or add `.where({spelled} == old)` "
                        f"and check `rowcount` (compare-and-set).",
                    )
                    break

    # Django: a queryset write of a value computed from an earlier read of the model ---------------------
    def _queryset_updates(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for write, model, column, read in [*queryset_writes(facts), *model_update_write_backs(facts)]:
            if one_runner_reaches(write, facts):
                continue  # one replica at a time runs it: the claim serialises the read and the write
            method = write.func.attr if isinstance(write.func, ast.Attribute) else "update"
            if isinstance(write.func, ast.Attribute) and isinstance(write.func.value, ast.Name):
                # ``Model.update({Model.col: ...})`` (Peewee, Piccolo): the column's own expression
                fix = f"`{model}.update({{{model}.{column}: {model}.{column} + delta}})`"
            elif method.endswith("_or_create"):
                fix = f'`defaults={{"{column}": F("{column}") + delta}}` with `create_defaults` for a new row'
            else:
                fix = f'`.update({column}=F("{column}") + delta)`'
            yield self.finding(
                write,
                f"`{column}` of `{model}` is read at line {read.lineno}, changed in Python and written by this "
                f"`{method}()`, so one of two replicas' changes is lost.",
                f"Two replicas (or requests) read the same value and the later write overwrites the other's change. "
                f"Change it in the statement ({fix}); or read the row locked (`select_for_update()`, "
                f"`for_update()`) in the same transaction.",
            )

    # raw SQL ---------------------------------------------------------------------------------------------
    def _raw_sql(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for executions in _sql_by_function(facts):
            selects = [e for e in executions if e.sql.statement_types == ("SelectStmt",) and not e.sql.for_update]
            updates = [e for e in executions if e.sql.statement_types == ("UpdateStmt",)]
            if not selects or not updates:
                continue
            function = facts.enclosing_function(selects[0].call)
            for update in updates:
                finding = self._raw_update(update, selects, function, facts, executions)
                if finding is not None:
                    yield finding

    def _raw_sql_through_helpers(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """The SELECT and the UPDATE in two project defs, the new value computed between them by their caller."""
        from ...model import Related
        from ...project.held_locks import held_by_lock_helper
        from .sql_helpers import caller_functions, round_trips

        for function in caller_functions(facts):
            for trip in round_trips(function, facts):
                at = trip.write_call
                if one_runner_reaches(at, facts) or held_by_lock_helper(at, facts):
                    continue  # one caller at a time: the claim or the lock serialises the read and the write
                if _waited_for_lock_before(trip.read_call, function, facts):
                    continue
                read, write = trip.read, trip.write
                column, table = write.column, write.table
                yield self.finding(
                    at,
                    f"`{column}` of `{table}` is read by `{short(trip.read_call.func, 40)}()`, changed in Python and "
                    f"written back by `{short(at.func, 40)}()`, so one of two replicas' updates is lost.",
                    f"Two replicas read the same value and the later UPDATE, which sets the value computed here, "
                    f"overwrites the other's change. Do the arithmetic in the statement: `UPDATE {table} SET "
                    f"{column} = {column} + :delta WHERE … AND {column} + :delta <= :limit` and check the rows "
                    f"affected (or `RETURNING {column}`); or read the row with `SELECT … FOR UPDATE` in the same "
                    f"transaction.",
                    related=[Related(read.facts.context.path, read.select.call.lineno, read.select.call.col_offset + 1,
                                     f"the SELECT that reads `{column}`"),
                             Related(write.facts.context.path, write.update.call.lineno,
                                     write.update.call.col_offset + 1, f"the UPDATE that sets `{column}`")],
                )

    def _kept_copies(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """An UPDATE that writes back a column's value kept in memory since a SELECT read it (``kept_copies``)."""
        from ...model import Related
        from .kept_copies import kept_copy_write_backs

        for update, table, column, copy in kept_copy_write_backs(facts):
            seed, change, kept = copy.seed, copy.change, copy.kept
            spelled = kept.spelled if len(kept.spelled) <= 40 else kept.spelled[:39] + "…"
            yield self.finding(
                update.call,
                f"`{column}` of `{table}` is written from `{spelled}`, a copy read by a SELECT and changed in "
                f"memory, so this UPDATE erases what other processes wrote.",
                f"Each process (every worker, every replica) keeps its own copy and writes back its own total. Keep "
                f"only the change in memory and send it (`UPDATE {table} SET {column} = {column} + :delta`), then "
                f"forget what was sent; or do the arithmetic in the statement each time.",
                related=[Related(kept.facts.context.path, seed.call.lineno, seed.call.col_offset + 1,
                                 f"the SELECT that reads `{column}` into `{kept.spelled}`"),
                         Related(kept.facts.context.path, change.lineno, change.col_offset + 1,
                                 "the kept value changed in Python")],
            )

    def _raw_update(self, update: ExecutedSql, selects: List[ExecutedSql], function: FunctionNode,
                    facts: ModuleFacts, executions: List[ExecutedSql]) -> Optional[Diagnostic]:
        statement = parse_statements(update.text)[0]
        table = statement.relation.relname
        where_columns = _columns(statement.whereClause)
        if where_columns & {target.name for target in statement.targetList or ()}:
            return None  # compare-and-set: the WHERE checks a column this UPDATE changes (a version, the value)
        earlier = [s for s in selects if later(update.call, s.call)]
        for select in earlier:
            read = _selected_columns(select, table)
            if not read:
                continue
            flow = Flow(function, facts, _select_result_source(select), at=update.call)
            for target in statement.targetList or ():
                column = target.name
                if not isinstance(target.val, pg.ParamRef):
                    continue  # SET n = n + 1: the database does the arithmetic
                if column not in read and "*" not in read:
                    continue
                value = _parameter(update, target.val.number, facts)
                if value is not None and not flow.arithmetic(value) \
                        and merged_from_read(value, flow, update.call, function, facts):
                    return self._merged_document(update, select, column, table, executions, function, facts)
                if value is not None and flow.arithmetic(value):
                    if one_runner_reaches(update.call, facts):
                        return None  # one replica at a time runs it: the claim serialises the read and the write
                    if _waited_for_lock(select, executions, function, facts):
                        return None  # each runner waits for the lock before it reads: the read sees the last write
                    return self.finding(
                        update.call,
                        f"`{column}` of `{table}` is read by the SELECT on line {select.call.lineno}, changed in "
                        f"Python and written back by this UPDATE, so one of two replicas' updates is lost.",
                        f"Two replicas read the same value and the later UPDATE, which sends the value computed in "
                        f"Python as a parameter, overwrites the other's change. Do the arithmetic in the statement: `UPDATE {table} SET {column} = {column} + :delta "
                        f"WHERE … AND {column} + :delta <= :limit` and check the rows affected; or read the row "
                        f"with `SELECT … FOR UPDATE` in the same transaction.",
                    )
        return None


    def _merged_document(self, update: ExecutedSql, select: ExecutedSql, column: str, table: str,
                         executions: List[ExecutedSql], function: FunctionNode,
                         facts: ModuleFacts) -> Optional[Diagnostic]:
        """A document merged in Python from an unlocked read and sent back whole: reported at the read, where
        the lock that serialises the merges belongs."""
        if one_runner_reaches(update.call, facts) or _waited_for_lock(select, executions, function, facts):
            return None  # one runner at a time reads and writes it
        return self.finding(
            select.call,
            f"`{column}` of `{table}` is read here without a lock, merged in Python and written back whole by the "
            f"UPDATE on line {update.call.lineno}, so keys another replica set in between are lost.",
            f"Two requests read the same document and the later UPDATE puts back its own merge over the other's. "
            f"Read the row with `SELECT … FOR UPDATE` in the transaction that writes it; or merge in the statement "
            f"(`SET {column} = {column} || %s`, `jsonb_set`); or compare a version column in the UPDATE's WHERE "
            f"and retry when no row matched.",
        )


def _waited_for_lock_before(call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A blocking advisory lock sent in ``function`` before ``call`` (and no unlock between)."""
    from .sql_helpers import _executions

    return holds_blocking_lock(execution for execution in _executions(function, facts)
                               if later(call, execution.call))


def _waited_for_lock(select: ExecutedSql, executions: List[ExecutedSql], function: FunctionNode,
                     facts: ModuleFacts) -> bool:
    """A blocking advisory lock (``pg_advisory_xact_lock``, ``pg_advisory_lock``) sent on the SELECT's connection
    before it in the same function, and no unlock between: every runner of the read waits its turn, and reads what
    the one before it wrote."""
    receiver = dotted(select.receiver) if select.receiver is not None else None
    return holds_blocking_lock(
        execution for execution in sorted(executions, key=lambda e: (e.call.lineno, e.call.col_offset))
        if later(select.call, execution.call) and facts.enclosing_function(execution.call) is function
        and execution.receiver is not None and dotted(execution.receiver) == receiver)
