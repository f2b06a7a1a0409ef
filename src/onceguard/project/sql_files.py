"""SQL a module reads from a file of the project and sends: ``conn.execute(Path("schema.sql").read_text())``.

The statement is in the file, not in the code: ``resources.files("app").joinpath("schema.sql").read_text()``,
``(HERE / "sql" / "init.sql").read_text()``, ``open("schema.sql").read()``, directly, through a local name or
through a small function of the module that returns it. The file is found next to the module or in a
directory above it (up to the project's root), and read as the SQL the call sends.
"""
from __future__ import annotations

import ast
import os
from typing import List, Optional

from ..analysis.executed_sql import ExecutedSql, bound_value
from ..analysis.facts import ModuleFacts, walk, walk_no_nested_functions
from ..analysis.sql import analyse
from ..knowledge.databases import SQL_METHODS, SQL_WRAPPERS

#: Calls that read a file's text.
_READS = frozenset({"read_text", "read", "read_bytes"})
#: SQL files larger than this are not read (a data dump, not a schema).
_MAX_BYTES = 1 << 20
_MAX_HOPS = 3


def sql_file_executions(facts: ModuleFacts) -> List[ExecutedSql]:
    """Each call of the module that sends the text of a ``.sql`` file of the project, with that text."""
    return facts.cached("sql-file-executions", _collect)


def _collect(facts: ModuleFacts) -> List[ExecutedSql]:
    found: List[ExecutedSql] = []
    for call in facts.calls_named(*SQL_METHODS):
        if not call.args or not isinstance(call.func, ast.Attribute):
            continue
        named = _file_named(call.args[0], facts, 0)
        if named is None:
            continue
        text = _read(named, facts)
        if text is not None:
            found.append(ExecutedSql(call, call.func.value, call.func.attr, text, analyse(text), named))
    return found


def _file_named(expr: ast.AST, facts: ModuleFacts, hops: int) -> Optional[ast.Constant]:
    """The ``"….sql"`` literal of an expression that reads that file's text, followed through a local name and
    a function of the module that returns it (the literal carries the path's other literal parts, in order, as
    ``_og_parts``: ``HERE / "sql" / "init.sql"`` is ``sql/init.sql``)."""
    if hops > _MAX_HOPS:
        return None
    if isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Name):
        value = bound_value(expr, facts)
        return _file_named(value, facts, hops + 1) if value is not None else None
    if not isinstance(expr, ast.Call):
        return None
    if (facts.callee(expr) or "") in SQL_WRAPPERS and expr.args:
        return _file_named(expr.args[0], facts, hops + 1)  # ``text(open(SCHEMA).read())``
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in _READS:
        path = expr.func.value  # what is read (not the read's own arguments: an encoding)
        if isinstance(path, ast.Name):
            from .schema_writes import with_binding  # (schema_writes reads this module's answers)

            path = with_binding(path, facts) or path  # ``with open(SCHEMA) as fh:`` ... ``fh.read()``
        if isinstance(path, ast.Call) and isinstance(path.func, ast.Name) and path.func.id == "open" and path.args:
            path = path.args[0]  # ``open(name, encoding=...).read()``: the name
        parts = sorted(_string_parts(path, facts), key=lambda n: (n.lineno, n.col_offset))
        last = next((i for i in range(len(parts) - 1, -1, -1) if parts[i].value.lower().endswith(".sql")), None)
        if last is None:
            return None
        found = parts[last]
        found._og_parts = [p.value for p in parts[:last + 1]]
        return found
    if isinstance(expr.func, ast.Name) and not expr.args:
        function = next((f for f in facts.functions_by_name.get(expr.func.id, ())
                         if facts.enclosing_function(f) is None), None)
        returns = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Return)] if function else []
        if len(returns) == 1 and returns[0].value is not None:
            return _file_named(returns[0].value, facts, hops + 1)
    return None


def _string_parts(path: ast.AST, facts: ModuleFacts) -> List[ast.Constant]:
    """The string literals a path is made of, a name read through its one binding (``SCHEMA =
    Path(__file__).with_name("schema.sql")``)."""
    found = []
    for node in walk(path):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node)
        elif isinstance(node, ast.Name):
            value = bound_value(node, facts)
            if value is not None:
                found.extend(n for n in walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return found


def _read(named: ast.Constant, facts: ModuleFacts) -> Optional[str]:
    """The text of the file the path's literal parts name (all of them, then fewer from the front), next to the
    module or in a directory above it, within the project."""
    path = facts.context.path
    parts = [p for p in getattr(named, "_og_parts", [named.value]) if p and not os.path.isabs(p)]
    if not path or not parts:
        return None
    names = [os.path.join(*parts[start:]) for start in range(len(parts))]
    root = os.path.abspath(facts.config.root or os.path.dirname(path))
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.path.getsize(candidate) <= _MAX_BYTES:
                try:
                    with open(candidate, encoding="utf-8", errors="replace") as handle:
                        return handle.read()
                except OSError:
                    return None
        if directory == root or os.path.dirname(directory) == directory or not directory.startswith(root):
            return None
        directory = os.path.dirname(directory)
