"""A row changed in one function and written back in its caller.

``def spend(session, account_id, cost): row = session.get(Account, account_id); row.credits = row.credits - cost``
leaves the commit to its caller: the route that hands in its session and calls ``session.commit()`` afterwards
stores the value computed from the stale read. ``def debit(session, acct, amount): acct.balance -= amount`` is
handed the row itself, which a caller in another module loaded and commits (or saves) after the call. The helper
alone shows no write-back, and the caller shows no change; the lost update is the two together, so it is read
through what the helper is handed and reported at the change.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts
from ...analysis.handed import argument_for, parameter_names
from ...analysis.names import dotted
from ...knowledge import orm
from ...model import Related
from ...project.definitions import definition_facts
from ...project.fixed_arguments import callers_of, named_in_few_files
from .changes import Change, instance_changes, session_committed_by_block
from .loads import (
    FLASK_SESSION, Loaded, _instance_bindings, _is_sa_session, _loader_before, _session_matches, chain,
    function_nodes, later,
    module_imports_any, unwrap)
from .returned_loads import returned_row

@dataclass
class WrittenByCaller:
    """A column changed in ``function`` and written back by its caller ``caller`` (at ``write_back``)."""

    function: FunctionNode
    change: Change
    loaded: Loaded
    write_back: Related
    caller: str
    #: the function writes the row back itself (the caller only loaded it)
    by_itself: bool = False


#: Calls through which a session loads a row (``session.get(M, pk)``, ``session.scalar(select(M)...)``).
_LOADS = ("get", "scalar", "scalars", "execute", "query", "first", "one", "one_or_none", "scalar_one")


def changed_for_callers(facts: ModuleFacts) -> Iterator[WrittenByCaller]:
    """(function, change, its loader, where a caller commits) for each column a function changes from its own
    value on a row it loaded through a session it was handed, and does not write back itself, when a caller
    commits (or flushes) that session after the call."""
    candidates = {}
    for call in facts.calls_named(*_LOADS):
        function = facts.enclosing_function(call)
        # the load goes through something the function is handed (``session.get(...)`` on its parameter), or
        # a session its object holds (a repository's ``self.session.get(...)``)
        if function is not None and isinstance(call.func, ast.Attribute) and (
                (isinstance(call.func.value, ast.Name) and call.func.value.id in parameter_names(function))
                or _held_session(call.func.value)):
            candidates.setdefault(id(function), function)
    for call in facts.calls_named(*orm.FLASK_QUERY_LOADS):
        # or through the session the whole app shares (Flask-SQLAlchemy's ``Model.query...first_or_404()``),
        # which the caller commits as ``db.session.commit()``
        function = facts.enclosing_function(call)
        if function is not None and any(name == "query" for name, _ in chain(call)[1]):
            candidates.setdefault(id(function), function)
    for function in candidates.values():
        parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in orm.SA_FLUSH
               for n in function_nodes(function, facts)):
            continue  # it commits itself: the instance check reads it
        bindings = None
        for change in instance_changes(function, facts):
            if change.kind == "in place":
                continue
            if bindings is None:
                bindings = _instance_bindings(function, facts)
            loaded = _loader_before(bindings.get(change.instance, []), change.back)
            if loaded is None or loaded.framework != "sqlalchemy" or loaded.locked \
                    or (loaded.session not in parameters and loaded.session != FLASK_SESSION
                        and not loaded.session.startswith("self.")):
                continue
            commit = _caller_commit(function, loaded.session, facts)
            if commit is not None:
                yield WrittenByCaller(function, change, loaded, commit[0], commit[1])
                break  # one finding per function: its first changed column


def _caller_commit(function: FunctionNode, session: str, facts: ModuleFacts) -> Optional[Tuple[Related, str]]:
    """Where the first caller that hands in its own session commits or flushes it after the call."""
    held = session.startswith("self.")  # (the repository's own session: the unit of work around it commits)
    for call, other in callers_of(function, facts):
        caller = other.enclosing_function(call)
        handed = argument_for(call, function, session) if session != FLASK_SESSION and not held else None
        spelled = dotted(handed) if handed is not None else None
        if caller is None or (spelled is None and session != FLASK_SESSION and not held) or other.context.is_test:
            continue
        block = session_committed_by_block(spelled, call)
        if block is not None:
            return Related(other.context.path, block.lineno, block.col_offset + 1,
                           f"`{caller.name}` commits the session it handed in when this block ends"), caller.name
        for node in function_nodes(caller, other):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in orm.SA_FLUSH \
                    and not node.args and later(node, call) and (
                        dotted(unwrap(node.func.value)) == spelled if spelled is not None
                        else _is_sa_session(unwrap(node.func.value), other) if held
                        else _session_matches(FLASK_SESSION, unwrap(node.func.value))):
                how = ("the session it handed in" if spelled is not None
                       else "the session it shares with the repository" if held else "the app's session")
                return Related(other.context.path, node.lineno, node.col_offset + 1,
                               f"`{caller.name}` commits {how} here"), caller.name
    return None


def _held_session(receiver: ast.AST) -> bool:
    """``self.session`` / ``self._db``: a session the object keeps (a repository's)."""
    return isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self"


def changed_rows_handed_in(facts: ModuleFacts) -> Iterator[WrittenByCaller]:
    """(function, change, the caller's loader, where the caller writes the row back) for a column a function
    changes from its own value on a row handed in as a parameter, when a caller in another module loaded that row
    without a lock and commits its session (or saves the row) after the call. Callers in the module itself are
    read from the caller's side (``_callee_changes``)."""
    if not facts.context.cross_file:
        return
    candidates = {}
    for assign in facts.assigns:
        target = assign.target if isinstance(assign, (ast.AugAssign, ast.AnnAssign)) else (
            assign.targets[0] if len(assign.targets) == 1 else None)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            function = facts.enclosing_function(assign)
            if function is not None and target.value.id in parameter_names(function, receiver=False):
                candidates.setdefault(id(function), function)
    for function in candidates.values():
        parameters = parameter_names(function)
        for change in instance_changes(function, facts):
            if change.kind == "in place" or change.instance not in parameters:
                continue
            if not _uses_an_orm(facts):
                return  # (a row is an ORM's: a module that reaches none is handed other objects)
            found = _caller_write_back(function, change.instance, facts)
            if found is not None:
                yield WrittenByCaller(function, change, *found)
                break
            own = _own_write_back(function, change, facts)
            loader = _loaded_by_callers(function, change.instance, facts) if own is not None else None
            if loader is not None:
                yield WrittenByCaller(function, change, loader[0], own, loader[1], by_itself=True)
                break


def _uses_an_orm(facts: ModuleFacts) -> bool:
    """The module imports an ORM, or a name from a project module that does: the app's models, or the
    ``db = SQLAlchemy()`` a Flask app's modules share, defined once and imported wherever rows are changed."""
    def build(_facts: ModuleFacts) -> bool:
        if module_imports_any(facts, orm.ORM_MODULES):
            return True
        for target in set(facts.imports.aliases.values()):
            located = definition_facts(target, facts) if "." in target else None
            if located is not None and located[0] is not facts and module_imports_any(located[0], orm.ORM_MODULES):
                return True
        return False
    return facts.cached("handed_sessions:uses_an_orm", build)


#: Files that may mention a helper whose callers are read: a name many files use is a library's shared helper.
_MAX_CALLER_FILES = 8


def _caller_write_back(function: FunctionNode, parameter: str,
                       facts: ModuleFacts) -> Optional[Tuple[Loaded, Related, str]]:
    if not named_in_few_files(function, facts, _MAX_CALLER_FILES):
        return None
    for call, other in callers_of(function, facts):
        caller = other.enclosing_function(call)
        handed = argument_for(call, function, parameter)
        if caller is None or other is facts or other.context.is_test or not isinstance(handed, ast.Name):
            continue
        loaded = _loader_before(_instance_bindings(caller, other).get(handed.id, []), call)
        if loaded is None:
            # the caller had the row from a project function that loads and returns it (``find_voucher(code)``)
            returned = returned_row(handed.id, call, caller, other)
            loaded = returned[1] if returned is not None else None
        if loaded is None or loaded.locked:
            continue
        for node in function_nodes(caller, other):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, call)):
                continue
            receiver = unwrap(node.func.value)
            if (loaded.framework == "sqlalchemy" and node.func.attr in orm.SA_FLUSH and not node.args
                    and _session_matches(loaded.session, receiver)) or (
                        node.func.attr in orm.DJANGO_SAVE and dotted(receiver) == handed.id):
                return loaded, Related(other.context.path, node.lineno, node.col_offset + 1,
                                       f"`{caller.name}` loaded the row and writes it back here"), caller.name
    return None


