"""The decorators a function gets, however they are spelled.

``@app.on_event("startup")`` over ``def f`` and ``f = app.on_event("startup")(f)`` after it are the same
thing to Python: ``decorators(function, facts)`` gives both, the ``@`` ones first, each outermost first.
"""
from __future__ import annotations

import ast
from typing import Dict, List

from .facts import FunctionNode, ModuleFacts

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def decorators(function: FunctionNode, facts: ModuleFacts) -> List[ast.expr]:
    """``function.decorator_list``, then the decorators applied by a call in the same body after the def that
    rebinds its name (``job = D(...)(job)``, ``job = A(B(job))``): the expression applied, outermost first."""
    explicit = _explicit_decorators(facts).get(id(function), [])
    return list(function.decorator_list) + explicit if explicit else list(function.decorator_list)


def _explicit_decorators(facts: ModuleFacts) -> Dict[int, List[ast.expr]]:
    def build(_facts: ModuleFacts) -> Dict[int, List[ast.expr]]:
        found: Dict[int, List[ast.expr]] = {}
        bodies: List[List[ast.stmt]] = [facts.tree.body]
        bodies.extend(node.body for node in facts.classes)  # (the module's one walk filed them)
        bodies.extend(node.body for node in facts.functions)
        for body in bodies:
            defs: Dict[str, FunctionNode] = {}
            for statement in body:
                if isinstance(statement, _FUNCTION_TYPES):
                    defs[statement.name] = statement
                    continue
                if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                        and isinstance(statement.targets[0], ast.Name)):
                    continue
                name = statement.targets[0].id
                function = defs.get(name)
                if function is None:
                    continue
                applied = _applied(statement.value, name)
                if applied:
                    found.setdefault(id(function), []).extend(applied)
        return found

    return facts.cached("applied-decorators", build)


def _applied(value: ast.AST, name: str) -> List[ast.expr]:
    """``A(B(name))`` -> [A, B]; ``D(...)(name)`` -> [D(...)]; [] when ``name`` is not the one argument at
    the bottom of the chain."""
    chain: List[ast.expr] = []
    while isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        chain.append(value.func)
        value = value.args[0]
    if not (isinstance(value, ast.Name) and value.id == name):
        return []
    return chain
