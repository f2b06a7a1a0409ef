"""OG610 start-up resets shared state: start-up code that every replica runs overwrites or deletes rows of
the shared database selected by their state alone (every unfinished session marked failed, every agent's
socket id cleared), as if they had been left behind by this process's previous run.

With one process that is recovery; with several, the rows belong to the replicas that are still running:
one replica that starts or restarts (a rolling update, an autoscaler, a crash loop) breaks the live work
of all the others.

What counts as evidence:

- a reset: a set-based write whose rows are picked by constants only — Django
  ``Model.objects.filter(status="running").update(...)`` / ``.delete()``, SQLAlchemy
  ``session.query(Model).filter(Model.sid != None).update(...)``, ``update(Model).where(...).values(...)``,
  raw ``UPDATE ... SET ... WHERE state = 'x'`` or ``DELETE FROM ...`` with no parameter; or a loop over such
  rows that assigns a constant to each (``for agent in Agent.query.filter(...).all(): agent.sid = None``)
  and is persisted (a commit, a save, a flush in the function);
- start-up: the function runs at every replica's start-up, as the project's start-up reach says (framework
  hooks, lifespan, app factories, ``AppConfig.ready``, a server's ``__main__`` block, callers in other
  modules on the command line).

Silent: a filter that uses any value computed at run time (this host's name, this process's id, a
parameter: the replica's own rows), an age or heartbeat threshold (``updated_at < now() - interval``: a
lease that expired), resets in request or job code, migrations, commands, scripts and tests.
"""
from __future__ import annotations

import ast
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from ..analysis.executed_sql import executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, call_name, chain_top, walk, walk_no_nested_functions
from ..knowledge import startup as known
from ..model import Diagnostic
from ..project.forwarding import forwarded
from ..project.prefilter_words import bare_loader_words
from ..project.reach import enclosing_function, runs_function
from .base import Rule
from .registry import register


# -- rows picked by their state alone ---------------------------------------------------------------------
def _is_constant(node: ast.AST) -> bool:
    """A value every replica computes alike: a literal, ``None``, an enum member (``Status.RUNNING``), a
    tuple or list of those."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant(element) for element in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand)
    if isinstance(node, ast.Attribute):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        # ``Status.RUNNING`` / ``models.Status.RUNNING``: a member of a class named in upper case.
        return isinstance(root, ast.Name) and (node.attr.isupper() or _named_as_class(node.value))
    return False


def _named_as_class(node: ast.AST) -> bool:
    """``Courier`` / ``models.Courier``: a capitalised name that is not a constant (``BASE_CONFIG``)."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return isinstance(name, str) and name[:1].isupper() and not name.isupper()


def _is_column(node: ast.AST) -> bool:
    """``Model.column`` (or ``Model.column.is_(None)``'s receiver)."""
    return isinstance(node, ast.Attribute) and _named_as_class(node.value)


def _state_condition(node: ast.AST) -> bool:
    """A condition of a filter that compares columns with constants only (``Agent.sid != None``,
    ``Run.state.in_(["queued", "running"])``, ``Run.finished_at.is_(None)``, ``and_(...)`` of those)."""
    if isinstance(node, ast.Compare):
        sides = [node.left] + list(node.comparators)
        return any(_is_column(side) for side in sides) and all(_is_column(s) or _is_constant(s) for s in sides)
    if isinstance(node, ast.BoolOp):
        return all(_state_condition(value) for value in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
        return _state_condition(node.operand)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and _is_column(func.value) and func.attr in known.COLUMN_TESTS:
            return all(_is_constant(a) for a in node.args)
        if call_name(node) in known.BOOLEAN_COMBINATORS:
            return bool(node.args) and all(_state_condition(a) for a in node.args)
    if _is_column(node):
        return True  # ``.filter(Session.active)``
    return False


def _mentions_time(node: ast.AST) -> bool:
    for child in walk(node):
        word = ""
        if isinstance(child, ast.Attribute):
            word = child.attr
        elif isinstance(child, ast.Name):
            word = child.id
        if word.lower() in known.TIME_WORDS:
            return True
    return False


def _chain(node: ast.AST) -> List[ast.Call]:
    """The calls of a method chain, outermost first: ``A.objects.filter(x).update(y)`` -> [update, filter]."""
    calls = []
    while True:
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Call):
            calls.append(node)
            node = node.func
        elif isinstance(node, ast.Attribute):
            node = node.value
        else:
            return calls