def _own_write_back(function: FunctionNode, change: Change, facts: ModuleFacts) -> Optional[Related]:
    """``session.flush()`` / ``commit()`` on a session the function is handed, or ``row.save()``, after the change:
    the function writes the row back itself."""
    parameters = parameter_names(function)
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
                and later(node, change.back)):
            continue
        receiver = dotted(unwrap(node.func.value))
        if (node.func.attr in orm.SA_FLUSH and receiver in parameters) or (
                node.func.attr in orm.DJANGO_SAVE and receiver == change.instance):
            return Related(facts.context.path, node.lineno, node.col_offset + 1,
                           f"`{function.name}` writes the row back here")
    return None


#: How many callers that only pass the row on are followed to the one that loaded it.
_HANDING_HOPS = 2


def _loaded_by_callers(function: FunctionNode, parameter: str, facts: ModuleFacts,
                       hops: int = _HANDING_HOPS) -> Optional[Tuple[Loaded, str]]:
    """The load without a lock of the row a caller hands in as ``parameter`` (in any module), and that caller's
    name: loaded there, or handed on from its own caller's parameter (``_record(session, member, ...)``)."""
    if not named_in_few_files(function, facts, _MAX_CALLER_FILES):
        return None
    for call, other in callers_of(function, facts):
        caller = other.enclosing_function(call)
        handed = argument_for(call, function, parameter)
        if caller is None or other.context.is_test or not isinstance(handed, ast.Name):
            continue
        loaded = _loader_before(_instance_bindings(caller, other).get(handed.id, []), call)
        if loaded is not None:
            if not loaded.locked:
                return loaded, caller.name
        elif hops > 0 and handed.id in parameter_names(caller, receiver=False):
            found = _loaded_by_callers(caller, handed.id, other, hops - 1)
            if found is not None:
                return found
    return None


__all__: List[str] = ["WrittenByCaller", "changed_for_callers", "changed_rows_handed_in"]
