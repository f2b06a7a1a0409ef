"""Whether anything else in the project writes a model's field: a lost update needs two writers.

When one runner changes a field from its own value (a job the deployment runs once), the change is lost only
if some other code writes the same field of the same rows in between.  That other code is any place the
project shows writing the field by name (``row.field = ...``, ``update(field=...)``, ``"field"`` in an
``update_fields`` or a ``bulk_update``), or writing whole rows of a model declaring the field: a ``save()``
without ``update_fields`` sends back every field, the stale one too, as do the forms, serializers and admin
pages a model is handed to.  Anything not shown to be absent is a possible second writer.
"""
from __future__ import annotations

import ast
import os
from typing import List, Optional, Sequence

from ...analysis.context import FileContext
from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.names import dotted
from ...project import index as project
from .loads import _model_columns

#: Modules read for one field (those naming it, those naming a model declaring it): past this, many writers.
MAX_MODULES = 24
#: Methods whose keyword arguments are values written to the fields they name (not lookups of them).
_WRITING_METHODS = frozenset({"update", "aupdate", "update_or_create", "aupdate_or_create", "values"})
#: Calls that hand a model class to code that writes its rows as a whole (an admin page).
_REGISTERING = frozenset({"register"})


def written_elsewhere(field: str, own: Sequence[FunctionNode], facts: ModuleFacts) -> bool:
    """Code outside the functions ``own`` (the change and its write-back) may write ``field`` of a model row:
    True unless the whole project is read and shows no such place."""
    if not facts.context.cross_file:
        return True
    root = project.search_root(facts)
    modules = _modules(project.files_mentioning(field, root), facts)
    if modules is None:
        return True
    models: List[str] = []
    for module in modules:
        if any(_writes_field(node, field) for node in _outside(module, own, facts)):
            return True
        models.extend(cls.name for cls in module.classes if field in _model_columns(cls, module))
    if not models:
        return True  # the model declaring the field is not seen: who writes its rows is not known
    for model in set(models):
        named = _modules(project.files_mentioning(model, root), facts)
        if named is None or any(_writes_rows(node, model) for module in named for node in _outside(module, own, facts)):
            return True
    return False


def _modules(paths: Sequence[str], facts: ModuleFacts) -> Optional[List[ModuleFacts]]:
    """The project's own (non-test) modules at ``paths``, the checked one as checked; None when too many."""
    own = os.path.abspath(facts.context.path or "")
    found: List[ModuleFacts] = []
    for path in paths:
        if os.path.abspath(path) == own:
            found.append(facts)
            continue
        if FileContext(path, facts.config, cross_file=True).is_test:
            continue
        other = project.module_facts(path, facts.config)
        if other is None:
            return None  # (not parsed: not shown to be no writer)
        if not other.context.is_test:
            found.append(other)
        if len(found) > MAX_MODULES:
            return None
    return found


def _outside(module: ModuleFacts, own: Sequence[FunctionNode], facts: ModuleFacts):
    """The nodes of ``module`` outside the functions ``own`` of the checked module (matched by place: another
    parse of the same file holds other node objects)."""
    same = os.path.abspath(module.context.path or "") == os.path.abspath(facts.context.path or "")
    spans = [(f.lineno, f.end_lineno or f.lineno) for f in own] if same else []
    for node in walk(module.tree):
        line = getattr(node, "lineno", None)
        if line is None or not any(start <= line <= end for start, end in spans):
            yield node


def _writes_field(node: ast.AST, field: str) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Attribute) and t.attr == field for target in targets for t in walk(target))
    if isinstance(node, ast.Call):
        method = node.func.attr if isinstance(node.func, ast.Attribute) else dotted(node.func) or ""
        if method in _WRITING_METHODS and any(k.arg == field for k in node.keywords):
            return True
        if method in ("setattr", "bulk_update", "save", "asave") or method in _WRITING_METHODS:
            # ``setattr(row, "field", ...)``, ``bulk_update(rows, ["field"])``, ``save(update_fields=[...])``,
            # ``update({"field": ...})``
            return any(isinstance(n, ast.Constant) and n.value == field for n in walk(node))
    return False


def _writes_rows(node: ast.AST, model: str) -> bool:
    """A whole-row write of any row (``x.save()`` without ``update_fields``: its class is seldom written down),
    or ``model`` handed to a form, serializer or admin page (``model = Invoice`` in a ``Meta``,
    ``admin.site.register(Invoice)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("save", "asave") and not any(k.arg == "update_fields" for k in node.keywords):
            return True
        if node.func.attr in _REGISTERING and any(_names(a, model) for a in node.args):
            return True
    if isinstance(node, ast.Assign) and _names(node.value, model):
        return any(isinstance(t, ast.Name) and t.id == "model" for t in node.targets)
    return False


def _names(value: ast.AST, model: str) -> bool:
    return (dotted(value) or "").rsplit(".", 1)[-1] == model