def _chain_model(node: ast.AST) -> Optional[str]:
    """The model a query chain reads: ``Model.objects...``, ``Model.query...``, ``session.query(Model)``,
    ``select(Model)`` / ``update(Model)`` / ``delete(Model)``."""
    while True:
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Call):
            if _is_builder(node) and node.args and _named_as_class(node.args[0]):
                return _class_name(node.args[0])
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr in known.MODEL_MANAGERS and _named_as_class(node.value):
                return _class_name(node.value)
            node = node.value
        else:
            return None


def _is_builder(call: ast.Call) -> bool:
    """``select(Model)`` / ``update(Model)`` / ``delete(Model)`` as functions (``sa.update``), or
    ``session.query(Model)`` as a method; not ``settings.update(OTHER)``."""
    name = call_name(call)
    if name not in known.MODEL_QUERY_BUILDERS:
        return False
    func = call.func
    if name == "query":
        return isinstance(func, ast.Attribute)
    return isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                         and not func.value.id[:1].isupper() and func.value.id not in ("self", "cls")
                                         and len(call.args) == 1)


def _class_name(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute) and not node.attr[:1].isupper():
        node = node.value
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "?")


def _picked_by_state(calls: List[ast.Call]) -> bool:
    """Every filter of the chain selects by constants only (no filter at all: every row), and none is an age
    threshold."""
    for call in calls:
        name = call_name(call)
        if name in known.ROW_FILTERS:
            if _mentions_time(call):
                return False
            for argument in call.args:
                if not _state_condition(argument):
                    return False
            for keyword in call.keywords:
                if keyword.arg is None or not _is_constant(keyword.value):
                    return False
        elif name in known.MODEL_QUERY_BUILDERS or name in known.ROWS_FETCHES or name in known.SET_WRITES:
            continue
        elif name in known.QUERY_MODIFIERS:
            continue
        else:
            return False  # a call we do not know the meaning of in the chain
    return True


# -- resets -----------------------------------------------------------------------------------------------
Reset = Tuple[ast.AST, str, str]  # (where, model or table, what it does)


def _write_verb(calls: List[ast.Call]) -> Optional[str]:
    """What a whole chain does to its rows: Django/ORM ``.update(...)`` / ``.delete()`` at its end, or a
    SQLAlchemy ``update(Model)`` / ``delete(Model)`` statement at its start; None for a read."""
    outer = calls[0]
    inner = calls[-1]
    statement = call_name(inner) in known.STATEMENT_BUILDERS and _is_builder(inner)
    if call_name(outer) in known.SET_WRITES and call_name(outer) not in known.STATEMENT_ONLY_WRITES \
            and not (statement and len(calls) == 1):
        verb = "deletes" if call_name(outer) in known.SET_DELETES else "overwrites"
    elif statement and inner.args and _named_as_class(inner.args[0]):
        verb = "deletes" if call_name(inner) in known.SET_DELETES else "overwrites"
    else:
        return None
    if verb == "deletes" and not any(call_name(c) in known.ROW_FILTERS for c in calls):
        return None  # emptying a whole table at start-up is a rebuild of what it holds, not a reset of live rows
    written = [c for c in calls if call_name(c) in known.WRITE_VALUES and not (statement and c is inner)]
    if verb == "overwrites" and not all(_writes_constants(c) for c in written):
        return None  # a value computed at start-up (a default object, a backfill), not a reset
    return verb


def _writes_constants(call: ast.Call) -> bool:
    """``.update(state="failed")``, ``.values(online=False)``, ``.update({"sid": None})``."""
    values = [k.value for k in call.keywords]
    for argument in call.args:
        if isinstance(argument, ast.Dict):
            values.extend(argument.values)
        else:
            values.append(argument)
    return bool(values) and all(v is not None and _is_constant(v) for v in values)


