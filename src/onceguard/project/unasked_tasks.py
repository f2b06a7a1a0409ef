"""Queued tasks nothing asks for.

A task a worker runs when it is enqueued (``@shared_task``, ``@app.task``, ``@actor``) runs only if something
enqueues it: a ``.delay()``, a beat entry, a ``send_task("name")``, a signal.  All of them name the task.  When
no file of the project but its own names it, and its own module only defines it, no run of it is ever asked
for in this deployment: code left in place ("experimental, unused"), which races nothing.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional, Set

from ..analysis.context import FileContext
from ..analysis.facts import FunctionNode, ModuleFacts
from . import index as project
from .reach import Reach


def never_asked(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is a queued task no code of the project (tests aside) names but its own definition: its
    def name and the name it is registered under (``@task(name="...")``) appear nowhere else."""
    if not facts.context.cross_file or facts.enclosing_function(function) is not None \
            or not Reach.of_module(facts).on_demand(function):
        return False
    names = {function.name} | _registered_names(function)
    own = os.path.abspath(facts.context.path or "")
    root = project.search_root(facts)
    for name in names:
        for path in project.files_mentioning(name, root):
            if os.path.abspath(path) != own and not FileContext(path, facts.config).is_test:
                return False
    text = "\n".join(facts.lines)
    # In its own module: the def and the registration string only (no call, no reference, no schedule).
    return all(len(re.findall(r"\b" + re.escape(name) + r"\b", text)) <= _own_mentions(function, name)
               for name in names)


def _registration_strings(function: FunctionNode):
    for decorator in function.decorator_list:
        for keyword in getattr(decorator, "keywords", ()):
            value = keyword.value
            if keyword.arg == "name" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                yield value.value


def _registered_names(function: FunctionNode) -> Set[str]:
    return {name.rsplit(".", 1)[-1] for name in _registration_strings(function) if name}


def _own_mentions(function: FunctionNode, name: str) -> int:
    """How often the definition itself spells ``name``: the def, and its registration string."""
    pattern = r"\b" + re.escape(name) + r"\b"
    return (1 if name == function.name else 0) + sum(
        len(re.findall(pattern, registered)) for registered in _registration_strings(function))


def holding_function(line: int, facts: ModuleFacts) -> Optional[FunctionNode]:
    """The innermost function whose lines hold ``line``."""
    holders = [f for f in facts.functions if f.lineno <= line <= (getattr(f, "end_lineno", None) or f.lineno)]
    return max(holders, key=lambda f: f.lineno) if holders else None
