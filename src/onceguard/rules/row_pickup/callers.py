"""Whether a function runs only after a claim or a serialising lock its callers took."""

import ast

from ...project import index as project
from ...project.claims import ClaimAnalyzer
from ...project.definitions import called_def
from ...project.scheduled.discovery import _resolver  # (a call to a function imported from elsewhere, CLI only)
from ...analysis.handed import positional_parameters
from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, call_name, walk, walk_no_nested_functions
from ...knowledge import orm
from ..data_races import function_nodes, later, target_names, unwrap
from .selection import _contains


# -- runs only after a claim its callers took -----------------------------------------------------------------
def runs_claimed(function: FunctionNode, facts: ModuleFacts, depth: int = 0) -> bool:
    """``function`` leads with a claim, or every call of it in its module comes after a claim the caller
    tested (a lease taken and checked: ``if not held: return``), or from callers that themselves run
    claimed.  A function nobody in its module calls is not claimed here (its callers are unknown)."""
    key = f"row_pickup:claimed:{id(function)}"
    cache = facts.cached("row_pickup:claimed", lambda _f: {})
    if key in cache:
        return cache[key]
    cache[key] = False  # recursion guard
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    result = analyzer.lead(function).claimed or _scheduled_once(function, facts)
    if not result and depth < 3:
        callers = [(c, facts) for c in facts.calls_named(function.name) if _calls_function(c, function, facts)]
        if facts.context.cross_file and facts.enclosing_function(function) is None:
            # (the task of another module that calls the service only past its claim)
            from ...project.fixed_arguments import callers_of

            seen = {id(call) for call, _ in callers}
            callers += [(c, other) for c, other in callers_of(function, facts)
                        if other is not facts and id(c) not in seen and not other.context.is_test]
        handings = _handings(function, facts)
        if handings:
            # ``run_exclusive("charge", _charge_usage)``: a runner of the project that calls what it is handed past
            # its own claim (``if not locked: return`` then ``body(session)``) runs it on one replica at a time
            callers += handings
        result = bool(callers) and None not in callers
        for call, where in (c for c in callers if c is not None):
            caller = where.enclosing_function(call)
            claims = analyzer if where is facts else ClaimAnalyzer.of_module(where, _resolver)
            if caller is None or caller is function or not (
                    claims.dominating_claim(call) is not None  # (the branch a won claim takes)
                    or _claim_tested_before(call, caller, where, claims) or _locked_before(call, caller, where)
                    or runs_claimed(caller, where, depth + 1)):
                result = False
                break
    cache[key] = result
    return result


def _handings(function: FunctionNode, facts: ModuleFacts) -> list:
    """(the call of the parameter, the runner's module) for each place the project hands ``function`` on by name to
    a runner of the project (``run_exclusive("charge", _charge_usage)``, ``self._charge`` too), one per call the
    runner makes of that parameter; a None where the runner or its call of the parameter is not seen.  Empty when
    the function is never handed on."""
    found: list = []
    for reference, where in _references(function, facts):
        above = getattr(reference, "_og_parent", None)
        if isinstance(above, ast.keyword):
            handing, slot = getattr(above, "_og_parent", None), above.arg
        elif isinstance(above, ast.Call) and reference in above.args:
            handing, slot = above, above.args.index(reference)
        else:
            continue  # called, or kept: the callers' question, asked as before
        runner = called_def(handing, where) if isinstance(handing, ast.Call) else None
        if runner is None and isinstance(handing, ast.Call) and isinstance(slot, int):
            # ``schedule.every(5).minutes.do(leased, "name", ttl, work)``: the scheduler calls the project's runner
            # it is handed first with the arguments after it
            runner, slot = _forwarded_runner(handing, slot, where)
        if runner is None:
            found.append(None)
            continue
        target, home = runner
        parameters = positional_parameters(target)
        parameter = slot if isinstance(slot, str) else (parameters[slot] if slot < len(parameters) else None)
        calls = _parameter_calls(target, parameter, home) if parameter else []
        found.extend(calls or [None])
    return found


