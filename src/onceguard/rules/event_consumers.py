"""OG602: a client that receives a per-connection event stream, started in every replica's start-up.

A Discord gateway bot started from a FastAPI lifespan runs once per replica: each replica's session
gets every event and answers it.  Telegram long polling started there makes the replicas' pollers
cancel each other.  Such a client belongs in one process of its own, or behind a webhook that the
load balancer delivers once.  Reported only where start-up code (lifespan, startup hooks, Django
``ready()``) starts it; a bot script's own ``client.run(token)`` is a process of its own and is left alone.
"""
from __future__ import annotations

import ast
from typing import Iterator, Optional, Tuple

from ..project import index as project
from ..analysis.executed_sql import bound_value, module_statements
from ..analysis.facts import ModuleFacts, ancestors, walk, walk_no_nested_functions
from ..knowledge import event_consumers as known
from ..knowledge.event_consumers import ConsumerKind
from ..model import Diagnostic, Related
from ..analysis.names import dotted
from .registry import register
from ..project.forwarding import callee_through, forwarded
from ..project.reach import runs
from ..project.startup import StartupMap
from .base import Rule
from .channel_subscribers import acting_outside, every_replica_subscribes, shown_at, subscriptions

_MODULE_LEVEL = "module level"
_START_METHODS = sorted({m for kind in known.CONSUMER_CONSTRUCTORS.values() for m in kind.start_methods})


def _constructed(call: ast.AST, facts: ModuleFacts, depth: int = 4) -> Optional[ConsumerKind]:
    """What a constructor call (or a builder chain ending in ``.build()``) makes, when it is a consumer."""
    while isinstance(call, ast.Await):
        call = call.value
    while isinstance(call, ast.Call) and depth > 0:
        through = forwarded(call, facts)  # a constructor behind a small helper that returns it
        if through is not None:
            call, facts = through.call, through.facts
        callee = facts.callee(call) or ""
        if callee in known.CONSUMER_CONSTRUCTORS:
            return known.CONSUMER_CONSTRUCTORS[callee]
        subclass = _local_subclass(call.func, facts)
        if subclass is not None:
            return subclass
        made = _returned_client(call, facts)
        if made is not None:
            # ``build_application()`` that makes the client, registers its handlers and returns it
            return _constructed(made[0], made[1], depth - 1)
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        call = func.value  # ``ApplicationBuilder().token(t).build()``: down to the builder
        depth -= 1
    if isinstance(call, (ast.Name, ast.Attribute)):
        # ``Application.builder().token(t).build()``: a builder the client's class hands out
        return known.CONSUMER_CONSTRUCTORS.get(facts.qualify(call) or "")
    return None


def _returned_client(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """What a function of the project returns when its one ``return`` gives a name bound once in it (or a call):
    the value it was bound to, in that function's module."""
    if not isinstance(call.func, (ast.Name, ast.Attribute)):
        return None
    function, where = None, facts
    if isinstance(call.func, ast.Name) and not facts.imports.is_imported(call.func.id):
        function = next((s for s in facts.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and s.name == call.func.id), None)
    elif facts.context.cross_file:
        qualified = facts.qualify(call.func) or ""
        found = project.find_function(qualified, facts.config, project.roots_for(facts)) if "." in qualified else None
        if found is not None:
            function, where = found
    if function is None:
        return None
    returns = [n.value for n in walk_no_nested_functions(function) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        return None
    value = returns[0]
    if isinstance(value, ast.Name):
        value = bound_value(value, where)
    return (value, where) if isinstance(value, (ast.Call, ast.Await)) else None


def _local_subclass(func: ast.AST, facts: ModuleFacts) -> Optional[ConsumerKind]:
    if not isinstance(func, ast.Name):
        return None
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name == func.id:
            for base in statement.bases:
                qualified = facts.qualify(base) or ""
                if qualified in known.CONSUMER_CONSTRUCTORS:
                    return known.CONSUMER_CONSTRUCTORS[qualified]
    return None


def consumer_of(receiver: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ConsumerKind, str]]:
    """The consumer a receiver holds and where it was made (a local binding or a project module's name)."""
    found = _consumer(receiver, facts)
    return (found[0], found[1]) if found else None


def _consumer(receiver: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ConsumerKind, str, Optional[Related]]]:
    """``consumer_of``, and the place in another module where the client is made when it is made there."""
    if isinstance(receiver, ast.Call):
        kind = _constructed(receiver, facts)
        return (kind, "here", None) if kind else None
    if isinstance(receiver, ast.Name):
        value = bound_value(receiver, facts) or _optional_module_binding(receiver.id, facts)
        if value is not None:
            kind = _constructed(value, facts)
            return (kind, f"line {getattr(value, 'lineno', '?')}", None) if kind else None
    if not isinstance(receiver, (ast.Name, ast.Attribute)) or not facts.context.cross_file:
        return None
    head = (dotted(receiver) or "").split(".")[0]
    qualified = facts.qualify(receiver)
    if not qualified or "." not in qualified or not facts.imports.is_imported(head):
        return None
    found = project.find_assignment(qualified, facts.config, project.roots_for(facts))
    if found is None:
        return None
    value, foreign = found
    kind = _constructed(value, foreign)
    if not kind:
        return None
    made = Related(foreign.context.path, getattr(value, "lineno", 1), getattr(value, "col_offset", 0) + 1,
                   f"`{qualified.rsplit('.', 1)[-1]}` is made here ({kind.service} client)")
    return kind, f"`{qualified}`", made


