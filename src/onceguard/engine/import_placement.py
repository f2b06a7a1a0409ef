"""Where a fix's import goes, so that a file isort and ruff (``I001``) accepted stays accepted: after the
docstring and ``__future__`` imports, inside the import block, in its section (standard library, third
party, first party, local), at its sorted place — and which names a fix must not import because the
module already uses them for something else (an import would redefine them, ``F811``).

isort's default order, which ruff follows: within a section, ``import x`` lines come before
``from x import y`` lines, each sorted by module name without regard to case; sections are separated by
one blank line.
"""
from __future__ import annotations

import ast
import os
import sys
from typing import Callable, Iterable, List, Optional, Set, Tuple

import libcst as cst

from ..analysis.facts import walk
from .fix_transforms import from_imported, import_nodes

_SECTIONS = ("future", "stdlib", "third", "first", "local")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def first_party_test(path: str) -> Callable[[str], bool]:
    """Whether a top-level module name is the project's own, judged as ruff judges it by default: a package
    or module of that name at the project's root (the nearest folder above ``path`` with a pyproject.toml,
    setup.py or .git) or in its ``src/`` folder."""
    root = ""
    current = os.path.dirname(os.path.abspath(path)) if path else ""
    while current:
        if any(os.path.exists(os.path.join(current, marker)) for marker in ("pyproject.toml", "setup.py", ".git")):
            root = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    bases = [root, os.path.join(root, "src")] if root else ([os.path.dirname(os.path.abspath(path))] if path else [])

    def is_first_party(name: str) -> bool:
        return any(os.path.isdir(os.path.join(base, name)) or os.path.isfile(os.path.join(base, name + ".py"))
                   for base in bases)

    return is_first_party


def bound_names(text: str) -> Set[str]:
    """Every name the module binds anywhere (definitions, assignments, parameters, imports)."""
    names: Set[str] = set()
    for node in walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
    return names


def imported_name(entry: str) -> str:
    """The name an import entry binds: ``"x.y:z"`` binds ``z``, ``"x"`` binds ``x``."""
    return entry.split(":", 1)[1] if ":" in entry else entry.split(".")[0]


def _plain_imports(module: cst.Module) -> Set[str]:
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.asname is None:
                            names.add(cst.Module(body=[]).code_for_node(alias.name))
    return names


def missing_imports(module: cst.Module, entries: Iterable[str]) -> List[str]:
    return sorted(set(entries) - _plain_imports(module) - from_imported(module))


# -- the import block ---------------------------------------------------------------------------------------


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _imports_of(statement: cst.CSTNode) -> Optional[List[cst.BaseSmallStatement]]:
    if isinstance(statement, cst.SimpleStatementLine) and statement.body and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body):
        return list(statement.body)
    return None


def _module_name(small: cst.BaseSmallStatement) -> Tuple[bool, str, int]:
    """(is a from-import, dotted module, relative level)."""
    empty = cst.Module(body=[])
    if isinstance(small, cst.ImportFrom):
        dotted = empty.code_for_node(small.module) if small.module is not None else ""
        return True, dotted, len(small.relative)
    assert isinstance(small, cst.Import)
    return False, empty.code_for_node(small.names[0].name), 0


def _section(small: cst.BaseSmallStatement, is_first_party: Callable[[str], bool]) -> str:
    is_from, dotted, level = _module_name(small)
    top = dotted.split(".")[0]
    if is_from and top == "__future__":
        return "future"
    if level:
        return "local"
    if top in _STDLIB:
        return "stdlib"
    return "first" if is_first_party(top) else "third"


def _sort_key(small: cst.BaseSmallStatement) -> Tuple[int, str]:
    is_from, dotted, level = _module_name(small)
    return (1 if is_from else 0, "." * level + dotted.lower())


