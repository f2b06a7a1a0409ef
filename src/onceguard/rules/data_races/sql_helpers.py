"""Read-modify-write through SQL split over the project's own helpers: one def reads a column with a SELECT and
returns what it read, another sends an UPDATE that sets the column to a value it is handed, and the caller
computes the new value from the first's answer in Python and hands it to the second
(``balance = await self._read_balance(conn, id)`` ... ``await self._write_balance(conn, id, balance - amount)``).
Two callers read the same value, and the later UPDATE overwrites the other's change, as when one function sends
both statements (``sql_reads``)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Set

from pglast import ast as pg

from ...analysis.executed_sql import ExecutedSql
from ...analysis.facts import FunctionNode, ModuleFacts, call_name, walk
from ...analysis.handed import argument_for, parameter_names
from ...analysis.sql import parse_statements
from .flow import Flow
from .loads import _ARITHMETIC, function_nodes, later, unwrap


@dataclass(frozen=True)
class ColumnRead:
    """A def returns what its SELECT read: these columns ("*" for all) of this table."""
    table: str
    columns: Set[str]
    select: ExecutedSql
    facts: ModuleFacts


@dataclass(frozen=True)
class ColumnWrite:
    """A def's UPDATE sets ``column`` of ``table`` to the value of its parameter ``parameter``."""
    table: str
    column: str
    parameter: str
    update: ExecutedSql
    facts: ModuleFacts


@dataclass(frozen=True)
class RoundTrip:
    read_call: ast.Call  # the caller's call of the reading def
    write_call: ast.Call  # the caller's call of the writing def, handed a value computed from the read
    read: ColumnRead
    write: ColumnWrite


def _executions(function: FunctionNode, facts: ModuleFacts) -> List[ExecutedSql]:
    from .sql_reads import _sql_by_function

    def build(_facts: ModuleFacts) -> Dict[int, List[ExecutedSql]]:
        return {id(facts.enclosing_function(executions[0].call)): executions
                for executions in _sql_by_function(facts)}

    return facts.cached("data_races:sql-by-function-id", build).get(id(function), [])


def column_reads(function: FunctionNode, facts: ModuleFacts) -> List[ColumnRead]:
    """What ``function`` returns of the columns its SELECTs read (a SELECT ... FOR UPDATE locks the row: the
    caller's write cannot be lost while the lock is held, and is left out)."""
    from .sql_reads import _select_result_source, _selected_columns

    returns = [n for n in function_nodes(function, facts) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return []
    found: List[ColumnRead] = []
    for select in _executions(function, facts):
        if select.sql.statement_types != ("SelectStmt",) or select.sql.for_update:
            continue
        statements = parse_statements(select.text)
        tables = [t.relname for t in statements[0].fromClause or () if isinstance(t, pg.RangeVar)] if statements else []
        if len(tables) != 1:
            continue
        columns = _selected_columns(select, tables[0])
        if not columns:
            continue
        flow = Flow(function, facts, _select_result_source(select))
        if any((later(r, select.call) or any(n is select.call for n in walk(r))) and flow.reads(r.value)
               for r in returns):
            found.append(ColumnRead(tables[0], columns, select, facts))
    return found


def column_writes(function: FunctionNode, facts: ModuleFacts) -> List[ColumnWrite]:
    """The columns ``function``'s UPDATEs set to one of its parameters as handed (``SET balance = $1`` with
    ``new_balance`` for ``$1``); an UPDATE whose WHERE compares a column it sets is a compare-and-set, and left
    out."""
    from .sql_reads import _columns, _parameter

    parameters = set(parameter_names(function, receiver=False))
    found: List[ColumnWrite] = []
    for update in _executions(function, facts):
        if update.sql.statement_types != ("UpdateStmt",):
            continue
        statement = parse_statements(update.text)[0]
        targets = statement.targetList or ()
        if _columns(statement.whereClause) & {target.name for target in targets}:
            continue
        for target in targets:
            if not isinstance(target.val, pg.ParamRef):
                continue
            value = _parameter(update, target.val.number, facts)
            if isinstance(value, ast.Name) and value.id in parameters:
                found.append(ColumnWrite(statement.relation.relname, target.name, value.id, update, facts))
    return found


def round_trips(function: FunctionNode, facts: ModuleFacts) -> Iterator[RoundTrip]:
    """Each call of ``function`` that hands a project def, to set a column with, a value computed in Python from
    what an earlier call of a project def read of that column."""
    nodes = function_nodes(function, facts)
    writers = _writer_names(facts)
    handing = [n for n in nodes if isinstance(n, ast.Call) and (n.args or n.keywords) and call_name(n) in writers]
    if not handing:
        return
    bound = [unwrap(n.value) for n in nodes if isinstance(n, ast.Assign) and isinstance(unwrap(n.value), ast.Call)]
    if not bound:
        return
    from ...project.summaries import resolve

    reads_of: Dict[int, List[ColumnRead]] = {}
    for read_call in bound:
        later_calls = [c for c in handing if later(c, read_call) and c is not read_call]
        if not later_calls:
            continue
        flow = Flow(function, facts, lambda node, call=read_call: node is call)
        for write_call in later_calls:
            handed = [a for a in (*write_call.args, *(k.value for k in write_call.keywords)) if flow.arithmetic(a)]
            if not handed:
                continue
            if id(read_call) not in reads_of:
                reads_of[id(read_call)] = [read for target, target_facts in resolve(read_call, facts, function,
                                                                                   by_name=False)
                                           for read in column_reads(target, target_facts)]
            reads = reads_of[id(read_call)]
            if not reads:
                break
            for target, target_facts in resolve(write_call, facts, function, by_name=False):
                for write in column_writes(target, target_facts):
                    argument = argument_for(write_call, target, write.parameter)
                    if argument is None or not any(argument is a for a in handed):
                        continue
                    read = next((r for r in reads if r.table == write.table
                                 and (write.column in r.columns or "*" in r.columns)), None)
                    if read is not None:
                        yield RoundTrip(read_call, write_call, read, write)
                        break


def _writer_names(facts: ModuleFacts) -> Set[str]:
    """Names of the defs that may set a column to a value handed to them: the project's defs whose text sends
    ``UPDATE ... SET`` (the prefilter's own list), and this module's whose SQL does."""
    def build(_facts: ModuleFacts) -> Set[str]:
        from ...project.prefilter_words import column_writer_words

        names = {word[0][:-1].decode() for word in column_writer_words(facts.config)} if facts.context.cross_file \
            else set()
        names.update(function.name for function in facts.functions if any(
            e.sql.statement_types == ("UpdateStmt",) for e in _executions(function, facts)))
        return names

    return facts.cached("data_races:column-writer-names", build)


def caller_functions(facts: ModuleFacts) -> List[FunctionNode]:
    """Functions that bind a call's result and later call something with a value computed in Python (the only
    ones a round trip through helpers can be in)."""
    def build(_facts: ModuleFacts) -> List[FunctionNode]:
        found: Dict[int, FunctionNode] = {}
        for node in facts.nodes:
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, _ARITHMETIC):
                function = facts.enclosing_function(node)
                if function is not None:
                    found.setdefault(id(function), function)
        return list(found.values())

    return facts.cached("data_races:arithmetic-functions", build)
