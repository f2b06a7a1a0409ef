"""A column's value kept in memory between its read and its write-back.

``self._likes[pid] = await conn.fetchval("SELECT likes FROM posts WHERE id = $1", pid)`` once, ``self._likes[pid]
+= 1`` on every hit, and later ``UPDATE posts SET likes = $2 WHERE id = $1`` sent with what the object keeps: the
UPDATE writes back a copy read long before and changed in Python, erasing whatever any other writer added since --
another worker process or replica, each with a copy of its own.  The read, the change and the write are often in
three functions and two modules: the object's class (or a module, for a container at its top level) seeds and
changes the kept value, and the code that writes it gets the contents by reading the attribute or from what a
method of the class returns.  The data flow joins them: the value sent for the column is read from what is kept,
what is kept comes from a SELECT of that column of that table, and code of its owner changes it with arithmetic.
Sending the change instead (``SET likes = likes + $2``) is never this: the database adds.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from pglast import ast as pg

from ...analysis import executed_sql
from ...analysis.executed_sql import ExecutedSql
from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.sql import parse_statements
from .flow import Flow, _arithmetic_on, _subscript_root
from .loads import _ARITHMETIC, function_nodes, unwrap


@dataclass(frozen=True)
class KeptValue:
    """A value kept for later: ``self.<attr>`` of the instances of ``owner``, or the top-level ``<attr>`` of a module
    (``owner`` None), whose code is in ``facts``."""
    owner: Optional[ast.ClassDef]
    attr: str
    facts: ModuleFacts

    @property
    def spelled(self) -> str:
        return f"{self.owner.name}.{self.attr}" if self.owner is not None else self.attr

    def is_it(self, node: ast.AST) -> bool:
        """``node`` names the kept value itself (``self.counts``, or the module's ``counts``)."""
        if self.owner is None:
            return isinstance(node, ast.Name) and node.id == self.attr
        return isinstance(node, ast.Attribute) and node.attr == self.attr and isinstance(node.value, ast.Name) \
            and node.value.id in ("self", "cls")


@dataclass(frozen=True)
class KeptCopy:
    """What makes a kept value a stale copy of a column: the SELECT it is seeded from and the arithmetic on it."""
    kept: KeptValue
    seed: ExecutedSql
    change: ast.AST


def kept_copy_write_backs(facts: ModuleFacts) -> Iterator[Tuple[ExecutedSql, str, str, KeptCopy]]:
    """(update, table, column, copy) for each UPDATE of this module that sets a column to a parameter whose value is
    read from a value kept in memory, seeded from a SELECT of the same column and changed in Python."""
    from .sql_reads import _columns, _parameter, _sql_by_function

    for executions in _sql_by_function(facts):
        for update in executions:
            if update.sql.statement_types != ("UpdateStmt",):
                continue
            statement = parse_statements(update.text)[0]
            targets = [t for t in statement.targetList or () if isinstance(t.val, pg.ParamRef)]
            if not targets or _columns(statement.whereClause) & {t.name for t in statement.targetList}:
                continue  # SET n = n + $1, or a compare-and-set: the database has the last word
            function = facts.enclosing_function(update.call)
            kept = _kept_values_read(function, facts) if function is not None else {}
            if not kept:
                continue
            table = statement.relation.relname
            for target in targets:
                value = _parameter(update, target.val.number, facts)
                # (rows sent in a batch, ``executemany(sql, rows)``: the column's value is somewhere in them)
                sent = [value] if value is not None else list(update.params)
                found = _copy_sent(sent, kept, table, target.name, function, update, facts)
                if found is not None:
                    yield update, table, target.name, found
                    break


def _copy_sent(sent: List[ast.AST], kept: Dict[Tuple[int, str], Tuple[KeptValue, List[ast.AST]]], table: str,
               column: str, function: FunctionNode, update: ExecutedSql, facts: ModuleFacts) -> Optional[KeptCopy]:
    for value, readers in kept.values():
        ids = {id(node) for node in readers}
        flow = Flow(function, facts, lambda node, ids=ids: id(node) in ids, at=update.call)
        if not any(flow.reads(expr) for expr in sent):
            continue
        copy = _stale_copy(value, table, column)
        if copy is not None:
            return copy
    return None


def _kept_values_read(function: FunctionNode,
                      facts: ModuleFacts) -> Dict[Tuple[int, str], Tuple[KeptValue, List[ast.AST]]]:
    """The values kept on an object or in a module that ``function`` reads, each with the nodes that read it:
    ``self.<attr>`` of its own class or ``<obj>.<attr>`` of an object whose project class is known, a top-level name
    of its module or of another one of the project, or a call of a method (``counter.pending()``) whose return reads
    ``self.<attr>`` of its class."""
    from ...project.summaries import instance_class, resolve

    found: Dict[Tuple[int, str], Tuple[KeptValue, List[ast.AST]]] = {}

    def add(value: KeptValue, node: ast.AST) -> None:
        found.setdefault((id(value.owner) if value.owner is not None else id(value.facts), value.attr),
                         (value, []))[1].append(node)

    own_class = facts.enclosing_class(function)
    top_level = _top_level_names(facts)
    # (only a name some module seeds from a SELECT and changes, or a def of such a module, can hold a stale copy:
    # nothing else is resolved)
    named = _kept_names(facts)
    nodes = [node for node in function_nodes(function, facts) if _spelled(node) in named]
    called = {id(node.func) for node in nodes if isinstance(node, ast.Call)}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in top_level:
                add(KeptValue(None, node.id, facts), node)
            elif facts.imports.is_imported(node.id):
                elsewhere = _imported_top_level(node, facts)
                if elsewhere is not None:
                    add(elsewhere, node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called:
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                if own_class is not None:
                    add(KeptValue(own_class, node.attr, facts), node)
                continue
            if isinstance(node.value, ast.Name) and facts.imports.is_imported(node.value.id):
                elsewhere = _imported_top_level(node, facts)  # ``counters.pending``
                if elsewhere is not None:
                    add(elsewhere, node)
                    continue
            owner = instance_class(node.value, facts, function) if facts.context.cross_file else None
            if owner is not None:
                add(KeptValue(owner[0], node.attr, owner[1]), node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            for method, where in resolve(node, facts, function, by_name=False):
                owner_class = where.enclosing_class(method)
                for attr in _attributes_returned(method, where) if owner_class is not None else ():
                    add(KeptValue(owner_class, attr, where), node)
    return found


def _spelled(node: ast.AST) -> Optional[str]:
    """The name a node reads a kept value by: a name, an attribute, the method a call runs."""
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _kept_names(facts: ModuleFacts) -> frozenset:
    """The names a kept copy may be read by: the project's (command line) and this module's own."""
    from ...project.prefilter_words import kept_copy_names, kept_value_names

    def build(_facts: ModuleFacts) -> frozenset:
        own = kept_value_names("\n".join(facts.lines).encode("utf-8", "replace"))
        return own | kept_copy_names(facts.config) if facts.context.cross_file else own

    return facts.cached("data_races:kept-copy-names", build)


def _imported_top_level(node: ast.AST, facts: ModuleFacts) -> Optional[KeptValue]:
    """The top-level name of another module of the project that ``node`` reads through an import (``pending``
    imported from there, or ``counters.pending``)."""
    look_up = executed_sql.imported_constant  # (set by the project layer)
    if not facts.context.cross_file or look_up is None:
        return None
    found = look_up(node, facts)
    return KeptValue(None, (facts.qualify(node) or "").rsplit(".", 1)[-1], found[1]) if found is not None else None


def _top_level_names(facts: ModuleFacts) -> frozenset:
    def build(_facts: ModuleFacts) -> frozenset:
        statements = [s for s in facts.tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))]
        return frozenset(target.id for statement in statements
                         for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
                         if isinstance(target, ast.Name))

    return facts.cached("data_races:top-level-names", build)


def _attributes_returned(method: FunctionNode, facts: ModuleFacts) -> List[str]:
    """The ``self.<attr>`` a method hands back what it holds of (``return [(k, self.counts[k]) for k in ...]``)."""
    def build(_facts: ModuleFacts) -> Dict[int, List[str]]:
        return {}

    answers = facts.cached("data_races:attributes-returned", build)
    if id(method) not in answers:
        nodes = function_nodes(method, facts)
        returns = [n.value for n in nodes if isinstance(n, ast.Return) and n.value is not None]
        attributes = sorted({n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                             and isinstance(n.value, ast.Name) and n.value.id == "self"}) if returns else []
        answers[id(method)] = [attr for attr in attributes if any(
            Flow(method, facts, lambda node, attr=attr: _is_self_attribute(node, attr)).reads(r) for r in returns)]
    return answers[id(method)]


def _is_self_attribute(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


def _stale_copy(kept: KeptValue, table: str, column: str) -> Optional[KeptCopy]:
    """The SELECT of ``column`` of ``table`` that code of the owner stores into the kept value, and the arithmetic it
    does on the value kept (or on the value read, as it stores it)."""
    from .sql_helpers import _executions
    from .sql_reads import _select_result_source, _selected_columns

    functions = _owner_functions(kept)
    seed = None
    for function in functions:
        for select in _executions(function, kept.facts):
            if select.sql.statement_types != ("SelectStmt",) or select.sql.for_update:
                continue
            read = _selected_columns(select, table)
            if column not in read and "*" not in read:
                continue
            flow = Flow(function, kept.facts, _select_result_source(select))
            if any(flow.reads(value) for value in _stored_values(function, kept)):
                seed = select
                break
        if seed is not None:
            break
    if seed is None:
        return None
    is_kept = _kept_reader(kept)
    for function in functions:
        change = _first_change(function, kept, is_kept)
        if change is not None:
            return KeptCopy(kept, seed, change)
    return None


def _owner_functions(kept: KeptValue) -> List[FunctionNode]:
    if kept.owner is not None:
        return [s for s in kept.owner.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [f for f in kept.facts.functions if any(kept.is_it(n) for n in function_nodes(f, kept.facts))]


def _kept_reader(kept: KeptValue) -> Callable[[ast.AST], bool]:
    """A node reading what is kept: the value itself, an entry of it, or ``.get(...)`` of it."""
    def is_kept(node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            node = node.func.value
        return kept.is_it(_subscript_root(node))

    return is_kept


def _written(target: ast.AST, function: FunctionNode, kept: KeptValue) -> bool:
    """``target`` stores into the kept value: an entry of it, or (for a top-level name, under ``global``; for an
    attribute, always) the value itself."""
    root = _subscript_root(target)
    if not kept.is_it(root):
        return False
    return root is not target or kept.owner is not None or any(
        isinstance(n, ast.Global) and kept.attr in n.names for n in walk(function))


def _stored_values(function: FunctionNode, kept: KeptValue) -> Iterator[ast.AST]:
    """What ``function`` stores into the kept value: assigned to it or an entry, or handed to ``setdefault``/
    ``update``."""
    for node in function_nodes(function, kept.facts):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_written(t, function, kept) for t in targets):
                yield node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("setdefault", "update") and kept.is_it(_subscript_root(node.func.value)):
            yield from node.args
            yield from (k.value for k in node.keywords)


def _first_change(function: FunctionNode, kept: KeptValue, is_kept: Callable[[ast.AST], bool]) -> Optional[ast.AST]:
    """The first statement of ``function`` that changes a kept value with arithmetic: ``kept[k] += 1``, or ``kept[k]
    = kept.get(k, 0) + 1``, or ``kept[k] = (<the SELECT's value>) + 1``."""
    for node in function_nodes(function, kept.facts):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, _ARITHMETIC) \
                and _written(node.target, function, kept):
            return node
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_written(t, function, kept) for t in targets) and (
                    _arithmetic_on(unwrap(node.value), is_kept) is not None
                    or _arithmetic_on_a_read(node.value, function, kept)):
                return node
    return None


def _arithmetic_on_a_read(value: ast.AST, function: FunctionNode, kept: KeptValue) -> bool:
    """``value`` is arithmetic on what a SELECT of ``function`` answered (seeded and changed at once)."""
    from .sql_helpers import _executions
    from .sql_reads import _select_result_source

    return any(Flow(function, kept.facts, _select_result_source(select)).arithmetic(value)
               for select in _executions(function, kept.facts) if select.sql.statement_types == ("SelectStmt",))
