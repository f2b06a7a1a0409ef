"""OG608: module-level or long-lived instance state used as memory the replicas would share.

A dict, set or counter in a module, a class body, or on an object that lives as long as the process (one made
at module level, or a daemon running its own loop) is private to that process.  The rule reports it when the
code remembers something about the world in it and decides from it: per-key counters compared with a limit
(quotas, login lockouts), "last done at" watermarks that skip work done recently, "already handled" markers
(``if event_id in _seen: return``), and registries one request writes and another request reads.  Behind a
load balancer each replica, and each worker process of one replica, keeps its own copy, and a restart
forgets it.  A marker may only answer, the work being its caller's: a method of a long-lived object that tests
its own container and fills it (``if key in self._seen: return False`` … ``self._seen[key] = now``), or returns
the test next to another method that fills it; then a caller in request or job code, in this module or another,
must act on the answer with work that leaves the process.

Silent on purpose: memoisation (a function that fills the state on a miss with a computed value), state that
holds this process's own objects (events, queues, tasks, sockets), markers that are taken out again when the
work ends (work in flight in this process), scalar counters of the process's own activity, and state only
updated and never read to decide (metrics).
"""
from __future__ import annotations

import ast
from typing import Callable, FrozenSet, Iterator, List, Optional, Set, Tuple

from ..project import process_state as state
from ..analysis.facts import (FunctionNode, ModuleFacts, spells_triggers, walk,
                              walk_no_nested_functions)
from ..knowledge import process_state as known
from ..model import Diagnostic, Fix, Related
from ..project.state_accessors import behind_accessors, entries_set_at_run_time
from ..project.minted_keys import minted_by_callers, minted_key
from ..project.reach import Reach
from ..project.summaries import summaries_for
from .base import Rule
from .registry import register
from ..project.app_namespaces import may_be_kept
from ..project.request_code import RequestCode
from ..project.wrapped_containers import wrapped_value
from ..project.prefilter_words import container_class_words
from .presence_tests import hands_back_stored, membership_test, stored_when_absent, test_of
from .scalar_markers import TRIGGERS as SCALAR_TRIGGERS, scalar_markers
from . import work_in_flight
from .drained_tallies import drained_by_a_request
from .stale_caches import refreshed_after_shared_write
from .module_state_messages import SNIPPETS as _SNIPPETS, SUGGESTION as _SUGGESTION, describe as _describe
from .request_flags import TRIGGERS as FLAG_TRIGGERS, flipped_flags
from .waiting_registries import Rendezvous, described, rendezvous
from .work_in_flight import guarded_work_outside, live_counts, refuses_while_held, takes_out_again

def _holds_connections(binding: state.Binding, facts: ModuleFacts) -> bool:
    from ..project.socket_registries import registries_of_module

    key = "." + binding.attr if binding.scope == state.INSTANCE and binding.attr else binding.name
    return key in registries_of_module(binding.facts if binding.facts is not None else facts)


def _is_mapping_cache(value: ast.AST, facts: ModuleFacts) -> bool:
    return isinstance(value, ast.Call) and (facts.callee(value) or "") in known.MAPPING_CACHE_FACTORIES


def candidate_bindings(facts: ModuleFacts) -> Iterator[state.Binding]:
    """Containers bound at module level, in a class body, or on ``self`` in a method (``__init__`` first)."""
    for statement in state._top_level_statements(facts.tree):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if state.empty_container(statement.value, facts) or (
                        isinstance(statement.value, ast.Dict) and entries_set_at_run_time(target.id, facts)):
                    yield state.Binding(statement.value, statement, facts, state.MODULE, target.id)
                    continue
                wrapped = wrapped_value(statement.value, facts, None)  # (``_seen = SeenIds(1000)``)
                if wrapped is not None:
                    yield state.Binding(statement.value, statement, facts, state.MODULE, target.id, wrapped=wrapped)
    instance_writes = _first_instance_writes(facts)
    for cls in facts.classes:
        seen: Set[str] = set()
        for statement in cls.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and state.empty_container(statement.value, facts):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in seen:
                        seen.add(target.id)
                        yield state.Binding(statement.value, statement, facts, state.CLASS,
                                            f"{cls.name}.{target.id}", cls, target.id)
        first = instance_writes.get(id(cls), {})
        for attr, (_, value, node) in first.items():
            if attr in seen:
                continue
            if state.empty_container(value, facts):
                yield state.Binding(value, node, facts, state.INSTANCE, f"self.{attr}", cls, attr)
                continue
            wrapped = wrapped_value(value, facts, facts.enclosing_function(node))  # (``self._seen = seen: SeenIds``)
            if wrapped is not None:
                yield state.Binding(value, node, facts, state.INSTANCE, f"self.{attr}", cls, attr, wrapped)


