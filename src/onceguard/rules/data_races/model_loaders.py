"""Rows a model class loads itself, in the ORMs whose models carry their own queries (Peewee, Tortoise ORM):
``Card.get_or_none(Card.code == code)``, ``await Order.get(id=order_id)``, ``Card.get_by_id(pk)``.

The class must be a model of that ORM as the project shows it: defined (here or in another module of the
project) in a module that imports the ORM. A ``get`` on any other class is no load of a row."""
from __future__ import annotations

import ast
from typing import Optional

from ...analysis.facts import ModuleFacts
from ...analysis.names import dotted
from ...knowledge import orm
from ...project import index as project
from .loads import Loaded, chain, module_imports_any, unwrap


def model_class_loader(expr: ast.AST, facts: ModuleFacts) -> Optional[Loaded]:
    """The load when ``expr`` is a chain on a model class that ends in one of its ORM's one-row loaders."""
    expr = unwrap(expr)
    if not isinstance(expr, ast.Call):
        return None
    head, links = chain(expr)
    if not links or not isinstance(head, (ast.Name, ast.Attribute)):
        return None
    last = links[-1][0]
    if not any(last in loaders for loaders in orm.MODEL_CLASS_LOADERS.values()):
        return None
    library = _model_library_of(head, facts)
    if not library or last not in orm.MODEL_CLASS_LOADERS[library]:
        return None
    locked = any(name in orm.MODEL_CLASS_ROW_LOCKS for name, _ in links)
    return Loaded(library, facts.qualify(head) or dotted(head) or "Model", expr, locked)


def _model_library_of(head: ast.AST, facts: ModuleFacts) -> str:
    """The ORM whose model ``head`` names: a class of this module, or of the project, in a module importing it."""
    if isinstance(head, ast.Name) and any(isinstance(s, ast.ClassDef) and s.name == head.id for s in facts.tree.body):
        where: Optional[ModuleFacts] = facts
    elif facts.context.cross_file and facts.imports.is_imported((dotted(head) or "").partition(".")[0]):
        found = project.find_class(facts.qualify(head) or "", facts.config, project.search_root(facts))
        where = found[1] if found is not None else None
    else:
        where = None
    if where is None:
        return ""
    return next((library for library in orm.MODEL_CLASS_LOADERS if module_imports_any(where, (library,))), "")
