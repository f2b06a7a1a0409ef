"""Subscriptions every replica holds to a channel that gives each subscriber every message, whose handling of a
message acts outside the process (OG602's second half).

A Redis pub/sub subscriber (``async for message in pubsub.listen()``), a Redis Stream read with ``XREAD`` (no
consumer group), a Postgres ``LISTEN`` callback (asyncpg ``add_listener``), a NATS subscription without a queue
group, and a Kafka consumer whose group is its own replica's (no ``group_id``, or one made of the host's name or
a fresh id), and a RabbitMQ queue each replica declares for itself (``exclusive=True``, or server-named; see
``own_queues``) each receive every message.  Started by every replica (start-up code, or a program the deployment
runs in each replica), the handler runs once per replica for each message: the ledger row written N times, the
webhook called N times.  Handling that stays in the process, or only reaches this process's own clients (a
relay to its WebSockets, a local cache cleared), is what such a subscription is for, and is left alone; so is
handling that claims the message first.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, returned_def, walk
from ..analysis.names import dotted
from ..knowledge import event_consumers as known
from ..knowledge import process_local as channels
from ..project.claims import ClaimAnalyzer
from ..project.definitions import definition
from ..project.reach import runs
from ..project.renamed_callers import project_callers
from ..project.shared_channels import channel_call
from ..project import index as project
from ..project.summaries import Evidence, names_a_write, summaries_for
from .own_queues import WHAT as OWN_QUEUE, own_queue_callbacks, own_queue_read, uses_amqp


@dataclass
class Subscription:
    """Where every replica subscribes, what it subscribes to, and the work it does per message."""

    site: ast.AST  # the subscription (the loop's head call, the callback's registration)
    what: str  # the channel's kind, for the message
    work: List[ast.AST]  # the statements run for each message
    function: FunctionNode  # the function those statements belong to
    facts: ModuleFacts  # the module of that function
    site_facts: Optional[ModuleFacts] = None  # the subscription's own module, when the handler is elsewhere
    read: Optional[ast.AST] = None  # the channel's read, when a helper of this module makes it for the loop


def shown_at(subscription: Subscription) -> ast.AST:
    """Where the subscription is reported: the read a helper makes for a loop elsewhere, else the site."""
    return subscription.read if subscription.read is not None else subscription.site


def subscriptions(facts: ModuleFacts) -> Iterator[Subscription]:
    """Each subscription of the module to a channel every subscriber hears in full, with its per-message work."""
    for loop in facts.loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        function = facts.enclosing_function(loop)
        if function is None:
            continue
        heads = [loop.iter] if isinstance(loop, (ast.For, ast.AsyncFor)) else [loop.test, *loop.body[:2]]
        what = _channel_read(heads, function, facts)
        if what is not None:
            yield Subscription(loop, what, list(loop.body), function, facts)
    for call in facts.calls_named(*channels.SHARED_CHANNEL_CALLBACKS):
        if not channel_call(call, channels.SHARED_CHANNEL_CALLBACKS, facts):
            continue
        handed = [k.value for k in call.keywords if k.arg not in channels.SHARED_CHANNEL_SPLIT_KEYWORDS]
        handed += list(call.args[1:])
        for value in handed:
            values = value.values if isinstance(value, ast.Dict) else [value]  # ``subscribe(**{channel: handler})``
            for reference in values:
                found = _callback(reference, facts)
                if found is not None:
                    handler, where = found
                    yield Subscription(call, f"`{call.func.attr}` callback", list(handler.body), handler, where, facts)
    yield from _loops_over_a_reader(facts)
    for call, reference in own_queue_callbacks(facts) if uses_amqp(facts) else ():
        found = _callback(reference, facts)
        if found is not None:
            handler, where = found
            yield Subscription(call, f"`{call.func.attr}` of {OWN_QUEUE}", list(handler.body), handler, where, facts)


def _loops_over_a_reader(facts: ModuleFacts) -> Iterator[Subscription]:
    """A function of this module that reads one batch off the channel and returns it (``XREAD`` from the last id
    it keeps), called again and again by a loop elsewhere: that loop is the subscription, and each of its passes
    handles what every replica has read.  The read is reported, where the channel is chosen."""
    for function in facts.functions:
        reads = [node for node in walk(function) if channel_call(node, channels.SHARED_CHANNEL_RECEIVES, facts)]
        # (a function that loops over the channel itself is a subscription above; one that returns nothing does
        # not hand the messages to its caller)
        if not reads or any(isinstance(node, (ast.For, ast.AsyncFor, ast.While)) for node in walk(function)
                            if any(node is above for read in reads for above in ancestors(read))) \
                or not any(isinstance(node, ast.Return) and node.value is not None for node in walk(function)):
            continue
        for call, where in project_callers(function, facts):
            loop = _loop_headed_by(call, where)
            caller = where.enclosing_function(loop) if loop is not None else None
            if caller is not None:
                what = f"`{reads[0].func.attr}()` in `{function.name}()`"
                yield Subscription(loop, what, list(loop.body), caller, where, where, reads[0])


def _loop_headed_by(call: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    """The ``while`` loop that makes ``call`` in its test or first statements: it reads a batch on each pass.
    (A ``for`` over the call reads one batch once, and goes through its messages.)"""
    for above in ancestors(call):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(above, ast.While):
            heads = [above.test, *above.body[:2]]
            return above if any(node is call for head in heads for node in walk(head)) else None
    return None


def _channel_read(heads: List[ast.AST], function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """What a loop reads its messages from, when it is a channel every subscriber hears in full: a pub/sub
    ``listen()``/``get_message()``, an ``XREAD``, or a Kafka consumer whose group is this replica's own."""
    for head in heads:
        if uses_amqp(facts) and own_queue_read(head, function, facts):
            return OWN_QUEUE
        for node in walk(head):
            if channel_call(node, channels.SHARED_CHANNEL_RECEIVES, facts):
                return f"`{node.func.attr}()`"
            if isinstance(node, (ast.Name, ast.Attribute)):
                made = _own_group_consumer(node, function, facts)
                if made is not None:
                    return made
    return None