def _first_instance_writes(facts: ModuleFacts) -> dict:
    """class id -> attribute -> (rank, value, statement) of its first ``self.attr = value`` (``__init__`` first),
    from the assignments the one traversal collected."""
    found: dict = {}
    for node in facts.assigns:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not (isinstance(target, ast.Attribute) and state._is_self_attribute(target)):
            continue
        method = facts.enclosing_function(node)
        cls = facts.enclosing_class(method) if method is not None else None
        if cls is None or facts.enclosing_function(method) is not None:
            continue
        rank = 0 if method.name == "__init__" else 1
        per_class = found.setdefault(id(cls), {})
        if target.attr not in per_class or rank < per_class[target.attr][0]:
            per_class[target.attr] = (rank, value, node)
    return found


class _Finding:
    def __init__(self, kind: str, write: state.Access, decision: Optional[state.Access],
                 elsewhere: bool = False) -> None:
        self.kind = kind
        self.write = write
        self.decision = decision
        #: the decision runs in request or job code only if another module's code calls it: asked last, it is
        #: the dearest question (the project's callers, a few calls up)
        self.elsewhere = elsewhere
        #: the decision hands its answer back, and its callers act on it
        self.answered = False


def _fill_of(fills: List[state.Access], decision: state.Access) -> state.Access:
    """The write that marks what ``decision`` tests: the one in the same function, else the first."""
    return next((fill for fill in fills if fill.function is decision.function), fills[0])


def _compares_field(access: state.Access, matcher: state.StateMatcher, fields: Set[str]) -> bool:
    """The test orders (``<``, ``>=``) a value of the state, and that value is one of ``fields`` (``[]``: an item
    of the container itself)."""
    test = test_of(access)
    if test is None:
        return False
    names = matcher.aliases(access.function)
    for node in walk(test):
        if not (isinstance(node, ast.Compare) and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
                                                      for op in node.ops)):
            continue
        for part in walk(node):
            if isinstance(part, ast.Attribute) and part.attr in fields and matcher.derives(part, names, access.function):
                return True
            if "[]" in fields and isinstance(part, (ast.Subscript, ast.Call)) and matcher.derives(part, names, access.function):
                return True
    return False


def _only_evicts(access: state.Access, matcher: state.StateMatcher) -> bool:
    """The test's body does nothing but take entries out of the state (``while q and now - q[0] > w:
    q.popleft()``): expiry of old entries, not a decision about the work."""
    body = getattr(access.node, "body", None)
    if not isinstance(body, list) or not body or getattr(access.node, "orelse", None):
        return False
    names = matcher.aliases(access.function)
    for statement in body:
        if isinstance(statement, ast.Delete) and all(matcher.derives(t, names, access.function)
                                                     for t in statement.targets):
            continue
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _EVICTIONS and matcher.derives(call.func.value, names, access.function)):
            return False
    return True