def _set_based_resets(facts: ModuleFacts) -> Iterator[Tuple[FunctionNode, Reset]]:
    seen: set = set()
    for name in sorted(known.SET_WRITES | known.STATEMENT_BUILDERS):
        for call in facts.calls_by_name.get(name, ()):
            top = chain_top(call)
            if id(top) in seen:
                continue
            seen.add(id(top))
            function = facts.enclosing_function(top)
            calls = _chain(top)
            verb = _write_verb(calls) if function is not None else None
            if verb is None:
                continue
            model = _chain_model(top)
            if model is None or not _picked_by_state(calls):
                continue
            yield function, (top, model, f"{verb} every `{model}` row picked by state")
    for item in executed_sql(facts):
        function = enclosing_function(item.call)
        kinds = set(item.sql.statement_types)
        if function is None or not kinds & {"UpdateStmt", "DeleteStmt"} or item.params or item.holes:
            continue
        # A value of the run in the row selection (an age threshold, this host's name) picks rows, not all of
        # them; one only in the values written (``finished_at = now()``) does not narrow the selection.
        text = item.text.lower()
        selection = " ".join(text.split()).split(" where ", 1)[-1]
        if any(word in selection for word in known.SQL_RUNTIME_WORDS):
            continue
        if " limit " in f" {selection} " or "skip locked" in selection:
            continue  # a bounded pick (a claim of the next job), not every row in that state
        table = _sql_table(item.text)
        verb = "deletes" if "DeleteStmt" in kinds else "overwrites"
        yield function, (item.call, table, f"{verb} every row of `{table}` picked by state")


def _sql_table(text: str) -> str:
    words = text.replace("\n", " ").split()
    upper = [w.upper() for w in words]
    for keyword in ("UPDATE", "FROM"):
        if keyword in upper:
            index = upper.index(keyword) + 1
            if index < len(words):
                return words[index].strip('";')
    return "?"


def _bound_values(function: FunctionNode, facts: ModuleFacts) -> Dict[str, List[ast.AST]]:
    """Values assigned to a plain name in ``function``, by name. One pass over the module's assignments
    files them all by their function, so the cost stays linear in the size of the file."""

    def by_function(_facts: ModuleFacts) -> Dict[int, Dict[str, List[ast.AST]]]:
        table: Dict[int, Dict[str, List[ast.AST]]] = {}
        for statement in facts.assigns:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                owner = facts.enclosing_function(statement)
                if owner is not None:
                    table.setdefault(id(owner), {}).setdefault(statement.targets[0].id, []).append(statement.value)
        return table

    return facts.cached("og610:bindings", by_function).get(id(function), {})


def _loop_resets(facts: ModuleFacts) -> Iterator[Tuple[FunctionNode, Reset]]:
    """``for row in <rows picked by state>: row.attr = <constant>``, persisted in the function; and, on the
    command line, a loop that hands each row a project function returns to one that writes it."""
    persisting = {id(facts.enclosing_function(call)) for name in known.PERSIST_CALLS
                  for call in facts.calls_by_name.get(name, ())}
    for loop in facts.loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.target, ast.Name):
            continue
        function = facts.enclosing_function(loop)
        if function is None:
            continue
        iterated = loop.iter
        if isinstance(iterated, ast.Name):
            values = _bound_values(function, facts).get(iterated.id, [])
            iterated = values[0] if len(values) == 1 else None
        if not isinstance(iterated, (ast.Call, ast.Await)):
            continue
        reset = _assigning_loop(loop, iterated)
        if reset is not None and (id(function) in persisting or _persists(function, facts)):
            yield function, reset
            continue
        reset = _handing_loop(loop, iterated, function, facts)
        if reset is not None:
            yield function, reset


def _assigning_loop(loop: ast.AST, rows: ast.AST) -> Optional[Reset]:
    model = _chain_model(rows)
    if model is None or not _picked_by_state(_chain(rows)):
        return None
    variable = loop.target.id
    for statement in loop.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Attribute)
                and isinstance(statement.targets[0].value, ast.Name)
                and statement.targets[0].value.id == variable and _is_constant(statement.value)):
            column = statement.targets[0].attr
            return statement, model, f"sets `{column}` on every `{model}` row picked by state"
    return None