def _own_group_consumer(node: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """``consumer`` made in this function (or on ``self`` in the class) by a Kafka consumer class with a group id
    that is this replica's own: none at all (the consumer reads every partition itself), or one made of the
    host's name, the process id or a fresh random id."""
    if not facts.cached("channel_subscribers:kafka", _constructs_kafka_consumers):
        return None  # (every name of every loop head would otherwise be looked up in its function)
    made = _made_by(node, function, facts)
    if made is None or (facts.callee(made) or "") not in known.KAFKA_CONSUMERS:
        return None
    group = next((k.value for k in made.keywords if k.arg in known.KAFKA_GROUP_KEYWORDS), None)
    if group is None and made.args and isinstance(made.args[-1], ast.Dict):
        group = next((v for k, v in zip(made.args[-1].keys, made.args[-1].values)
                      if isinstance(k, ast.Constant) and k.value in known.KAFKA_GROUP_KEYWORDS), None)
        if group is None:
            return None  # (a librdkafka config without a group: that library refuses to subscribe)
    if group is None or (isinstance(group, ast.Constant) and group.value is None):
        return "a Kafka consumer with no group"
    if any(isinstance(n, ast.Call) and (facts.callee(n) or "") in known.REPLICA_OWN_VALUES for n in walk(group)):
        return "a Kafka consumer whose group is named for this replica"
    return None


def _constructs_kafka_consumers(facts: ModuleFacts) -> bool:
    names = {qualified.rpartition(".")[2] for qualified in known.KAFKA_CONSUMERS}
    return any((facts.callee(call) or "") in known.KAFKA_CONSUMERS for call in facts.calls_named(*names))


def _made_by(node: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.Call]:
    """The constructor call a name (or ``self.<attr>``) of the function was bound to."""
    spelled = dotted(node)
    if not spelled:
        return None
    scopes = [function]
    owner = facts.enclosing_class(function)
    if spelled.startswith("self.") and owner is not None:
        scopes = [s for s in owner.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        for statement in walk(scope):
            if isinstance(statement, ast.Assign) and any(dotted(t) == spelled for t in statement.targets):
                value = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
                if isinstance(value, ast.Call):
                    return value
    return None


def _callback(reference: ast.AST, facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The def a subscription hands its messages to, with its module: a function of the module, a method
    through ``self`` or a module-level instance, or (command line) a function imported from another module."""
    found: Optional[FunctionNode] = None
    if isinstance(reference, ast.Name) and not facts.imports.is_imported(reference.id):
        found = next((f for f in facts.functions_by_name.get(reference.id, ()) if facts.enclosing_class(f) is None),
                     None)
    elif isinstance(reference, ast.Attribute) and isinstance(reference.value, ast.Name) \
            and reference.value.id == "self":
        owner = facts.enclosing_class(reference)
        found = next((f for f in facts.functions_by_name.get(reference.attr, ())
                      if owner is not None and facts.enclosing_class(f) is owner), None)
    elif isinstance(reference, ast.Attribute):
        found = facts.module_method(reference)
    if found is not None:
        return found, facts
    if isinstance(reference, ast.Name):
        made = bound_value(reference, facts)
        if isinstance(made, ast.Call) and isinstance(made.func, (ast.Name, ast.Attribute)):
            # ``handle = build_order_handler(repo)``: the def the project's factory returns
            factory = _callback(made.func, facts)
            handler = returned_def(factory[0]) if factory is not None else None
            return (handler, factory[1]) if handler is not None else None
    if not facts.context.cross_file or not isinstance(reference, (ast.Name, ast.Attribute)):
        return None
    # ``subscribe("orders.created", cb=handle)`` with ``handle`` imported from the module that handles them
    elsewhere = definition(facts.qualify(reference) or "", facts)
    if elsewhere is not None and isinstance(elsewhere[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return elsewhere[0], elsewhere[1]
    return None


def acting_outside(subscription: Subscription) -> Optional[Evidence]:
    """The first plain effect outside the process the per-message work has, unless it only reaches this
    process's own share (its clients) or claims the message first; None otherwise."""
    facts, function = subscription.facts, subscription.function
    summaries = summaries_for(facts)
    effects = summaries.effects_of(subscription.work, function, facts)
    if effects.drain is not None:
        # a buffer the messages filled, flushed: each replica's buffer holds every message, so what the flush
        # writes, each replica writes
        effects.merge(summaries.flushed_effects(subscription.work, function, facts))
    evidence = effects.first_other
    if evidence is None or not evidence.plain or _to_own_connection(evidence.call):
        # A relay to this process's own sockets or streams is what such a subscription is for, and work on this
        # replica's "own share" is read here as what it is: the subscription named for the replica is the
        # hazard, not a share of the work.  Another effect whose name says it acts outside is each replica's.
        named = next((call for call in effects.other + effects.own
                      if not _to_own_connection(call) and names_a_write(call)), None)
        path = _path_of(named, facts) if named is not None else None
        if path is None:
            return None
        evidence = Evidence(named, path, True, evidence.depth if evidence is not None else 0)
    analyzer = ClaimAnalyzer.of_module(facts)
    if analyzer.lead(function).claimed or any(analyzer.dominating_claim(call) is not None for call in effects.other
                                              if any(a is function for a in ancestors(call))):
        return None
    return evidence


def _path_of(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    top = next((above for above in ancestors(node) if isinstance(above, ast.Module)), None)
    if top is facts.tree:
        return facts.context.path
    return project.path_of_tree(top) if top is not None else None


def _to_own_connection(call: ast.AST) -> bool:
    """``websocket.send_json(...)`` / ``queue.put_nowait(...)`` on the variable of a loop over the connections
    (or client queues) this process keeps: it reaches this process's own clients."""
    func = getattr(call, "func", None)
    if not (isinstance(func, ast.Attribute) and func.attr in channels.SOCKET_SEND_METHODS | channels.QUEUE_SEND_METHODS
            and isinstance(func.value, ast.Name)):
        return False
    name = func.value.id
    for above in ancestors(call):
        if isinstance(above, (ast.For, ast.AsyncFor)) and isinstance(above.target, ast.Name) \
                and above.target.id == name:
            return True
        # ``gather(*(ws.send(m) for ws in sockets))``: the same loop written as a comprehension
        if isinstance(above, (ast.GeneratorExp, ast.ListComp, ast.SetComp)) and any(
                isinstance(g.target, ast.Name) and g.target.id == name for g in above.generators):
            return True
    return False


def every_replica_subscribes(subscription: Subscription) -> Optional[str]:
    """Why every replica runs the subscription: start-up code, or a program each replica runs."""
    answer = runs(subscription.site, subscription.site_facts or subscription.facts, startup_only=True)
    return answer.reason if answer.every_replica else None