def _accessor_of(function: FunctionNode, writer: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` only returns a value (``def _get(key): return rates.get(key)``) and only ``writer`` calls
    it: the writer reading through a small helper, not another request."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    calls = list(facts.calls_named(function.name))
    return bool(calls) and all(facts.enclosing_function(call) is writer for call in calls)


#: Methods that drop an entry from a container.
_EVICTIONS = frozenset({"pop", "popleft", "popitem", "remove", "discard"})


def _counter_fields(found: state.Accesses) -> Tuple[List[state.Access], Set[str]]:
    """Counter writes that only go up (a field that also goes down counts work in flight: a gauge)."""
    counters = found.of_kind(state.WRITE_COUNTER)
    writes = [a for a in found.items if isinstance(a.node, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
    down = {state.field_of(_target(a.node)) for a in writes if state.decrements(a.node, a.function)}
    up = [a for a in counters if state.field_of(_target(a.node)) not in down]
    return up, {state.field_of(_target(a.node)) for a in up}


def _target(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Assign):
        return node.targets[0]
    return getattr(node, "target", node)


_TESTS = (ast.If, ast.IfExp)


def _judge(binding: state.Binding, facts: ModuleFacts, request: RequestCode, receivers: Set[str],
           daemon, kept_at_startup: Callable[[], bool] = lambda: False) -> Optional[_Finding]:
    found = state.accesses(binding, facts)
    written = {a.kind for a in found.items}
    if {state.WRITE_COUNTER, "unmark"} <= written:  # (per-key counts a request takes away as the whole)
        counters = _counter_fields(found)[0]
        drained = drained_by_a_request(found, counters, binding, facts, request, receivers) if counters else None
        if drained is not None:
            return _Finding("drained", counters[0], drained)
    if not written & {"decide", "read"}:
        return None  # nothing decides from it
    matcher = state.StateMatcher(binding, facts)
    ended: dict = {}

    def work_ended(stamped: bool) -> bool:  # (read once: an undo's callers may be followed through the project)
        if stamped not in ended:
            ended[stamped] = work_in_flight.work_ended(found, matcher, stamped, facts)
        return ended[stamped]

    outside: dict = {}

    def in_flight_outside() -> bool:  # (read once: the work's effects are followed through the project)
        if not outside:
            # (the cheap question first: only a test that turns a request away makes the work's effects matter)
            outside[True] = any(refuses_while_held(d) for d in found.of_kind("decide")) \
                and guarded_work_outside(found, facts) is not None
        return outside[True]

    if not (written & {state.WRITE_COUNTER, state.WRITE_CLOCK}
            or (state.WRITE_MARK in written and ("unmark" not in written or not work_ended(False)
                                                  or in_flight_outside()))
            or (state.WRITE_RECORD in written and state.WRITE_OBJECT not in written)):
        return None  # none of its writes is one the judgements below look at
    deciding = {id(a.function): a.function for a in found.of_kind("decide") if a.function is not None}
    memos = {key for key, function in deciding.items() if state.read_through(function, binding, facts)}
    refreshed = refreshed_after_shared_write(found, memos, deciding, binding.word, facts) \
        if deciding and not _is_mapping_cache(binding.value, facts) else None
    if refreshed is not None and request.runs(refreshed[0].function, receivers, daemon(), binding):
        return _Finding("stale", refreshed[0], next(a for a in found.of_kind("decide") if id(a.function) == refreshed[1]))
    decisions = [a for a in found.of_kind("decide") if a.function is not None and id(a.function) not in memos]
    if not decisions and not found.of_kind("read"):
        return None
    counters, fields = _counter_fields(found)
    # A helper that answers the comparison (``def is_locked(user): return _failures[user] >= LIMIT``) decides
    # through its caller, which acts on the answer (refuses the login).
    answers = [a for a in found.of_kind("read") if _returns_comparison(a)] if counters else []
    if counters and (decisions or answers):
        # Counted, compared with a limit (the test may only set a "blocked" mark), and the state decides.
        functions = {id(a.function): a.function for a in found.items if a.function is not None}
        limits = [state.Access(node, function, "test") for function in functions.values()
                  for node in state.state_nodes(function, facts) if isinstance(node, _TESTS)]
        if any(_compares_field(test, matcher, fields) for test in limits) or answers:
            compared = [d for d in decisions + answers if _compares_field(d, matcher, fields)] or decisions + answers
            return _Finding("counter", counters[0], compared[0])
    for clock in found.of_kind(state.WRITE_CLOCK):
        field = {state.field_of(_target(clock.node))}
        # A watermark: the function that skips while the time is recent is the one that stamps it again (a
        # loop that only drops the old stamps is a window's housekeeping, not a skip).
        for decision in decisions:
            if decision.function is clock.function and _compares_field(decision, matcher, field) \
                    and not _only_evicts(decision, matcher):
                return _Finding("clock", clock, decision)
    # A "seen" marker: a member added, or an entry stamped with the time it was seen by the function that
    # tests for it (a dedupe that forgets old ids: ``if key in self._seen: return False`` … ``self._seen[key]
    # = now``); the test may be a method's answer (``return key in self._seen``) that its caller acts on.
    marks = found.of_kind(state.WRITE_MARK)
    stamps = [c for c in found.of_kind(state.WRITE_CLOCK) if state.field_of(_target(c.node)) == "[]"]
    # An entry stored under a key by the function that first asks whether the key is there (``if entry is None:
    # _claims[key] = Claim(...)``) marks the key as much as an added member does, whatever the entry holds.
    stamps += [r for r in found.of_kind(state.WRITE_RECORD) if state.field_of(_target(r.node)) == "[]"
               and not hands_back_stored(r) and any(d.function is r.function and stored_when_absent(r, d, matcher)
                                                    for d in decisions)]
    in_flight = bool(marks or stamps) and work_ended(not marks)
    if (marks or stamps) and (not in_flight or in_flight_outside()):
        # (work held in flight: only a test that turns the second request away is the guard that fails)
        tested = [d for d in decisions if membership_test(d, matcher)
                  and (marks or any(stamp.function is d.function for stamp in stamps))
                  and (not in_flight or refuses_while_held(d))]
        if not in_flight:
            tested += [a for a in found.of_kind("read") if state.answers_membership(a, matcher)]
        fills = marks + stamps
        kind = "in flight" if in_flight else "mark"
        for decision in tested:
            if request.runs(decision.function, receivers, daemon()):
                return _Finding(kind, _fill_of(fills, decision), decision)
        if tested and facts.context.cross_file:
            return _Finding(kind, _fill_of(fills, tested[0]), tested[0], elsewhere=True)
    # An entry stamped with the time its key was last seen (``self._last_seen[user] = time.time()``) records the
    # key as much as any value does: another function that reads the entries (who is online) reads a registry.
    records = found.of_kind(state.WRITE_RECORD) + stamps
    # A count of what is live in this process (counted in as each connection arrives and out as it leaves) that
    # another function reads: who is online, as this process alone sees it.  Its writers' callers are followed
    # through the project, as a minted key's are (the socket handler that counts lives in another module).
    gauges = live_counts(found) if not records else []
    records = records + gauges
    # A registry keeps to the request and job code this module shows: followed through the project's
    # callers, a reader is as often work the writer itself runs (a queue it drains through its own pool) or
    # set-up that builds a new object as another request.
    # An entry under a key its writer mints (a job id from ``uuid4()``) is there for a later request that is
    # handed the key: then both are followed through the project's callers, as a marker's are.
    if records and not found.of_kind(state.WRITE_OBJECT):
        for record in records:
            writer = record.function
            if writer is None or takes_out_again(record, found):
                continue  # (an entry its writer takes out again when its work ends: work in flight here)
            minted = facts.context.cross_file and (record in gauges or minted_key(record.node, facts))
            # An object start-up code keeps on the application (``app.ctx.presence = Registry()``) is there for
            # handlers elsewhere: its methods' callers are followed through the project as a minted key's are.
            # (A module-level instance's are not: most such registries other modules fill mirror shared data.)
            kept = binding.scope == state.INSTANCE and not receivers and not minted and facts.context.cross_file \
                and any(r.function is not None and r.function is not writer
                        for r in decisions + found.of_kind("read")) \
                and request.runs(writer, receivers) is None and kept_at_startup()
            accessed = not minted and behind_accessors(binding, record, decisions + found.of_kind("read"), facts)
            follow = binding if minted or kept or accessed else None
            if request.runs(writer, receivers, binding=follow) is None:
                # the key may come from the writer's callers (a route minting an upload id): only then are they
                # followed, and only asked when another function of the module reads the entries
                if minted or not any(r.function is not None and r.function is not writer
                                     for r in decisions + found.of_kind("read")) \
                        or not minted_by_callers(record.node, facts):
                    continue
                minted, follow = True, binding
                if request.runs(writer, receivers, binding=follow) is None:
                    continue
            for reader in decisions + found.of_kind("read"):
                if reader.function is not None and reader.function is not writer \
                        and id(reader.function) not in memos \
                        and not _accessor_of(reader.function, writer, facts) \
                        and request.runs(reader.function, receivers, binding=follow) is not None:
                    return _Finding("registry", record, reader, elsewhere=minted)
    return None


def _returns_comparison(access: state.Access) -> bool:
    """The access is a ``return`` of a comparison (``return _failures[key] >= LIMIT``)."""
    return isinstance(access.node, ast.Return) and isinstance(access.node.value, ast.Compare)


def _decides_only_process_work(finding: _Finding, binding: state.Binding, facts: ModuleFacts) -> bool:
    """What a "handled" mark or a "last done" watermark lets through stays in this process (a log line, a
    warning, a refresh of its own cache): each replica doing it once is what it is for.  A call the analysis
    cannot follow counts as work that leaves the process."""
    decision = finding.decision
    if decision is None or decision.function is None:
        return False
    work = state.decided_work(decision.node)
    if work is None or state.yields_items(work):
        return False  # (a filter's items are its consumer's work: ``_answered`` follows them)
    matcher = state.StateMatcher(binding, facts)
    names = matcher.aliases(decision.function)
    own = {id(node) for statement in work for node in walk(statement)
           if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and matcher.derives(node.func.value, names, decision.function)}  # the state's own bookkeeping
    return summaries_for(facts).effects_of(work, decision.function, facts, skip=own).process_only


def _answered(finding: _Finding, binding: state.Binding, facts: ModuleFacts, reach: Reach) -> Optional[Callable]:
    """When the marker's function hands back whether a key was seen and does nothing itself past the test but
    keep the marker (``if key in self._seen: return False`` … ``self._seen[key] = now; return True``, or
    ``return key in self._seen``), the work the marker guards is its caller's: the question each call must
    answer yes to (``state.acts_on_answer``).  None when the function does the work itself, raises, or is a
    request handler or a job (its answer leaves the process)."""
    decision = finding.decision
    node = decision.node if decision is not None else None
    if node is None or decision.function is None or reach.is_entry(decision.function):
        return None
    fills: FrozenSet[str] = frozenset()
    if isinstance(node, ast.Return):
        writer = finding.write.function
        if writer is not None and writer is not decision.function:
            fills = frozenset({writer.name})  # checked by one method, filled by another the caller calls
    elif isinstance(node, (ast.If, ast.While)) and (state.decided_work(node) is None
                                                   or state.yields_items(state.decided_work(node))):
        if any(isinstance(part, ast.Raise) for statement in node.body + node.orelse
               for part in walk_no_nested_functions(statement)):
            return None
        rest = [*node.body, *node.orelse, *state.following_statements(node)]
        matcher = state.StateMatcher(binding, facts)
        names = matcher.aliases(decision.function)
        calls = [part for statement in rest for part in walk(statement) if isinstance(part, ast.Call)]
        own = {id(call) for call in calls if isinstance(call.func, ast.Attribute)
               and matcher.derives(call.func.value, names, decision.function)}
        if len(own) < len(calls) and not summaries_for(facts).effects_of(rest, decision.function, facts,
                                                                          skip=own).process_only:
            return None  # (only calls besides the marker's own are followed)
    else:
        return None
    return lambda call, other: state.acts_on_answer(call, other, fills)


def _read_back_by_other_requests(finding: _Finding, binding: state.Binding, request: RequestCode,
                                 receivers: Set[str], loop_methods: FrozenSet[str]) -> bool:
    """One request adds a member (``revoke(jti)`` from the logout route) and another function answers whether a
    key is there to requests that act on it (``if is_revoked(jti): return _unauthorized(...)``): the member is
    a record other requests read, a registry, whether or not one caller both asks and adds."""
    writer, reader = finding.write.function, finding.decision.function if finding.decision else None
    if writer is None or reader is None or writer is reader:
        return False
    return bool(request.runs(writer, receivers, loop_methods, binding)) and bool(
        request.runs(reader, receivers, loop_methods, binding, _acts_on_what_it_is_told))


def _acts_on_what_it_is_told(call: ast.Call, facts: ModuleFacts) -> bool:
    return state.acts_on_answer(call, facts)


@register
class ModuleStateAsSharedMemory(Rule):
    code = "OG608"
    name = "module-state-as-shared-memory"
    summary = ("module-level or long-lived instance state decides what a request or job does: each replica keeps "
               "its own copy")
    triggers = known.STATE_TRIGGERS + SCALAR_TRIGGERS + FLAG_TRIGGERS
    skips_tests = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module holding an instance of a project class that wraps a container (``seen: SeenIds``)."""
        return container_class_words(config)

    def check(self, facts: ModuleFacts) -> Iterator[Diagnostic]:
        context = facts.context
        if context.is_test or context.is_migration:
            return
        request = RequestCode(facts)  # asks Reach only when a finding needs to know who runs the code
        lifetimes = {}
        daemons = {}  # class -> the methods its own polling loop runs
        for binding in candidate_bindings(facts):
            receivers: Set[str] = set()
            lifetime = None
            if binding.scope == state.INSTANCE and binding.owner is not None:
                receivers = state.module_global_receivers(binding.owner, facts)
            def lifetime_of(owner=binding.owner):
                if owner is None:
                    return None
                if id(owner) not in lifetimes:
                    lifetimes[id(owner)] = state.long_lived_instance(owner, facts)
                return lifetimes[id(owner)]

            def daemon(owner=binding.owner) -> FrozenSet[str]:
                if owner is None:
                    return frozenset()
                if id(owner) not in daemons:  # (the project-wide search waits for a finding)
                    found = state.daemon_lifetime(owner, facts)
                    daemons[id(owner)] = found.loop_methods if found is not None else frozenset()
                return daemons[id(owner)]

            meeting = rendezvous(binding, facts) if binding.scope == state.MODULE else None
            if meeting is not None:
                yield from self._rendezvous(meeting, binding, request)
                continue
            finding = _judge(binding, facts, request, receivers, daemon,
                             lambda: binding.owner is not None and may_be_kept(binding.owner, facts)
                             and getattr(lifetime_of(), "kept_at_startup", False))
            if finding is None or request.reach.module_is_one_off:
                continue  # (a script a person runs is one process)
            if finding.kind == "registry" and _is_mapping_cache(binding.value, facts):
                continue  # a per-process cache used as a store is OG607's to say
            if finding.kind == "registry" and _holds_connections(binding, facts):
                continue  # the connections (or stream queues) this process serves: OG605 says where they are sent to

            if binding.scope == state.INSTANCE:
                lifetime = lifetime_of()
                if lifetime is None and not receivers:
                    continue  # an instance that may live for one request only
            # (after the lifetime: what the work reaches is followed through the project, the dearer question)
            if finding.kind in ("mark", "clock") and _decides_only_process_work(finding, binding, facts):
                continue
            if finding.elsewhere and not request.runs(finding.decision.function, receivers, daemon(), binding):
                continue  # no request or job code of the project is seen calling it
            # (once some request or job code runs it: whether a caller acts on its answer is followed further)
            answer = _answered(finding, binding, facts, request.reach) if finding.kind == "mark" else None
            finding.answered = answer is not None
            if answer is not None and not request.runs(finding.decision.function, receivers, daemon(), binding,
                                                       answer):
                if not _read_back_by_other_requests(finding, binding, request, receivers, daemon()):
                    continue  # no caller acts on its answer with work that leaves the process
                finding.kind = "registry"  # (a revocation list: one request adds, every other request asks)
            related: List[Related] = []
            if lifetime is not None:
                related.append(Related(lifetime.path, lifetime.line, 1, lifetime.why))
            elif receivers:
                related.append(Related(context.path, binding.line, 1,
                                       f"a module-level `{sorted(receivers)[0]}` holds the instance"))
            related.append(Related(context.path, finding.write.node.lineno, finding.write.node.col_offset + 1,
                                   f"{getattr(finding.write.function, 'name', '?')}() writes it"))
            if finding.decision is not None:
                related.append(Related(context.path, finding.decision.node.lineno,
                                       finding.decision.node.col_offset + 1,
                                       f"{getattr(finding.decision.function, 'name', '?')}() decides from it"))
                # (a stale cache: the way to the write that refreshes only this process's copy)
                related.extend(request.way(finding.write.function if finding.kind == "stale"
                                           else finding.decision.function, binding))
            message, why = _describe(finding, binding)
            yield self.finding(binding.statement, message, why + _SUGGESTION,
                               fix=Fix("shared-state-snippet", _SNIPPETS[finding.kind], "display-only"), related=related)
        yield from self._scalar_markers(facts, request)
        yield from self._request_flags(facts, request)

    def _rendezvous(self, meeting: Rendezvous, binding: state.Binding, request: RequestCode) -> Iterator[Diagnostic]:
        """A waiter one request stores and another request resolves (``waiting_registries``)."""
        waits = request.runs(meeting.waiter, set(), binding=binding)
        resolves = request.runs(meeting.resolver, set(), binding=binding) if waits is not None else None
        if resolves is None or "request" not in resolves or request.reach.module_is_one_off:
            return  # (resolved by this process's own listener or job: the place such waiters are for)
        yield self.finding(binding.statement, *described(meeting, binding, waits, resolves))

    def _request_flags(self, facts: ModuleFacts, request: RequestCode) -> Iterator[Diagnostic]:
        """A module-level event request code flips and other code tests (``request_flags``)."""
        seen: Set[Tuple[int, str]] = set()
        for flag in flipped_flags(facts) if spells_triggers(facts, FLAG_TRIGGERS) else ():
            if (id(flag.writer), flag.name) in seen:
                continue  # (one finding per function and flag: ``set()`` in one branch, ``clear()`` in the other)
            seen.add((id(flag.writer), flag.name))
            reason = request.runs(flag.writer, set())
            if reason is None or request.reach.module_is_one_off:
                continue  # flipped at start-up or by a script: every process does it for itself
            related = [Related(flag.binding_facts.context.path, flag.binding.lineno, 1,
                               "one event per process is made here"),
                       Related(flag.reader_facts.context.path, flag.test.lineno, flag.test.col_offset + 1,
                               f"{flag.reader.name}() decides from it")]
            flipped = "set" if flag.flip.func.attr == "set" else "cleared"
            yield self.finding(
                flag.flip,
                f"`{flag.name}` (an event in process memory) is {flipped} by {flag.writer.name}() and tested by "
                f"{flag.reader.name}(), so the other worker processes and replicas never see the change.",
                f"The switch {flag.writer.name}() runs {reason}. "
                "The request that flips it is served by one process of one replica; every other process keeps its "
                "own copy, and a restart forgets it. Keep the flag where every replica reads it: a row of a "
                "settings table, or a Redis key (`redis.set(\"maintenance\", 1)`, tested with `redis.exists(...)`), "
                "read on each request or cached for a few seconds.",
                related=related)

    def _scalar_markers(self, facts: ModuleFacts, request: RequestCode) -> Iterator[Diagnostic]:
        """A module-level value a function tests, then sets around work that leaves the process."""
        for marker in scalar_markers(facts) if spells_triggers(facts, SCALAR_TRIGGERS) else ():
            if request.reach.module_is_one_off:
                return
            function, binding = marker.function, marker.binding
            reason = request.runs(function, set(), frozenset(), binding)
            if reason is None:
                continue  # no request or job code of the project is seen calling it
            path = facts.context.path
            related = [Related(path, marker.decision.lineno, marker.decision.col_offset + 1,
                               f"{function.name}() decides from it"),
                       Related(path, marker.write.lineno, marker.write.col_offset + 1,
                               f"{function.name}() records the work in it"),
                       *request.way(function, binding)]
            yield self.finding(
                binding.statement,
                f"`{binding.name}` (a module-level value in process memory) records that {function.name}() did its "
                "work and decides from it, so every other worker process and replica does the work again.",
                "Each worker process of each replica has its own copy, and a restart forgets it. " + _SUGGESTION,
                fix=Fix("shared-state-snippet", _SNIPPETS["clock"], "display-only"), related=related)
