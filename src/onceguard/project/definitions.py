"""Where a name imported from another module of the project is defined (CLI only: it reads that module)."""
from __future__ import annotations

import ast
from typing import Callable, Optional, Tuple

from . import index as project
from ..analysis.facts import FunctionNode, ModuleFacts


def definition_facts(qualified: str, facts: ModuleFacts,
                     worth_reading: Optional[Callable[[str, str], bool]] = None) -> Optional[Tuple[ModuleFacts, str]]:
    """The module facts and local name of a definition: this module for a local name, another module of the
    project (CLI only) for an imported one, following re-exports (``from .dual import DualCache`` in a
    package's ``__init__``). ``worth_reading(path, name)``, when given, is asked before another module is
    parsed: False when its text already shows the caller has no use for the definition."""
    if "." not in qualified:
        return facts, qualified
    for _ in range(4):
        if not facts.context.cross_file:
            return None
        module, _, name = qualified.rpartition(".")
        path = project.module_path(module, project.roots_for(facts))
        if path is None or (worth_reading is not None and not worth_reading(path, name)):
            return None
        other = project.module_facts(path, facts.config)
        if other is None:
            return None
        if top_level(other, name) is not None or not other.imports.is_imported(name):
            return other, name
        forwarded = other.imports.qualify_dotted(name)
        if forwarded == qualified or "." not in forwarded:
            return other, name
        facts, qualified = other, forwarded
    return None


def top_level(facts: ModuleFacts, name: str) -> Optional[ast.AST]:
    found = None
    for statement in facts.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            found = statement
    return found


def definition(qualified: str, facts: ModuleFacts,
               worth_reading: Optional[Callable[[str, str], bool]] = None) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """The top-level def or class ``qualified`` names, with the facts of the module that holds it (see
    ``definition_facts``), or None."""
    located = definition_facts(qualified, facts, worth_reading)
    if located is None:
        return None
    where, name = located
    found = top_level(where, name)
    return (found, where) if found is not None else None


def called_def(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The project def a call runs: a module-level function (here or imported), a method of a module-level
    instance, or a method of the class around the call through ``self``."""
    func = call.func
    if isinstance(func, ast.Name) and not facts.imports.is_imported(func.id):
        made = [f for f in facts.functions_by_name.get(func.id, ()) if facts.enclosing_class(f) is None
                and facts.enclosing_function(f) is None]
        return (made[0], facts) if len(made) == 1 else None
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            owner = facts.enclosing_class(call)
            made = [f for f in facts.functions_by_name.get(func.attr, ()) if owner is not None
                    and facts.enclosing_class(f) is owner]
            return (made[0], facts) if len(made) == 1 else None
        method = facts.module_method(func)
        if method is not None:
            return method, facts
    if facts.context.cross_file and isinstance(func, (ast.Name, ast.Attribute)):
        found = definition(facts.callee(call) or "", facts)
        if found is not None and isinstance(found[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return found[0], found[1]
    return None