def _optional_module_binding(name: str, facts: ModuleFacts) -> Optional[ast.AST]:
    """The client a module-level name holds when it is bound to ``None`` and, under a condition, to one
    client (``bot = None`` / ``if TOKEN: bot = TeleBot(TOKEN)``): the placeholder is no second value."""
    values = []
    for statement in module_statements(facts.tree):
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets):
            values.append(statement.value)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == name and statement.value is not None:
            values.append(statement.value)
    real = [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)]
    return real[0] if len(real) == 1 and len(values) > 1 else None


# -- pollers and consumers that must be single: a function that does the work, started from start-up ----------
def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" or noun.startswith("IMAP") else "a ") + noun


def _single_consumer(function: ast.AST, facts: ModuleFacts) -> Optional[Tuple[ConsumerKind, ast.AST]]:
    """What ``function`` consumes that only one process may: an IMAP mailbox it acts on, or a queue it
    consumes with ``exclusive=True``; with the node that shows it."""
    if id(function) not in _consuming_functions(facts):
        return None  # no mailbox or exclusive-consume call anywhere in it: nothing to walk
    calls = [node for node in walk(function) if isinstance(node, ast.Call)]
    acts = False
    for node in calls:
        if isinstance(node.func, ast.Attribute):
            if node.func.attr in known.IMAP_MAILBOX_METHODS:
                acts = True
            if node.func.attr in known.EXCLUSIVE_CONSUME_METHODS and any(
                    k.arg == known.EXCLUSIVE_KEYWORD and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in node.keywords):
                return known.EXCLUSIVE_CONSUMER, node
    if not acts:
        return None
    # Only now what each call makes: seeing through forwarding helpers reads other modules.
    opened = next((node for node in calls if callee_through(node, facts) in known.IMAP_CONSTRUCTORS), None)
    if opened is not None:
        return known.IMAP_POLLER, opened
    return None


