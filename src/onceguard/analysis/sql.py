"""What a SQL string does, read with pglast (the PostgreSQL parser).

Python code carries SQL with driver placeholders (``%s``, ``%(name)s``,
``:name``, ``?``, ``$1``) and in pieces (f-strings, concatenation).  Whole
statements are normalised to ``$n`` placeholders and parsed; anything that
does not parse — a fragment, a template hole — is read with pglast's own
scanner, token by token.  The raw text is never searched for function names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import FrozenSet, Iterator, List, Optional, Set, Tuple

import pglast
from pglast import ast as pg
from pglast.enums import LockWaitPolicy
from pglast.parser import ParseError, scan
from pglast.visitors import Visitor

from ..knowledge.advisory_locks import ADVISORY_FUNCTIONS, AdvisoryFunction

# A placeholder in driver syntax; group "cast" keeps PostgreSQL's ``::type`` casts and
# quoted literals out of the rewrite.
_PLACEHOLDER = re.compile(
    r"""(?P<quoted>'(?:[^']|'')*')"""
    r"""|(?P<cast>::)"""
    r"""|(?P<pyformat>%\((?P<pyname>\w+)\)s)"""
    r"""|(?P<percent_s>%s)"""
    r"""|(?P<escaped>%%)"""
    r"""|(?P<named>(?<![:\w]):[A-Za-z_]\w*)"""
    r"""|(?P<qmark>\?)"""
    r"""|(?P<hole>\{\w*\})"""
)
# Stands for an f-string hole or an unknown concatenated part.
HOLE = "$1"


def normalise_placeholders(text: str) -> str:
    counter = [0]

    def replace(match: "re.Match[str]") -> str:
        if match.group("quoted") or match.group("cast"):
            return match.group(0)
        if match.group("escaped"):
            return "%"
        counter[0] += 1
        return f"${counter[0]}"

    return _PLACEHOLDER.sub(replace, text)


def placeholder_names(text: str) -> List[Optional[str]]:
    """For each placeholder that ``normalise_placeholders`` numbers ``$1, $2, ...``: its name
    (``%(name)s``, ``:name``) or None when it is positional (``%s``, ``?``, ``{}``)."""
    names: List[Optional[str]] = []
    for match in _PLACEHOLDER.finditer(text):
        if match.group("quoted") or match.group("cast") or match.group("escaped"):
            continue
        names.append(match.group("pyname") or (match.group("named") or "")[1:] or None)
    return names


@lru_cache(maxsize=4096)
def parse_statements(text: str) -> Optional[Tuple[pg.Node, ...]]:
    """pglast statement nodes of a whole SQL text, or None when it is not a complete statement."""
    try:
        return tuple(raw.stmt for raw in pglast.parse_sql(normalise_placeholders(text)))
    except (ParseError, ValueError, IndexError, TypeError):
        return None


def sql_nodes(node) -> Iterator[pg.Node]:
    """Every pglast node in ``node`` (a node, or a tuple or list of them), ``node`` itself first."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (tuple, list)):
            stack.extend(current)
        elif isinstance(current, pg.Node):
            yield current
            for name in current:
                value = getattr(current, name, None)
                if isinstance(value, (pg.Node, tuple, list)):
                    stack.append(value)


@lru_cache(maxsize=4096)
def tokens(text: str) -> Tuple[Tuple[str, str], ...]:
    """(token name, source text) pairs from pglast's scanner; empty when even scanning fails."""
    normalised = normalise_placeholders(text)
    try:
        return tuple((t.name, normalised[t.start : t.end + 1]) for t in scan(normalised))
    except (ParseError, ValueError, IndexError, TypeError):
        return ()