def _forwarded_runner(handing: ast.Call, slot: int, facts: ModuleFacts):
    """(the project runner a library call hands the arguments after it to, and the position ``slot`` takes among
    the runner's parameters), or (None, slot): ``.do(runner, *args)`` of the schedule library."""
    from ...knowledge import schedulers as schedulers_known

    if not (isinstance(handing.func, ast.Attribute) and handing.func.attr == schedulers_known.SCHEDULE_DO
            and handing.args and 0 < slot and isinstance(handing.args[0], (ast.Name, ast.Attribute))
            and any(isinstance(n, ast.Call) and call_name(n) == schedulers_known.SCHEDULE_ENTRY
                    for n in walk(handing.func.value))):
        return None, slot  # (``.do`` at the end of an ``every(...)`` chain only)
    probe = ast.copy_location(ast.Call(func=handing.args[0], args=[], keywords=[]), handing)
    setattr(probe, "_og_parent", handing)
    return called_def(probe, facts), slot - 1


def _parameter_calls(runner: FunctionNode, parameter: str, home: ModuleFacts, depth: int = 0) -> list:
    """(call, module) for each call of ``parameter`` in ``runner``, or -- passed on by position to a function of
    its module (``_quietly(work, *args)``) -- that function's calls of the parameter it lands in."""
    found = []
    for node in walk_no_nested_functions(runner):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == parameter:
            found.append((node, home))
            continue
        passed = [index for index, arg in enumerate(node.args) if isinstance(arg, ast.Name) and arg.id == parameter]
        if not passed or depth >= 1:
            continue
        helper = called_def(node, home)
        if helper is not None and helper[0] is not runner:
            names = positional_parameters(helper[0])
            found.extend(call for index in passed if index < len(names)
                         for call in _parameter_calls(helper[0], names[index], helper[1], depth + 1))
    return found


#: Other modules read for the places a function is handed on from.
_MAX_HANDING_FILES = 8


def _references(function: FunctionNode, facts: ModuleFacts) -> list:
    """(node, module) for each read of ``function`` by name: in its module (its name, ``self.<name>`` in its class,
    ``<instance>.<name>`` of a module-level instance) and, reading the project, in the modules that import it."""
    from ...project.bindings import own_module_names

    name, owner = function.name, facts.enclosing_class(function)
    found = []
    for node in facts.nodes:
        if type(node) is ast.Name and node.id == name and type(node.ctx) is ast.Load and owner is None:
            found.append((node, facts))
        elif type(node) is ast.Attribute and node.attr == name and type(node.ctx) is ast.Load and owner is not None \
                and ((isinstance(node.value, ast.Name) and node.value.id == "self" and facts.enclosing_class(node)
                      is owner) or facts.module_method(node) is function):
            found.append((node, facts))
    if owner is None and facts.context.cross_file and facts.enclosing_function(function) is None:
        wanted = {f"{module}.{name}" for module in own_module_names(facts)}
        for path in project.files_mentioning(name, project.search_root(facts))[:_MAX_HANDING_FILES]:
            other = project.module_facts(path, facts.config) if path != facts.context.path else None
            if other is None or other.context.is_test:
                continue
            local = {alias for alias, target in other.imports.aliases.items() if target in wanted}
            found.extend((node, other) for node in other.nodes if type(node) is ast.Name and node.id in local
                         and type(node.ctx) is ast.Load)
    return found


#: SQL that blocks until this session or transaction holds a lock that serialises whole operations (an
#: advisory lock on the entity, a table lock).  A row lock taken by a helper guards that helper's rows only.
_BLOCKING_LOCK_SQL = ("PG_ADVISORY_XACT_LOCK(", "PG_ADVISORY_LOCK(", "LOCK TABLE")


def _locked_before(call: ast.AST, caller: FunctionNode, facts: ModuleFacts) -> bool:
    """``caller`` takes a lock before ``call``: directly (``select_for_update``, ``pg_advisory_xact_lock``) or
    in a helper it calls first (``self._create_locks()`` whose body, or a function it calls, locks)."""
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.Expr) and later(call, node) and not _contains(node, call)):
            continue
        lock = unwrap(node.value)  # a call made for its effect: ``self._create_locks()``, ``lock_objects(...)``
        if isinstance(lock, ast.Call) and _still_held_at(lock, call, caller) and _call_locks(lock, analyzer, 1):
            return True
    return False


