"""Module state reached through its module's own accessor functions: ``remember(key, reply)`` writes the entry,
``earlier_reply(key)`` reads it, and request code of other modules calls both.  What runs the accessors is their
callers, followed through the project as a minted key's are; and a table the module ships with entries is state
once a function sets an entry under a key it computes."""
from __future__ import annotations

import ast
from typing import Iterable, Set

from ..analysis.facts import FunctionNode, ModuleFacts, walk
from . import process_state as state


def behind_accessors(binding: state.Binding, record: state.Access, readers: Iterable[state.Access],
                     facts: ModuleFacts) -> bool:
    """A module-level function writes the entry under a key it is handed (not a mirror rebuilt whole from a
    source) and another module-level function reads it without filling it through the writer on a miss (a memo):
    the module's accessors (command line only, where their callers are read)."""
    writer = record.function
    return binding.scope == state.MODULE and facts.context.cross_file and writer is not None \
        and _module_function(writer, facts) and _keyed_by_parameter(record.node, writer) \
        and any(r.function is not None and r.function is not writer and _module_function(r.function, facts)
                and not _calls(r.function, writer) for r in readers)


def entries_set_at_run_time(name: str, facts: ModuleFacts) -> bool:
    """A function of the module sets an entry of the module-level mapping ``name`` under a key it computes
    (``_FLAGS[key] = on``, not a record's fixed field): the table it ships with is its first state, not a constant."""
    def build(_facts: ModuleFacts) -> Set[str]:  # (one pass over the module's assignments for all its tables)
        return {t.value.id for node in facts.assigns if isinstance(node, ast.Assign)
                and facts.enclosing_function(node) is not None for t in node.targets
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                and not isinstance(t.slice, ast.Constant)}

    return name in facts.cached("state-accessors:keyed-tables", build)


def _module_function(function: FunctionNode, facts: ModuleFacts) -> bool:
    return facts.enclosing_function(function) is None and facts.enclosing_class(function) is None


def _keyed_by_parameter(node: ast.AST, function: FunctionNode) -> bool:
    """``entries[key] = value`` whose key is (made from) a parameter of ``function``."""
    parameters = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Subscript) and any(isinstance(n, ast.Name) and n.id in parameters
                                                    for n in walk(t.slice)) for t in targets)


def _calls(function: FunctionNode, callee: FunctionNode) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == callee.name
               for n in walk(function))