class _FunctionCalls(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def visit_FuncCall(self, ancestors, node: pg.FuncCall) -> None:  # noqa: N802 - pglast's naming
        name = node.funcname[-1].sval.lower()
        self.calls.append((name, len(node.args or ())))


@dataclass(frozen=True)
class AdvisoryCall:
    """One advisory-lock function called in a SQL text."""

    function: AdvisoryFunction
    arg_count: Optional[int]  # None when only the scanner saw it

    @property
    def name(self) -> str:
        return self.function.name


@dataclass(frozen=True)
class SqlFacts:
    text: str
    parsed: bool
    statement_types: Tuple[str, ...]  # pglast node class names: SelectStmt, UpdateStmt, CreateStmt, ...
    functions: Tuple[Tuple[str, Optional[int]], ...]  # (lower-case name, argument count or None)
    skip_locked: bool
    for_update: bool
    returning: bool
    #: The INSERT, UPDATE and DELETE statements a top-level SELECT's WITH clause runs (``WITH moved AS (UPDATE
    #: ... RETURNING ...) SELECT ... FROM moved``): the statement writes, whatever its top-level type says.
    cte_writes: Tuple[str, ...] = ()

    @property
    def advisory(self) -> Tuple[AdvisoryCall, ...]:
        return tuple(
            AdvisoryCall(ADVISORY_FUNCTIONS[name], count) for name, count in self.functions if name in ADVISORY_FUNCTIONS
        )

    @property
    def function_names(self) -> FrozenSet[str]:
        return frozenset(name for name, _ in self.functions)

    def has(self, statement_type: str) -> bool:
        return statement_type in self.statement_types


_DDL_STATEMENTS = frozenset({
    "CreateStmt", "CreateTableAsStmt", "AlterTableStmt", "DropStmt", "IndexStmt", "CreateSeqStmt",
    "AlterSeqStmt", "CreateSchemaStmt", "RenameStmt", "CreateEnumStmt", "AlterEnumStmt",
    "CreateExtensionStmt", "ViewStmt", "CreateFunctionStmt", "CreateTrigStmt", "CompositeTypeStmt",
    "CreateDomainStmt", "TruncateStmt",
})
_DDL_LEAD = {
    ("CREATE", "TABLE"), ("CREATE", "INDEX"), ("CREATE", "UNIQUE"), ("CREATE", "SCHEMA"),
    ("CREATE", "SEQUENCE"), ("CREATE", "TYPE_P"), ("CREATE", "EXTENSION"), ("CREATE", "VIEW"),
    ("ALTER", "TABLE"), ("ALTER", "TYPE_P"), ("ALTER", "SEQUENCE"), ("DROP", "TABLE"), ("DROP", "INDEX"),
    ("DROP", "SCHEMA"), ("DROP", "TYPE_P"), ("DROP", "VIEW"),
}


def is_ddl_statement(statement_type: str) -> bool:
    return statement_type in _DDL_STATEMENTS


@lru_cache(maxsize=4096)
def analyse(text: str) -> SqlFacts:
    statements = parse_statements(text)
    if statements is not None:
        visitor = _FunctionCalls()
        skip_locked = for_update = returning = False
        cte_writes: List[str] = []
        for statement in statements:
            visitor(statement)
            for clause in getattr(statement, "lockingClause", None) or ():
                for_update = True
                if clause.waitPolicy == LockWaitPolicy.LockWaitSkip:
                    skip_locked = True
            if returns_rows(statement):
                returning = True
            # A SELECT over a data-modifying WITH (``WITH moved AS (UPDATE ... RETURNING ...) SELECT ... FROM
            # moved``) runs that UPDATE, INSERT or DELETE, its returned rows read back: what it does is the write.
            writes = _modifying_ctes(statement) if isinstance(statement, pg.SelectStmt) else []
            cte_writes.extend(type(inner).__name__ for inner in writes)
            returning = returning or any(returns_rows(inner) for inner in writes)
        # Locking clauses of sub-selects (UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)).
        inner = _LockingClauses()
        for statement in statements:
            inner(statement)
        return SqlFacts(
            text, True, tuple(type(s).__name__ for s in statements), tuple(visitor.calls),
            skip_locked or inner.skip_locked, for_update or inner.for_update, returning, tuple(cte_writes),
        )
    return _analyse_tokens(text)


def returns_rows(statement) -> bool:
    """The statement has a RETURNING clause (``returningList`` or ``returningClause``, by pglast version)."""
    return bool(getattr(statement, "returningClause", None) or getattr(statement, "returningList", None))


def _modifying_ctes(statement) -> list:
    """The INSERT, UPDATE and DELETE statements a statement's WITH clause runs."""
    clause = getattr(statement, "withClause", None)
    return [cte.ctequery for cte in (clause.ctes or ()) if isinstance(cte.ctequery, _MODIFYING)] if clause else []


_MODIFYING = (pg.InsertStmt, pg.UpdateStmt, pg.DeleteStmt)


class _LockingClauses(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.skip_locked = False
        self.for_update = False

    def visit_LockingClause(self, ancestors, node) -> None:  # noqa: N802
        self.for_update = True
        if node.waitPolicy == LockWaitPolicy.LockWaitSkip:
            self.skip_locked = True


_LEAD_TYPES = {
    "SELECT": "SelectStmt", "UPDATE": "UpdateStmt", "INSERT": "InsertStmt", "DELETE_P": "DeleteStmt",
    "WITH": "SelectStmt",
}


def _analyse_tokens(text: str) -> SqlFacts:
    toks = tokens(text)
    names = [name for name, _ in toks]
    functions = []
    for index in range(len(toks) - 1):
        name, source = toks[index]
        if toks[index + 1][0] == "ASCII_40" and (name == "IDENT" or name.endswith("KEYWORD")):
            functions.append((source.lower(), None))
    statement_types = []
    if names:
        lead = names[0]
        pair = tuple(names[:2])
        if pair in _DDL_LEAD or (lead == "CREATE" and "TABLE" in names[:6]):
            statement_types.append("DDL")
        elif lead in _LEAD_TYPES:
            statement_types.append(_LEAD_TYPES[lead])
    skip_locked = any(names[i] == "SKIP" and names[i + 1] == "LOCKED" for i in range(len(names) - 1))
    for_update = any(names[i] == "FOR" and names[i + 1] in ("UPDATE", "NO", "SHARE", "KEY") for i in range(len(names) - 1))
    return SqlFacts(
        text, False, tuple(statement_types), tuple(functions), skip_locked, for_update, "RETURNING" in names,
    )


def is_ddl(facts: SqlFacts) -> bool:
    return any(t == "DDL" or is_ddl_statement(t) for t in facts.statement_types)


def updates_tested_state(text: str) -> bool:
    """One UPDATE picks rows by a column and moves them out of it (``UPDATE grants SET expired_at = now() WHERE
    expired_at IS NULL AND ...``, also inside a ``WITH ... RETURNING``): a row it has moved no longer matches, so a
    later run finds nothing of it left."""
    for statement in parse_statements(text) or ():
        for node in sql_nodes(statement):
            if type(node).__name__ != "UpdateStmt" or node.whereClause is None:
                continue
            # (``SET stock = stock - 1 WHERE stock > 0`` steps a counter the row may still match: not a move)
            written = {target.name for target in node.targetList or () if getattr(target, "name", None)
                       and target.name not in _columns_read(target.val)}
            if written & _columns_read(node.whereClause):
                return True
    return False


def _columns_read(expression) -> Set[str]:
    return {field.sval for ref in sql_nodes(expression) if type(ref).__name__ == "ColumnRef"
            for field in (ref.fields[-1:] if ref.fields else ()) if hasattr(field, "sval")}