def _still_held_at(lock: ast.AST, call: ast.AST, caller: FunctionNode) -> bool:
    """A lock taken inside a ``with`` block (a transaction, a connection) ends with it: ``call`` must be in
    the same block."""
    for above in ancestors(lock):
        if above is caller:
            return True
        if isinstance(above, (ast.With, ast.AsyncWith)) and not _contains(above, call) \
                and not (_cursor_block(above) and _session_lock_sql(lock)):
            return False
    return True


def _cursor_block(block: ast.AST) -> bool:
    """``with conn.cursor() as cur:``: closing a cursor does not end the database session."""
    return all(isinstance(item.context_expr, ast.Call) and call_name(item.context_expr) == "cursor"
               for item in block.items)  # type: ignore[attr-defined]


def _session_lock_sql(lock: ast.AST) -> bool:
    """The call sends a session-level ``pg_advisory_lock`` written out: held until unlocked, whatever block ends."""
    texts = [n.value.upper() for n in walk(lock) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any("PG_ADVISORY_LOCK(" in text for text in texts)


def _call_locks(call: ast.Call, analyzer: ClaimAnalyzer, depth: int) -> bool:
    if call_name(call) in (orm.DJANGO_ROW_LOCK, orm.SA_ROW_LOCK):
        return True
    if any(isinstance(a, ast.Constant) and isinstance(a.value, str) and _locking_sql(a.value)
           for a in walk(call)):
        return True
    if depth >= 3:
        return False
    found = analyzer._helper_target(call)
    if found is None:
        return False
    target, foreign = found
    return _function_takes_lock(target, foreign, depth + 1)


def _function_takes_lock(function: FunctionNode, analyzer: ClaimAnalyzer, depth: int) -> bool:
    cache = analyzer.facts.cached("row_pickup:takes_lock", lambda _f: {})
    if id(function) in cache:
        return cache[id(function)]
    cache[id(function)] = False
    result = any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _locking_sql(n.value)
                 for n in walk_no_nested_functions(function)) or any(
        isinstance(n, ast.Call) and _call_locks(n, analyzer, depth) for n in walk_no_nested_functions(function))
    cache[id(function)] = result
    return result


def _locking_sql(text: str) -> bool:
    upper = text.upper()
    return any(marker in upper for marker in _BLOCKING_LOCK_SQL)


def _calls_function(call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == function.name
    if isinstance(func, ast.Attribute) and facts.module_method(func) is function:
        return True  # ``service.run()`` on a module-level instance of the module's class
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")


def _claim_tested_before(call: ast.Call, caller: FunctionNode, facts: ModuleFacts, analyzer: ClaimAnalyzer) -> bool:
    """An ``if`` before ``call`` in ``caller`` that leaves when a claim was not obtained."""
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.If) and later(call, node)) or _contains(node, call):
            continue
        if not node.body or not isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            continue
        if analyzer.failed_branch(node) is not None:
            return True
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) else None
        if isinstance(test, ast.Name) and _bound_to_claim(test.id, node, caller, facts, analyzer):
            return True
    return False


def _bound_to_claim(name: str, before: ast.AST, caller: FunctionNode, facts: ModuleFacts,
                    analyzer: ClaimAnalyzer) -> bool:
    """``name = [await] helper(...)`` where the helper returns whether its conditional write won
    (``return result.rowcount == 1``): a lease taken by row count."""
    for node in function_nodes(caller, facts):
        if not (isinstance(node, ast.Assign) and later(before, node) and name in
                [n for t in node.targets for n in target_names(t)]):
            continue
        value = unwrap(node.value)
        if not isinstance(value, ast.Call):
            continue
        target = analyzer._helper_target(value)
        if target is not None and _returns_row_count(target[0]):
            return True
    return False


def _returns_row_count(function: FunctionNode) -> bool:
    for node in walk(function):
        if isinstance(node, ast.Return) and node.value is not None and any(
                isinstance(n, ast.Attribute) and n.attr == "rowcount" for n in walk(node.value)):
            return True
    return False


def _scheduled_once(function: FunctionNode, facts: ModuleFacts) -> bool:
    """A scheduled job the deployment runs once per tick (one scheduling process): one run at a time, as a
    claimed one is; asked of the function and, through ``runs_claimed``, of the callers of a helper."""
    from ...project.scheduled.discovery import scheduled_once

    return scheduled_once(function, facts)