def _consuming_functions(facts: ModuleFacts) -> set:
    """The functions (by id) that hold, in their body or a function nested in it, a call of a mailbox or an
    exclusive-consume method: the only ones ``_single_consumer`` can find something in."""

    def build(_facts: ModuleFacts) -> set:
        found = set()
        methods = sorted(known.IMAP_MAILBOX_METHODS | known.EXCLUSIVE_CONSUME_METHODS)
        for call in facts.calls_named(*methods):
            if isinstance(call.func, ast.Attribute):
                found.update(id(above) for above in ancestors(call)
                             if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        return found

    return facts.cached("event_consumers:consuming-functions", build)


def _started_functions(facts: ModuleFacts, startup: StartupMap) -> Iterator[Tuple[ast.AST, ast.AST, ModuleFacts, Optional[Related]]]:
    """(reference, function, its module, where it is defined when elsewhere) for each function that start-up
    code of this module calls or hands to a thread, a task or a scheduler."""
    local = {f.name: f for f in facts.functions}
    for node in facts.calls:
        reason = startup.reason_for_node(node)
        if reason is None or reason.startswith(_MODULE_LEVEL):
            continue
        candidates = [node.func] + list(node.args) + [k.value for k in node.keywords]
        for candidate in candidates:
            reference = candidate.func if isinstance(candidate, ast.Call) and candidate is not node.func else candidate
            found = _function_for(reference, facts, local)
            if found is not None:
                yield (node, *found)


def _function_for(reference: ast.AST, facts: ModuleFacts, local) -> Optional[Tuple[ast.AST, ModuleFacts, Optional[Related]]]:
    if isinstance(reference, ast.Name) and reference.id in local:
        return local[reference.id], facts, None
    method = facts.module_method(reference)  # ``service.poll`` on a module-level instance of a class here
    if method is not None:
        return method, facts, None
    if isinstance(reference, ast.Attribute) and isinstance(reference.value, ast.Name) and reference.value.id == "self":
        cls_node = facts.enclosing_class(reference)
        if cls_node is not None:
            for statement in cls_node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == reference.attr:
                    return statement, facts, None
        return None
    if not facts.context.cross_file or not isinstance(reference, (ast.Name, ast.Attribute)):
        return None
    head = (dotted(reference) or "").split(".")[0]
    qualified = facts.qualify(reference) or ""
    if "." not in qualified or not facts.imports.is_imported(head):
        return None
    found = project.find_function(qualified, facts.config, project.roots_for(facts))
    if found is None:
        return None
    function, foreign = found
    return function, foreign, Related(foreign.context.path, function.lineno, function.col_offset + 1,
                                      f"`{function.name}()` is defined here")


@register
class EventConsumerPerReplica(Rule):
    code = "OG602"
    name = "event-consumer-per-replica"
    summary = "a bot or event-stream client started in every replica's start-up: each replica consumes the same events"
    triggers = known.TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        if facts.context.is_test or facts.context.is_migration:
            return
        startup: Optional[StartupMap] = None
        for start in _start_references(facts):
            found = _consumer(start.value, facts)
            if found is None:
                continue
            kind, made, elsewhere = found
            if start.attr not in kind.start_methods:
                continue
            startup = startup or StartupMap.of_module(facts)
            reason = startup.reason_for_node(start)
            via: list = []
            if reason is None and facts.context.cross_file:
                # started by a function that another module's start-up calls or hands to a thread
                where = runs(start, facts, startup_only=True)
                if where.every_replica and where.calls:
                    reason, via = where.reason, [*where.entry, *where.calls]
            if reason is None or reason.startswith(_MODULE_LEVEL):
                continue  # a bot script's own process, or code no start-up reaches in view
            yield self.finding(
                start,
                f"`{dotted(start) or start.attr}()` starts a {kind.service} client"
                f"{'' if made == 'here' else f' (made at {made})'} in start-up code ({reason}), so {kind.hazard}.",
                _explained(kind),
                related=via + ([elsewhere] if elsewhere is not None else []),
            )
        yield from self._single_consumers(facts, startup)
        yield from self._subscribers(facts)

    def _subscribers(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        """Subscriptions every replica holds to a channel each subscriber hears in full, acting outside the
        process on each message (``rules/channel_subscribers``)."""
        for subscription in subscriptions(facts):
            evidence = acting_outside(subscription)
            if evidence is None:
                continue
            reason = every_replica_subscribes(subscription)
            if reason is None:
                continue
            effect = evidence.call
            yield self.finding(
                shown_at(subscription),
                f"Every replica subscribes here ({subscription.what}, {reason}) and each hears every message, so "
                f"{known.SUBSCRIBER_HAZARD}.",
                f"The work done per message acts outside the process (`{dotted(getattr(effect, 'func', effect)) or 'a call'}"
                f"(...)`, line {getattr(effect, 'lineno', '?')}), and each replica does it. " + known.SUBSCRIBER_INSTEAD,
                related=[Related(evidence.path, getattr(effect, "lineno", 1), getattr(effect, "col_offset", 0) + 1,
                                 "what each replica does for every message")],
            )

    def _single_consumers(self, facts: ModuleFacts, startup: Optional[StartupMap]) -> Iterator[Diagnostic]:
        """Mail pollers and exclusive consumers that start-up code runs or starts."""
        reported = set()
        for function in facts.functions:
            found = _single_consumer(function, facts)
            if found is None:
                continue
            startup = startup or StartupMap.of_module(facts)
            reason = startup.reason(function)
            if id(function) in startup.handed:
                continue  # handed to a thread or a task by start-up code: reported below, where it is started
            if reason is not None and id(function) not in reported:
                kind, node = found
                reported.add(id(function))
                yield self.finding(
                    node,
                    f"`{function.name}()` runs {_a(kind.service)} in start-up code ({reason}), so {kind.hazard}.",
                    _explained(kind),
                )
        startup = startup or StartupMap.of_module(facts)
        for reference, function, where, elsewhere in _started_functions(facts, startup):
            if id(function) in reported:
                continue
            found = _single_consumer(function, where)
            if found is None:
                continue
            reason = startup.reason_for_node(reference) or ""
            kind, _ = found
            reported.add(id(function))
            yield self.finding(
                reference,
                f"Start-up code ({reason}) starts `{function.name}()`, {_a(kind.service)}, so {kind.hazard}.",
                _explained(kind),
                related=[elsewhere] if elsewhere is not None else (),
            )


def _explained(kind: known.ConsumerKind) -> str:
    """The help: every replica runs one, what the service does with that, then what to do instead."""
    return f"Every replica runs one, and {kind.why}. {kind.instead}"


def _start_references(facts: ModuleFacts) -> Iterator[ast.Attribute]:
    """``client.start(token)`` and ``Thread(target=client.run, args=(token,))``: the ``client.start`` part."""
    for call in facts.calls_named(*_START_METHODS):
        if isinstance(call.func, ast.Attribute):
            yield call.func
    # Only a module that passes such a method on needs the walk (kept for its breadth-first order).
    if not any(isinstance(argument, ast.Attribute) and argument.attr in _START_METHODS
               for node in facts.calls for argument in list(node.args) + [k.value for k in node.keywords]):
        return
    for node in walk(facts.tree):
        if isinstance(node, ast.Call):
            arguments = list(node.args) + [k.value for k in node.keywords]
            for argument in arguments:
                if isinstance(argument, ast.Attribute) and argument.attr in _START_METHODS:
                    yield argument