def _handing_loop(loop: ast.AST, rows: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[Reset]:
    """``for row in repo.unfinished_rows(): repo.close(row.id)``: the rows come from a project function that
    takes nothing to narrow them and returns rows picked by state, and the loop hands each row to a project
    function that persists a change (the command line only: both live in other modules)."""
    call = rows.value if isinstance(rows, ast.Await) else rows
    if not facts.context.cross_file or not isinstance(call, ast.Call) or call.args or call.keywords:
        return None
    variable = loop.target.id
    handed = [inner for inner in walk(loop) if isinstance(inner, ast.Call) and _uses_name(inner, variable)]
    if not handed:
        return None  # (asked before resolving the rows' call: resolving reads other modules)
    from ..project.summaries import resolve

    model = None
    for target, _ in resolve(call, facts, function):
        model = _returns_rows_by_state(target)
        if model is not None:
            break
    if model is None:
        return None
    for inner in handed:
        writer = next((t for t, where in resolve(inner, facts, function) if _persists(t, where)), None)
        if writer is not None:
            return loop, model, (f"hands every `{model}` row picked by state to `{writer.name}()`, "
                                 f"which writes it")
    return None


def _returns_rows_by_state(function: FunctionNode) -> Optional[str]:
    """The model of the rows ``function`` returns, when it takes nothing that could narrow them (only
    ``self``) and its query picks them by state; otherwise None."""
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    if [n for n in names if n not in ("self", "cls")] or arguments.vararg or arguments.kwarg:
        return None
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call) and call_name(node) in known.ROW_FILTERS:
            calls = _chain(node)
            model = _chain_model(node)
            if model is not None and _write_verb(calls) is None and _picked_by_state(calls):
                return model
    return None


def _persists(function: FunctionNode, facts: Optional[ModuleFacts] = None) -> bool:
    """A commit, a save or a flush in the function (also behind a small helper that returns it)."""
    for n in walk_no_nested_functions(function):
        if isinstance(n, ast.Call) and call_name(n) in known.PERSIST_CALLS:
            return True
        through = forwarded(n, facts) if facts is not None and isinstance(n, ast.Call) else None
        if through is not None and call_name(through.call) in known.PERSIST_CALLS:
            return True
    return False


def _uses_name(call: ast.Call, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name
               for argument in list(call.args) + [k.value for k in call.keywords] for n in walk(argument))


@register
class StartupResetsSharedState(Rule):
    code = "OG610"
    name = "startup-resets-shared-state"
    summary = ("start-up code resets rows of the shared database picked by their state alone: a replica that "
               "starts breaks the live work of the others")
    triggers = known.OG610_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A loop over the rows a project function picks with a filter and hands back, taking nothing that could
        narrow them (``for run in repo.unfinished(): repo.fail(run.id)``): its module may spell no word of the
        query or of the write."""
        return bare_loader_words(config)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        by_function: Dict[int, Tuple[FunctionNode, List[Reset]]] = {}
        for function, reset in list(_set_based_resets(facts)) + list(_loop_resets(facts)):
            by_function.setdefault(id(function), (function, []))[1].append(reset)
        for function, resets in by_function.values():
            answer = runs_function(function, facts, startup_only=True, through_migration_code=False)
            if not answer.every_replica:
                continue
            # The way from the entry point is in the related places; the message names the reason.
            reason = answer.reason
            for node, model, what in resets:
                yield self.finding(
                    node,
                    f"every replica's start-up code ({reason}) {what}, so a restarting replica resets rows the "
                    "others still own.",
                    "A replica that starts or restarts resets the rows that the other running replicas are still "
                    "working on. Reset only this replica's own rows (store the owner — pod name, host or a per-boot id — on "
                    "each row and filter by it), or expire rows whose heartbeat or lease is older than a timeout "
                    "instead of resetting them at start-up, or run the recovery once from a single process (a "
                    "release step, a leader-elected job).",
                    related=answer.via,
                )
