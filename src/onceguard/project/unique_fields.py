"""Rows one caller can create: a Django ``get_or_create`` whose lookup the model declares unique.

``_, created = DigestRun.objects.get_or_create(day=today)`` on a model whose ``day`` is ``unique=True`` (or a
primary key, or the fields of a ``UniqueConstraint`` / ``unique_together`` the lookup covers) inserts the row
for one caller only: the database refuses the others' insert, and ``get_or_create`` then reads the row and
answers ``created`` false.  Tested, that flag is a claim, as ``INSERT ... ON CONFLICT DO NOTHING`` is.  Without
a unique constraint two callers may both create, and it is none.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Set

from ..analysis.facts import ModuleFacts
from ..analysis.names import dotted
from . import index as project

#: Manager methods that create the row unless one matches the lookup.
GET_OR_CREATE = frozenset({"get_or_create", "aget_or_create"})
#: Keywords of those methods that are not part of the lookup.
_NOT_LOOKUP = frozenset({"defaults", "create_defaults"})


def creates_once(call: ast.Call, facts: ModuleFacts) -> bool:
    """``Model.objects.get_or_create(<unique lookup>)``: only one caller gets ``created`` true."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in GET_OR_CREATE and isinstance(func.value, ast.Attribute)):
        return False
    lookup = {k.arg.split("__", 1)[0] for k in call.keywords if k.arg and k.arg not in _NOT_LOOKUP
              and "__" not in k.arg}
    if not lookup:
        return False
    model = model_class(func.value.value, facts)
    return model is not None and any(group <= lookup for group in _unique_groups(model))


#: Manager methods that insert one row (a duplicate of a unique field raises).
CREATE = frozenset({"create", "acreate"})


def creates_unique_row(call: ast.Call, facts: ModuleFacts) -> bool:
    """``Model.objects.create(<fields covering a unique group>)``: a second caller's insert raises."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in CREATE and isinstance(func.value, ast.Attribute)):
        return False
    given = {k.arg for k in call.keywords if k.arg}
    model = model_class(func.value.value, facts) if given else None
    return model is not None and any(group <= given for group in _unique_groups(model) if group - {"id", "pk"})


#: Session methods that add one row to be inserted at the next flush (SQLAlchemy).
SESSION_ADD = frozenset({"add"})


def adds_unique_row(call: ast.Call, facts: ModuleFacts) -> bool:
    """``session.add(Model(<fields covering a unique group>))``: the insert the next flush sends raises for a
    second caller, as ``Model.objects.create(...)`` does."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in SESSION_ADD and len(call.args) == 1
            and isinstance(call.args[0], ast.Call)):
        return False
    row = call.args[0]
    given = {k.arg for k in row.keywords if k.arg}
    model = model_class(row.func, facts) if given else None
    return model is not None and any(group <= given for group in _unique_groups(model) if group - {"id", "pk"})


def model_class(expr: ast.AST, facts: ModuleFacts) -> Optional[ast.ClassDef]:
    """The project class ``expr`` names: a class of this module by its name, or (command line) the class its
    qualified name finds."""
    if isinstance(expr, ast.Name):
        for statement in facts.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == expr.id:
                return statement
    qualified = facts.qualify(expr) if facts.context.cross_file else None
    if qualified and "." in qualified:
        found = project.find_class(qualified, facts.config, project.search_root(facts))
        if found is not None:
            return found[0]
    return None


def _unique_groups(model: ast.ClassDef) -> List[Set[str]]:
    """The sets of fields the model declares unique together (a single field on its own)."""
    groups: List[Set[str]] = [{"id"}, {"pk"}]
    for statement in model.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Call):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            keywords = {k.arg: k.value for k in statement.value.keywords if k.arg}
            if any(isinstance(keywords.get(flag), ast.Constant) and keywords[flag].value is True
                   for flag in ("unique", "primary_key")):
                groups.extend({t.id} for t in targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.ClassDef) and statement.name == "Meta":
            groups.extend(_meta_groups(statement))
        elif isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__table_args__"
                                                        for t in statement.targets):
            groups.extend(_table_arg_groups(statement.value))
    return groups


def _table_arg_groups(value: ast.AST) -> List[Set[str]]:
    """SQLAlchemy's ``__table_args__ = (UniqueConstraint("owner", "day"), Index("ix", "slug", unique=True))``:
    the columns each unique constraint or unique index holds (a partial index, with a ``*_where``, only some)."""
    groups: List[Set[str]] = []
    for item in value.elts if isinstance(value, (ast.Tuple, ast.List)) else []:
        if not isinstance(item, ast.Call):
            continue
        kind = (dotted(item.func) or "").rpartition(".")[2]
        keywords = {k.arg: k.value for k in item.keywords if k.arg}
        if any(name.endswith("_where") for name in keywords):
            continue
        if kind == "UniqueConstraint":
            columns = item.args
        elif kind == "Index" and isinstance(keywords.get("unique"), ast.Constant) and keywords["unique"].value is True:
            columns = item.args[1:]
        else:
            continue
        group = {c.value for c in columns if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if group and len(group) == len(columns):
            groups.append(group)
    return groups


def _meta_groups(meta: ast.ClassDef) -> List[Set[str]]:
    groups: List[Set[str]] = []
    for statement in meta.body:
        if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], ast.Name):
            continue
        name, value = statement.targets[0].id, statement.value
        if name == "unique_together" and isinstance(value, (ast.Tuple, ast.List)):
            rows = value.elts if value.elts and isinstance(value.elts[0], (ast.Tuple, ast.List)) else [value]
            groups.extend(_strings(row) for row in rows)
        elif name == "constraints" and isinstance(value, (ast.Tuple, ast.List)):
            for constraint in value.elts:
                if isinstance(constraint, ast.Call) and (dotted(constraint.func) or "").endswith("UniqueConstraint"):
                    fields = next((k.value for k in constraint.keywords if k.arg == "fields"), None)
                    condition = any(k.arg == "condition" for k in constraint.keywords)
                    if fields is not None and not condition:  # (a partial constraint holds only some rows)
                        groups.append(_strings(fields))
    return [group for group in groups if group]


def _strings(node: ast.AST) -> Set[str]:
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else []
    return {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def catches_duplicates(handler: ast.ExceptHandler, facts: ModuleFacts, bases: bool = True) -> bool:
    """The handler catches a unique violation by its class (with ``bases``, or a base of it), however it was
    imported."""
    from ..knowledge import orm

    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {(facts.qualify(kind) or "").rpartition(".")[2] for kind in kinds
             if isinstance(kind, (ast.Name, ast.Attribute))}
    return bool(names & (orm.UNIQUE_VIOLATION_ERRORS | (orm.UNIQUE_VIOLATION_BASES if bases else frozenset())))