def _blank_lines(statement: cst.SimpleStatementLine) -> int:
    count = 0
    for line in statement.leading_lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _name_key(name: str) -> Tuple[int, str]:
    """isort's ``order-by-type`` (ruff's default too): CONSTANTS, then Classes, then everything else."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _joined(module: cst.Module, entry: str) -> Optional[cst.Module]:
    """``module`` with ``entry``'s name added to an existing ``from m import a, b`` of the same module, as isort
    merges them; None when there is none to join."""
    if ":" not in entry:
        return None
    dotted, name = entry.split(":", 1)
    empty = cst.Module(body=[])
    body = list(module.body)
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if (not isinstance(small, cst.ImportFrom) or small.relative or small.module is None
                or isinstance(small.names, cst.ImportStar) or empty.code_for_node(small.module) != dotted):
            continue
        names = list(small.names)
        if "\n" in empty.code_for_node(small) or "#" in empty.code_for_node(small):
            return None  # wrapped or commented: leave the layout to the file's own formatter
        aliases = [cst.ImportAlias(name=cst.Name(name))] + [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                                            for alias in names]
        aliases.sort(key=lambda alias: _name_key(empty.code_for_node(alias.name)))
        aliases = [alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                   for alias in aliases[:-1]] + [aliases[-1]]
        body[index] = statement.with_changes(body=[small.with_changes(names=aliases, lpar=None, rpar=None)])
        return module.with_changes(body=body)
    return None


def add_imports(module: cst.Module, entries: Iterable[str], is_first_party: Callable[[str], bool]) -> cst.Module:
    missing = []
    for entry in missing_imports(module, entries):
        joined = _joined(module, entry)
        if joined is None:
            missing.append(entry)
        else:
            module = joined
    if not missing:
        return module
    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    end = start
    while end < len(body) and _imports_of(body[end]) is not None:
        end += 1
    for node in import_nodes(missing):
        body, end = _place(body, start, end, cst.SimpleStatementLine(body=[node]), is_first_party)
    return module.with_changes(body=body)


def _split_leading(statement: cst.BaseStatement) -> Tuple[List[cst.EmptyLine], List[cst.EmptyLine]]:
    """A statement's leading lines: the blank lines above it, and the comments (and what follows them)."""
    leading = list(statement.leading_lines)
    blanks = 0
    while blanks < len(leading) and leading[blanks].comment is None:
        blanks += 1
    return leading[:blanks], leading[blanks:]


def _place(body: List[cst.BaseStatement], start: int, end: int, new: cst.SimpleStatementLine,
           is_first_party: Callable[[str], bool]) -> Tuple[List[cst.BaseStatement], int]:
    """``body`` with ``new`` put in the import block ``body[start:end]``; and the block's new end."""
    section = _SECTIONS.index(_section(new.body[0], is_first_party))
    key = _sort_key(new.body[0])
    # The block's groups: runs of import lines without a blank line between them.
    groups: List[List[int]] = []
    for index in range(start, end):
        statement = body[index]
        assert isinstance(statement, cst.SimpleStatementLine)
        if not groups or _blank_lines(statement) > 0:
            groups.append([])
        groups[-1].append(index)

    def section_of(group: List[int]) -> int:
        first = body[group[0]]
        assert isinstance(first, cst.SimpleStatementLine)
        return _SECTIONS.index(_section(first.body[0], is_first_party))

    same = next((g for g in groups if section_of(g) == section), None)
    later = next((g for g in groups if section_of(g) > section), None)
    if same is not None:
        position = next((i for i in same if _sort_key(body[i].body[0]) > key), same[-1] + 1)  # type: ignore[attr-defined]
        if position == same[0]:
            # First of its group: it takes the blank lines that set the group apart.
            blanks, rest = _split_leading(body[position])
            new = new.with_changes(leading_lines=blanks)
            body[position] = body[position].with_changes(leading_lines=rest)
    elif later is not None:
        # A group of its own, before the first group of a later section.
        position = later[0]
        blanks, rest = _split_leading(body[position])
        new = new.with_changes(leading_lines=blanks)
        body[position] = body[position].with_changes(leading_lines=[cst.EmptyLine()] + rest)
    else:
        # A group of its own after the block (or the block itself, in a module without imports).
        position = end
        if groups or start > 0:
            new = new.with_changes(leading_lines=[cst.EmptyLine()])
        if position < len(body):
            blanks, rest = _split_leading(body[position])
            if not groups and not blanks:
                body[position] = body[position].with_changes(leading_lines=[cst.EmptyLine()] + rest)
    body.insert(position, new)
    return body, end + 1
