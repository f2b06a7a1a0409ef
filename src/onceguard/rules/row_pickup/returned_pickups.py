"""Rows another function of the project picks by their state and hands back: a repository's loader, a
method of a repository made on the spot, picked where it is called (``selection._pickups`` asks here)."""
import ast
from typing import List, Optional, Set

from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.handed import argument_for, positional_parameters
from ...analysis.names import dotted
from ...model import Related
from ...project.claim_syntax import is_log_call
from ..data_races import function_nodes, names_in, target_names, unwrap
from ..data_races.returned_loads import instance_session
from .moved_rows import helper_writes
from .selection import Pickup, _contains, _functions_writing_rows, _local_pickups, _rows_names


def returned_pickups(function: FunctionNode, facts: ModuleFacts) -> List[Pickup]:
    """Rows another function of the project picks by their state and returns (a repository's
    ``due_invoices(session)``), picked where it is called: the call is the pickup, the names its result is
    bound to hold the rows, and the session is what the caller hands in for the callee's session."""
    only_loaders = marks_through_helpers = False
    if id(function) not in _functions_writing_rows(facts):
        from .handed_rows import hands_rows_on

        # It writes no rows itself: only rows it takes from a loader of the project and hands on may move, or
        # rows it loops over and marks through a helper of the project (``repo.mark_sent(row.id)``).
        if id(function) in _functions_calling_loaders(facts) and hands_rows_on(function):
            only_loaders = True
        else:
            # (whether a helper marks them is asked once a pickup is found: following every call costs more)
            sources = _row_sources(function, facts)
            if not sources:
                return []
            marks_through_helpers = True
    from ...project.summaries import resolve

    found: List[Pickup] = []
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.Call):
            continue
        statement = facts.statement_of(node)
        if isinstance(statement, ast.Assign):
            bound = statement.value
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            bound = statement.iter
        else:
            continue
        if unwrap(bound) is not node:
            continue
        if only_loaders and _called_name(node) not in _loader_names(facts):
            continue
        if marks_through_helpers and id(node) not in sources:
            continue
        for target, target_facts in resolve(node, facts, function, by_name=False):
            picked = next((p for p in _local_pickups(target, target_facts) if _returns_rows(p, target)), None)
            if picked is not None:
                session = _handed_session(picked.session, target, node, target_facts)
                if session is not None and session.startswith("self.") and isinstance(node.func, ast.Attribute) \
                        and not isinstance(node.func.value, ast.Call):
                    # ``uow.outbox.next_pending(n)``: a repository a unit of work made with the session it holds
                    session = instance_session(session[len("self."):], node, target, target_facts, function,
                                               facts) or session
                where = Related(target_facts.context.path, picked.at.lineno, picked.at.col_offset + 1,
                                f"`{target.name}` selects the rows by `{picked.column}` and returns them")
                found.append(Pickup(picked.framework, node, picked.model, picked.column, _rows_names(node, facts),
                                    session, where, loader=(target, target_facts)))
                break
    if found and marks_through_helpers and not helper_writes(function, facts, function):
        return []
    return found


def _row_sources(function: FunctionNode, facts: ModuleFacts) -> Set[int]:
    """The calls whose result a loop of ``function`` runs over (the call itself, or the one a name it iterates is
    bound to), when the loop hands each row, or a field of it, to a call (``repo.mark_sent(conn, row.id)``): it
    may mark the rows it took."""
    if facts.nodes and id(function) not in _functions_with_loops(facts):
        return set()
    bound = {target.id: unwrap(node.value) for node in function_nodes(function, facts) if isinstance(node, ast.Assign)
             and isinstance(unwrap(node.value), ast.Call) for target in node.targets if isinstance(target, ast.Name)}
    sources: Set[int] = set()
    for loop in function_nodes(function, facts):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        source = unwrap(loop.iter) if isinstance(unwrap(loop.iter), ast.Call) else (
            bound.get(loop.iter.id) if isinstance(loop.iter, ast.Name) else None)
        if source is None:
            continue
        rows = set(target_names(loop.target))
        if any(isinstance(call, ast.Call) and not is_log_call(call)
               and any(rows & names_in(argument) for argument in [*call.args, *(k.value for k in call.keywords)])
               for statement in loop.body for call in walk(statement)):
            sources.add(id(source))
    return sources


def _functions_with_loops(facts: ModuleFacts) -> Set[int]:
    """The functions of the module with a ``for`` loop of their own (one pass over the module's nodes: most
    functions have none, and looking for their loops one function at a time walks each of them)."""
    def build(_facts: ModuleFacts) -> Set[int]:
        around = facts.functions_around_nodes()
        return {id(around[index]) for index, node in enumerate(facts.nodes)
                if type(node) in (ast.For, ast.AsyncFor) and around[index] is not None}

    return facts.cached("row_pickup:functions-with-loops", build)


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _loader_names(facts: ModuleFacts) -> Set[str]:
    """The names of the project's defs that may load rows by their state (``loader_words``)."""
    from ...project.prefilter_words import loader_words

    def build(_facts: ModuleFacts) -> Set[str]:
        if not facts.context.cross_file:
            # (the one file read alone: its own defs that hand back rows they pick by state)
            return {function.name for function in facts.functions if facts.enclosing_function(function) is None
                    and any(_returns_rows(pickup, function) for pickup in _local_pickups(function, facts))}
        return {words[0][:-1].decode() for words in loader_words(facts.config)}

    return facts.cached("row_pickup:loader-names", build)


def _functions_calling_loaders(facts: ModuleFacts) -> Set[int]:
    """Functions of the module that call a loader of the project by its name."""
    def build(_facts: ModuleFacts) -> Set[int]:
        found: Set[int] = set()
        for name in _loader_names(facts) & facts.calls_by_name.keys():
            for call in facts.calls_by_name[name]:
                function = facts.enclosing_function(call)
                if function is not None:
                    found.add(id(function))
        return found

    return facts.cached("row_pickup:calling-loaders", build)


def _returns_rows(pickup: Pickup, function: FunctionNode) -> bool:
    """``function`` hands back what the pickup selected: the selection itself, or a name holding it."""
    for node in walk(function):
        if isinstance(node, ast.Return) and node.value is not None and (
                _contains(node.value, pickup.node) or names_in(node.value) & pickup.rows):
            return True
    return False


def _handed_session(session: Optional[str], callee: FunctionNode, call: ast.Call,
                    callee_facts: Optional[ModuleFacts] = None) -> Optional[str]:
    """The caller's spelling of the session the callee selected through: the argument given for that
    parameter (``due_invoices(db)`` for ``def due_invoices(session)``), the argument a repository made on the
    spot was given for the attribute (``Repo(db).due()`` where ``__init__`` sets ``self.db = db``), else the
    callee's own name for it."""
    if session is not None and session.startswith("self.") and callee_facts is not None:
        made = call.func.value if isinstance(call.func, ast.Attribute) else None
        cls = callee_facts.enclosing_class(callee)
        if isinstance(made, ast.Call) and cls is not None:
            init = next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and s.name == "__init__"), None)
            for node in walk(init) if init is not None else ():
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and any(
                        dotted(target) == session for target in node.targets):
                    given = argument_for(made, init, node.value.id)
                    return dotted(given) if given is not None else session
        return session
    if session is None or session not in {*positional_parameters(callee), *(a.arg for a in callee.args.kwonlyargs)}:
        return session
    given = argument_for(call, callee, session)
    return dotted(given) if given is not None else None
