"""Scheduled work: every scheduler fires in each replica, so a job must begin with a claim.

OG201 unguarded-scheduled-job, OG202 implicit-schedule-timezone, OG203 loud-skip-log.
The scheduler APIs are data in ``knowledge/schedulers.py``; what counts as a
claim is ``onceguard.project.claims``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from ..project import index as project
from ..project.claims import CLAIM_FUNCTION, CACHE_ADD, HELPER_GUARD, HELPER_RESULT, LOCK_ACQUIRE, SET_NX, TRY_LOCK, Bindings, ClaimAnalyzer, Lead, failed_lock_handlers, is_log_call, own_module_name, own_module_names
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, parent, walk_no_nested_functions
from .fix_plans import offer_claim, trigger_period
from ..knowledge import claims as claim_data
from ..knowledge import schedulers as known
from ..model import Diagnostic, Fix, Related
from ..analysis.names import dotted
from .registry import register
from ..noqa import ALL, line_codes
from ..project.startup import StartupMap
from ..project.summaries import Evidence, _annotation_class, _parameter_annotation, resolve_reference, summaries_for
from .base import Rule

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_HH_MM = re.compile(r"^\s*\d{1,2}:\d{2}(:\d{2})?\s*$")


# ------------------------------------------------------------------------------------------------
# What is scheduled in this module
# ------------------------------------------------------------------------------------------------
@dataclass
class Target:
    """The scheduled function once found: a ``def`` here or (CLI) in another file of the project."""

    function: Optional[FunctionNode] = None
    facts: Optional[ModuleFacts] = None
    foreign: bool = False
    claimed: bool = False  # the registration itself wraps the job in a claim (``run_exclusive`` as the job)
    label: str = ""


@dataclass
class Scheduled:
    family: str
    how: str  # how it was registered, as written: ``sched.add_job``, ``@huey.periodic_task``
    registration: ast.AST  # where OG202 (and a cross-file OG201) is reported
    target: Target
    call: Optional[ast.Call] = None  # the registration call or decorator call
    ctor: Optional[ast.Call] = None  # the scheduler's constructor, when visible
    trigger: Optional[ast.AST] = None
    periodic: bool = True
    coordinated: bool = False
    wall_clock: bool = False  # fires at a wall-clock time: once per business period
    long_hint: bool = False
    detail: str = ""  # e.g. the start-up hook that starts a ticker
    gated: bool = False  # registered only on the one instance the deployment picks
    skip: Optional[Callable[[ast.stmt], bool]] = None
    #: places in other files the registration depends on (the scheduler made in another module)
    related: List[Related] = field(default_factory=list)


def _keywords(call: Optional[ast.Call]) -> Dict[str, ast.AST]:
    if call is None:
        return {}
    return {k.arg: k.value for k in call.keywords if k.arg}


def _has_splat(call: Optional[ast.Call]) -> bool:
    return call is not None and any(k.arg is None for k in call.keywords)


def _argument(call: ast.Call, position: Optional[int], keyword: Optional[str]) -> Optional[ast.AST]:
    if keyword:
        for k in call.keywords:
            if k.arg == keyword:
                return k.value
    if position is not None and len(call.args) > position and not any(
            isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return None


def _const(node: Optional[ast.AST]):
    return node.value if isinstance(node, ast.Constant) else None


def _is_true_constant(node: Optional[ast.AST], value) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _cron_wall_clock(spec: str) -> bool:
    """Whether a crontab expression fires at a wall-clock time (an hour or a date is fixed)."""
    fields = spec.split()
    if len(fields) == 1:
        return fields[0].lower() in known.CRONTAB_WALL_CLOCK_MACROS
    if len(fields) < 5:
        return False
    return any(f != "*" for f in fields[1:5])


def _fields_wall_clock(call: Optional[ast.Call], positional_counts: bool = False) -> bool:
    if call is None:
        return False
    if positional_counts and call.args:
        return True
    for name, value in _keywords(call).items():
        if name in known.CRON_WALL_CLOCK_FIELDS and not (isinstance(value, ast.Constant) and value.value in (None, "*")):
            return True
    return False


class _Collector:
    """Finds every scheduled function of a module once; OG201 and OG202 read the result."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.bindings = Bindings.of_module(facts)
        self.cross_file = bool(facts.context.cross_file)
        self.analyzer = ClaimAnalyzer.of_module(facts, _resolver if self.cross_file else None)
        self.found: List[Scheduled] = []
        self.single = facts.config.single_scheduler
        #: id(receiver) -> where the scheduler it names is made, when that is another module
        self.made_elsewhere: Dict[int, Related] = {}
        self._decorators()
        self._method_calls()
        self._module_functions()
        self._schedule_library()
        self._tickers()
        self._timers()
        if not self.single:
            self._celery_beat()
            self._django_celery_beat()

    # -- scheduler objects ------------------------------------------------------------------------
    def scheduler_of(self, receiver: ast.AST) -> Tuple[Optional[str], Optional[ast.Call]]:
        """(family, constructor call) of a receiver bound to a scheduler constructor, else (None, None)."""
        facts = self.facts
        expr = self.bindings.origin(receiver) if not isinstance(receiver, ast.Call) else receiver
        if isinstance(expr, ast.Await):
            expr = expr.value
        if isinstance(expr, ast.Call):
            family = known.CONSTRUCTORS.get(facts.callee(expr) or "")
            if family:
                return family, expr
            return None, None
        if expr is None and isinstance(receiver, ast.Name):
            family = self._annotated_scheduler(receiver)
            if family is not None:
                return family, None  # a scheduler handed in: its options are the caller's
        if (expr is None and isinstance(receiver, ast.Name) and self.cross_file
                and facts.imports.is_imported(receiver.id) and self.bindings.scope_of(receiver)[0] is None):
            qualified = facts.qualify(receiver) or ""
            found = project.find_assignment(qualified, facts.config, project.roots_for(facts))
            if found is not None:
                value, foreign = found
                if isinstance(value, ast.Call):
                    family = known.CONSTRUCTORS.get(foreign.callee(value) or "")
                    if family:
                        self.made_elsewhere[id(receiver)] = Related(
                            foreign.context.path, value.lineno, value.col_offset + 1,
                            f"`{receiver.id}` is made here ({family})")
                        return family, None  # the constructor lives in another file: its options are not ours
        return None, None

    def _annotated_scheduler(self, receiver: ast.Name) -> Optional[str]:
        """``def register(scheduler: AsyncIOScheduler)``: a parameter whose type is a scheduler class."""
        function = self.facts.enclosing_function(receiver)
        annotation = _annotation_class(_parameter_annotation(function, receiver.id))
        if annotation is None:
            return None
        return known.CONSTRUCTORS.get(self.facts.qualify(annotation) or "")

    def _allowed(self, family: str) -> bool:
        return self.single is False or family not in known.SINGLE_SCHEDULER_FAMILIES

    # -- targets ---------------------------------------------------------------------------------
    def resolve(self, expr: Optional[ast.AST], depth: int = 0) -> Optional[Target]:
        if expr is None or depth > 4:
            return None
        facts = self.facts
        if isinstance(expr, ast.Lambda):
            body = expr.body
            if isinstance(body, ast.Await):
                body = body.value
            if isinstance(body, ast.Call):
                if self.analyzer.is_claim_function(body):
                    return Target(claimed=True)
                return self.resolve(body.func, depth + 1)
            return None
        if isinstance(expr, ast.Call):
            callee = facts.callee(expr) or ""
            if callee in ("functools.partial", "partial") and expr.args:
                return self.resolve(expr.args[0], depth + 1)
            if (isinstance(expr.func, ast.Attribute) and expr.func.attr in known.CELERY_SIGNATURE_METHODS
                    and isinstance(expr.func.value, (ast.Name, ast.Attribute))):
                return self.resolve(expr.func.value, depth + 1)
            return None
        if isinstance(expr, ast.Name):
            function = self.bindings.module_function(expr)
            if function is not None:
                return self._local(function)
            if facts.imports.is_imported(expr.id) and self.bindings.scope_of(expr)[0] is None:
                return self._foreign(facts.qualify(expr) or "", expr)
            return None
        if isinstance(expr, ast.Attribute):
            method = self.bindings.method(expr)
            if method is not None:
                return self._local(method)
            head = expr
            while isinstance(head, ast.Attribute):
                head = head.value
            if (isinstance(head, ast.Name) and facts.imports.is_imported(head.id)
                    and self.bindings.scope_of(head)[0] is None):
                return self._foreign(facts.qualify(expr) or "", expr)
            found = resolve_reference(expr, facts)
            if found is not None:
                function, owner = found
                if owner is facts:
                    return self._local(function)
                if owner.context.is_test:
                    return None
                return Target(function, owner, True, False, f"{dotted(expr) or function.name}")
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return self.resolve_string(expr.value, expr)
        return None

    def resolve_string(self, reference: str, node: ast.AST) -> Optional[Target]:
        """``"app.jobs:send_digest"`` or ``"app.jobs.send_digest"``."""
        reference = reference.strip()
        if ":" in reference:
            module, _, name = reference.partition(":")
        else:
            module, _, name = reference.rpartition(".")
        if not name.isidentifier():
            return None
        if module in own_module_names(self.facts) or (not module and ":" not in reference):
            for statement in self.facts.tree.body:
                if isinstance(statement, _FUNCTION_TYPES) and statement.name == name:
                    return self._local(statement)
            return None
        return self._foreign(reference, node)

    def _local(self, function: FunctionNode) -> Target:
        return Target(function, self.facts, False, False, function.name)

    def _foreign(self, qualified: str, node: ast.AST) -> Optional[Target]:
        if not self.cross_file or not qualified:
            return None
        found = project.find_function(qualified, self.facts.config, project.roots_for(self.facts))
        if found is None:
            return None
        function, foreign = found
        if foreign.context.is_test:
            return None
        return Target(function, foreign, True, False, qualified.replace(":", "."))

    def add(self, scheduled: Scheduled) -> None:
        self.found.append(scheduled)

    # -- decorators --------------------------------------------------------------------------
    def _decorators(self) -> None:
        facts = self.facts
        for function in facts.functions:
            for decorator in function.decorator_list:
                if not isinstance(decorator, ast.Call):
                    continue
                if self._schedule_repeat(function, decorator):
                    continue
                qualified = facts.callee(decorator) or ""
                registration = known.DECORATORS.get(qualified)
                ctor = None
                if registration is None and isinstance(decorator.func, ast.Attribute):
                    family, ctor = self.scheduler_of(decorator.func.value)
                    if family is None:
                        continue
                    registration = next((r for r in known.METHODS.get(family, ())
                                         if r.decorator and r.method == decorator.func.attr), None)
                if registration is None or not self._allowed(registration.family):
                    continue
                trigger = _argument(decorator, registration.trigger_position, registration.trigger_keyword)
                scheduled = Scheduled(
                    registration.family, "@" + (dotted(decorator.func) or registration.method), decorator,
                    self._local(function), decorator, ctor, trigger,
                )
                if isinstance(decorator.func, ast.Attribute) and id(decorator.func.value) in self.made_elsewhere:
                    scheduled.related.append(self.made_elsewhere[id(decorator.func.value)])
                self._classify_trigger(scheduled)
                self.add(scheduled)

    def _schedule_repeat(self, function: FunctionNode, decorator: ast.Call) -> bool:
        """``@schedule.repeat(schedule.every(10).minutes)``: the schedule library's decorator form."""
        func = decorator.func
        if not (isinstance(func, ast.Attribute) and func.attr == known.SCHEDULE_REPEAT) or not decorator.args:
            if not (isinstance(func, ast.Name) and self.facts.qualify(func) == f"{known.SCHEDULE_MODULE}.{known.SCHEDULE_REPEAT}"):
                return False
        elif not self._schedule_module_or_scheduler(func.value):
            return False
        every, at = self._every_chain(decorator.args[0]) if decorator.args else (None, None)
        if every is None or not self._schedule_receiver(every):
            return False
        scheduled = Scheduled(known.SCHEDULE, "@schedule.repeat(schedule.every(...)" + ("" if at is None else ".at(...)") + ")",
                              decorator, self._local(function), decorator, None, at)
        if at is not None and at.args and isinstance(_const(at.args[0]), str) and _HH_MM.match(at.args[0].value):
            scheduled.wall_clock = True
        self.add(scheduled)
        return True

    def _schedule_module_or_scheduler(self, receiver: ast.AST) -> bool:
        if isinstance(receiver, ast.Name) and self.bindings.scope_of(receiver)[0] is None \
                and self.facts.imports.aliases.get(receiver.id) == known.SCHEDULE_MODULE:
            return True
        family, _ = self.scheduler_of(receiver)
        return family == known.SCHEDULE

    @staticmethod
    def _every_chain(node: ast.AST) -> Tuple[Optional[ast.Call], Optional[ast.Call]]:
        """The ``every(...)`` call and the ``.at(...)`` call of ``every(1).day.at("18:00")``."""
        every = at = None
        while isinstance(node, (ast.Attribute, ast.Call)):
            if isinstance(node, ast.Call):
                inner = node.func
                if isinstance(inner, ast.Attribute) and inner.attr == known.SCHEDULE_AT and at is None:
                    at = node
                if (isinstance(inner, ast.Attribute) and inner.attr == known.SCHEDULE_ENTRY) or (
                        isinstance(inner, ast.Name) and inner.id == known.SCHEDULE_ENTRY):
                    every = node
                    break
                node = inner
            else:
                node = node.value
        return every, at

    # -- scheduler.method(func, trigger) ----------------------------------------------------------
    def _method_calls(self) -> None:
        facts = self.facts
        names = {r.method for regs in known.METHODS.values() for r in regs if not r.decorator}
        for name in sorted(names):
            for call in facts.calls_by_name.get(name, ()):
                func = call.func
                if not isinstance(func, ast.Attribute):
                    continue
                family, ctor = self.scheduler_of(func.value)
                if family is None and name == "add_periodic_task" and self._celery_sender(func.value):
                    family = known.CELERY_BEAT
                if family is None or not self._allowed(family):
                    continue
                registration = next((r for r in known.METHODS.get(family, ())
                                     if not r.decorator and r.method == name), None)
                if registration is None:
                    continue
                if registration.requires_keyword and registration.requires_keyword not in _keywords(call):
                    continue
                target_expr = _argument(call, registration.func_position, registration.func_keyword)
                if target_expr is None:
                    continue
                target = self.resolve(target_expr) or Target(label=dotted(target_expr) or "")
                trigger = _argument(call, registration.trigger_position, registration.trigger_keyword)
                scheduled = Scheduled(family, dotted(func) or name, call, target, call, ctor, trigger)
                scheduled.registration = call
                if id(func.value) in self.made_elsewhere:
                    scheduled.related.append(self.made_elsewhere[id(func.value)])
                if family in (known.APS3, known.FLASK_APS):
                    alias = _const(trigger)
                    if (trigger is None and not _has_splat(call)) or alias in known.APS3_ONE_OFF_TRIGGERS:
                        scheduled.periodic = False  # (a ``**trigger_kwargs`` splat may hold a periodic trigger)
                if family == known.APS4 and ctor is not None and self._aps4_shared_store(ctor):
                    scheduled.coordinated = True
                self._classify_trigger(scheduled)
                self.add(scheduled)

    def _celery_sender(self, receiver: ast.AST) -> bool:
        """``def setup(sender, **kw)`` connected to ``app.on_after_configure`` / ``on_after_finalize``."""
        if not isinstance(receiver, ast.Name):
            return False
        function = self.facts.enclosing_function(receiver)
        if function is None:
            return False
        args = function.args
        if not any(a.arg == receiver.id for a in args.posonlyargs + args.args):
            return False
        for decorator in function.decorator_list:
            name = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
            if name.endswith(("on_after_configure.connect", "on_after_finalize.connect")):
                return True
        return False

    def _aps4_shared_store(self, ctor: ast.Call) -> bool:
        store = _argument(ctor, known.APS4_DATA_STORE_POSITION, known.APS4_DATA_STORE_KEYWORD)
        if store is None or _is_true_constant(store, None):
            return False
        origin = self.bindings.origin(store) if not isinstance(store, ast.Call) else store
        if isinstance(origin, ast.Call) and (self.facts.callee(origin) or "") in known.APS4_MEMORY_STORES:
            return False
        return True

    # -- module functions: arq cron(...), aiocron.crontab(spec, func) ----------------------------
    def _module_functions(self) -> None:
        facts = self.facts
        for name in ("cron", "crontab"):
            for call in facts.calls_by_name.get(name, ()):
                registration = known.FUNCTIONS.get(facts.callee(call) or "")
                if registration is None:
                    continue
                above = parent(call)
                if isinstance(above, _FUNCTION_TYPES) and call in above.decorator_list:
                    continue  # the decorator form was handled with the decorators
                target_expr = _argument(call, registration.func_position, registration.func_keyword)
                if target_expr is None:
                    continue
                target = self.resolve(target_expr) or Target(label=dotted(target_expr) or _const(target_expr) or "")
                trigger = _argument(call, registration.trigger_position, registration.trigger_keyword)
                scheduled = Scheduled(registration.family, dotted(call.func) or name, call, target, call, None, trigger)
                if registration.family == known.ARQ:
                    unique = _keywords(call).get(known.ARQ_UNIQUE_KEYWORD)
                    scheduled.coordinated = not _is_true_constant(unique, False)
                self._classify_trigger(scheduled)
                self.add(scheduled)

    # -- schedule.every(...)....do(job) -----------------------------------------------------------
    def _schedule_library(self) -> None:
        facts = self.facts
        for call in facts.calls_by_name.get(known.SCHEDULE_DO, ()):
            func = call.func
            if not isinstance(func, ast.Attribute) or not call.args:
                continue
            every = at = None
            node: ast.AST = func.value
            while isinstance(node, (ast.Attribute, ast.Call)):
                if isinstance(node, ast.Call):
                    inner = node.func
                    if isinstance(inner, ast.Attribute) and inner.attr == known.SCHEDULE_AT and at is None:
                        at = node
                    if (isinstance(inner, ast.Attribute) and inner.attr == known.SCHEDULE_ENTRY) or (
                            isinstance(inner, ast.Name) and inner.id == known.SCHEDULE_ENTRY):
                        every = node
                        break
                    node = inner
                else:
                    node = node.value
            if every is None or not self._schedule_receiver(every):
                continue
            target = self.resolve(call.args[0]) or Target(label=dotted(call.args[0]) or "")
            scheduled = Scheduled(known.SCHEDULE, "schedule.every(...)" + ("" if at is None else ".at(...)") + ".do",
                                  call, target, call, None, at)
            if at is not None and at.args and isinstance(_const(at.args[0]), str) and _HH_MM.match(at.args[0].value):
                scheduled.wall_clock = True
            self.add(scheduled)

    def _schedule_receiver(self, every: ast.Call) -> bool:
        facts = self.facts
        func = every.func
        if isinstance(func, ast.Name):
            return (facts.qualify(func) == f"{known.SCHEDULE_MODULE}.{known.SCHEDULE_ENTRY}"
                    and self.bindings.scope_of(func)[0] is None)
        receiver = func.value
        if isinstance(receiver, ast.Name) and self.bindings.scope_of(receiver)[0] is None:
            return facts.imports.aliases.get(receiver.id) == known.SCHEDULE_MODULE
        family, _ = self.scheduler_of(receiver)
        return family == known.SCHEDULE

    # -- asyncio / thread tickers started at start-up ---------------------------------------------
    def _tickers(self) -> None:
        facts = self.facts
        startup = None
        for name in ("create_task", "ensure_future", "start_soon", "Thread"):
            for call in facts.calls_by_name.get(name, ()):
                family, target_expr = self._ticker_start(call, name)
                if target_expr is None:
                    continue
                if startup is None:
                    startup = StartupMap.of_module(facts)
                reason = startup.reason_for_node(call)
                if reason is None:
                    continue
                function = None
                if isinstance(target_expr, ast.Name):
                    function = self.bindings.module_function(target_expr)
                elif isinstance(target_expr, ast.Attribute):
                    function = self.bindings.method(target_expr)
                target = self._local(function) if function is not None else None
                if function is None and self.cross_file:
                    # A loop imported from another module of the project, started here at start-up.
                    target = self.resolve(target_expr)
                    if target is None or target.function is None or not target.foreign:
                        continue
                    function = target.function
                if function is None or target is None:
                    continue
                target_facts = target.facts or facts
                loop = self._ticker_loop(function, target_facts)
                if loop is None:
                    continue
                scheduled = Scheduled(family, dotted(call.func) or name, call, target, call)
                scheduled.detail = reason
                scheduled.skip = lambda statement, _facts=target_facts: self._is_sleep_statement(statement, _facts)
                self.add(scheduled)

    def _ticker_start(self, call: ast.Call, name: str) -> Tuple[str, Optional[ast.AST]]:
        facts = self.facts
        if name == "Thread":
            if (facts.callee(call) or "") not in known.THREAD_CLASSES:
                return known.THREAD_TICKER, None
            return known.THREAD_TICKER, _argument(call, 1, "target")
        if not call.args:
            return known.ASYNCIO_TICKER, None
        started = False
        qualified = facts.callee(call) or ""
        if qualified in known.TASK_STARTERS and name != "start_soon":
            started = True
        elif isinstance(call.func, ast.Attribute):
            origin = self.bindings.origin(call.func.value)
            if isinstance(origin, ast.Call):
                origin_name = facts.callee(origin) or ""
                if name == known.LOOP_CREATE_TASK and origin_name in known.LOOP_FACTORIES:
                    started = True
                elif name in known.TASK_GROUP_METHODS and origin_name in known.TASK_GROUPS:
                    started = True
        if not started:
            return known.ASYNCIO_TICKER, None
        argument = call.args[0]
        if name == "start_soon":
            return known.ASYNCIO_TICKER, argument
        if isinstance(argument, ast.Call) and not argument.args and not argument.keywords:
            return known.ASYNCIO_TICKER, argument.func
        if isinstance(argument, ast.Call):
            return known.ASYNCIO_TICKER, argument.func
        return known.ASYNCIO_TICKER, None

    def _sleep_call(self, node: ast.AST, facts: Optional[ModuleFacts] = None) -> bool:
        if isinstance(node, ast.Await):
            node = node.value
        if not isinstance(node, ast.Call):
            return False
        if ((facts or self.facts).callee(node) or "") in known.SLEEPS:
            return True
        func = node.func
        # ``stop.wait(60)``: an Event used as an interruptible sleep.
        return isinstance(func, ast.Attribute) and func.attr == "wait" and (
            len(node.args) == 1 or any(k.arg == "timeout" for k in node.keywords))

    def _is_sleep_statement(self, statement: ast.stmt, facts: Optional[ModuleFacts] = None) -> bool:
        return isinstance(statement, ast.Expr) and self._sleep_call(statement.value, facts)

    def _ticker_loop(self, function: FunctionNode, facts: Optional[ModuleFacts] = None) -> Optional[ast.While]:
        for node in walk_no_nested_functions(function):
            if not isinstance(node, ast.While):
                continue
            nodes = list(walk_no_nested_functions(node))
            if not any(self._sleep_call(n, facts) for n in nodes + [node.test]):
                continue
            if any(self._consumes(n) for n in nodes):
                return None
            return node
        return None

    @staticmethod
    def _consumes(node: ast.AST) -> bool:
        """A queue, stream or notification consumer is a worker, not a ticker."""
        if isinstance(node, ast.AsyncFor):
            return True
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            func = node.value.func
            return isinstance(func, ast.Attribute) and func.attr in known.CONSUMER_METHODS
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in known.CONSUMER_METHODS and attr not in ("get", "get_nowait"):
                return True
            if attr == "get" and any(k.arg in ("block", "timeout") for k in node.keywords):
                return True
        return False

    # -- threading.Timer that re-arms itself --------------------------------------------------------
    def _timers(self) -> None:
        facts = self.facts
        for call in facts.calls_by_name.get("Timer", ()):
            if (facts.callee(call) or "") not in known.TIMER_CLASSES:
                continue
            function = facts.enclosing_function(call)
            target_expr = _argument(call, 1, "function")
            if function is None or target_expr is None:
                continue
            same = (isinstance(target_expr, ast.Name) and target_expr.id == function.name
                    and self.bindings.module_function(target_expr) is function) or (
                isinstance(target_expr, ast.Attribute) and self.bindings.method(target_expr) is function)
            if not same:
                continue
            scheduled = Scheduled(known.TIMER, dotted(call.func) or "Timer", call, self._local(function), call)
            scheduled.skip = self._is_timer_statement
            self.add(scheduled)

    def _is_timer_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (self.facts.callee(node) or "") in known.TIMER_CLASSES

    def _is_timer_statement(self, statement: ast.stmt) -> bool:
        if not isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)):
            return False
        if any(self._is_timer_call(n) for n in ast.walk(statement)):
            return True
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            func = statement.value.func
            if isinstance(func, ast.Attribute) and func.attr in ("start", "cancel", "setDaemon"):
                return self._is_timer_call(self.bindings.origin(func.value))
        if isinstance(statement, ast.Assign) and all(
                isinstance(t, ast.Attribute) and self._is_timer_call(self.bindings.origin(t.value))
                for t in statement.targets):
            return True
        return False

    # -- Celery beat and django-celery-beat (single-scheduler = false) -----------------------------
    def _celery_beat(self) -> None:
        facts = self.facts
        for assign in facts.assigns:
            if isinstance(assign, ast.AugAssign) or assign.value is None:
                continue
            targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
            if any((dotted(t) or "").rsplit(".", 1)[-1] in known.CELERY_BEAT_SCHEDULE_NAMES for t in targets):
                self._beat_dict(assign.value, dotted(targets[0]) or "beat_schedule")
        for call in facts.calls_by_name.get("update", ()):
            for keyword in call.keywords:
                if keyword.arg in known.CELERY_BEAT_SCHEDULE_NAMES:
                    self._beat_dict(keyword.value, keyword.arg)

    def _beat_dict(self, value: ast.AST, how: str) -> None:
        if not isinstance(value, ast.Dict):
            return
        for entry in value.values:
            if not isinstance(entry, ast.Dict):
                continue
            fields = {(_const(k) if k is not None else None): v for k, v in zip(entry.keys, entry.values)}
            task = fields.get("task")
            if not isinstance(_const(task), str):
                continue
            target = self._celery_task(task.value, task)
            if target is None:
                continue
            scheduled = Scheduled(known.CELERY_BEAT, how, task, target, None, None, fields.get("schedule"))
            self._classify_trigger(scheduled)
            self.add(scheduled)

    def _celery_task(self, name: str, node: ast.AST) -> Optional[Target]:
        """A Celery task by its registered name: ``@app.task(name=...)`` here, else ``module.function``."""
        facts = self.facts
        own = own_module_names(facts)
        for function in facts.functions:
            for decorator in function.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                func = call.func if call else decorator
                last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if last not in known.CELERY_TASK_DECORATORS:
                    continue
                explicit = _const(_keywords(call).get("name")) if call else None
                if explicit == name or (explicit is None and (name == function.name or any(
                        name == f"{m}.{function.name}" for m in own))):
                    return self._local(function)
        return self.resolve_string(name, node)

    def _django_celery_beat(self) -> None:
        facts = self.facts
        for method in known.DJANGO_ROW_METHODS:
            for call in facts.calls_by_name.get(method, ()):
                func = call.func
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                        and func.value.attr == "objects"):
                    continue
                if (facts.qualify(func.value.value) or "") not in known.DJANGO_CELERY_BEAT_MODELS:
                    continue
                keywords = _keywords(call)
                task = keywords.get("task")
                defaults = keywords.get("defaults")
                if task is None and isinstance(defaults, ast.Dict):
                    task = next((v for k, v in zip(defaults.keys, defaults.values) if _const(k) == "task"), None)
                if not isinstance(_const(task), str):
                    continue
                target = self._celery_task(task.value, task)
                if target is None:
                    continue
                self.add(Scheduled(known.DJANGO_CELERY_BEAT, f"PeriodicTask.objects.{method}", call, target, call))

    # -- triggers -----------------------------------------------------------------------------------
    def _classify_trigger(self, scheduled: Scheduled) -> None:
        call = scheduled.call
        keywords = _keywords(call)
        if any(k in keywords for k in known.LONG_RUNNING_HINTS):
            scheduled.long_hint = True
        trigger = scheduled.trigger
        origin = self.bindings.origin(trigger) if isinstance(trigger, ast.Name) else trigger
        family = scheduled.family
        if family in (known.APS3, known.FLASK_APS):
            alias = _const(origin)
            if alias == "cron":
                scheduled.wall_clock = _fields_wall_clock(call)
            elif alias in ("calendarinterval",):
                scheduled.wall_clock = True
        if isinstance(origin, ast.Call):
            name = self.facts.callee(origin) or ""
            if name in known.APS_CRON_FACTORIES and origin.args and isinstance(_const(origin.args[0]), str):
                scheduled.wall_clock = _cron_wall_clock(origin.args[0].value)
            elif name in known.APS_CRON_CLASSES:
                scheduled.wall_clock = name not in known.APS_DATE_CLASSES and (
                    "CalendarInterval" in name or _fields_wall_clock(origin, positional_counts=True))
            elif name.rsplit(".", 1)[-1] == "crontab":  # huey.crontab, celery.schedules.crontab
                scheduled.wall_clock = _fields_wall_clock(origin) or any(
                    k in _keywords(origin) for k in ("day_of_month", "month_of_year"))
        if family == known.AIOCRON and isinstance(_const(trigger), str):
            scheduled.wall_clock = _cron_wall_clock(trigger.value)
        if family == known.ARQ:
            scheduled.wall_clock = _fields_wall_clock(call)


def scheduled_in(facts: ModuleFacts) -> List[Scheduled]:
    """Every scheduled function registered in this module (cached: OG201 and OG202 share it)."""
    return facts.cached("scheduled-jobs", lambda f: _Collector(f).found)


def _resolver(call: ast.Call, facts: ModuleFacts):
    """A call to a function imported from elsewhere in the project (CLI only)."""
    func = call.func
    head = func
    while isinstance(head, ast.Attribute):
        head = head.value
    if not (isinstance(head, ast.Name) and facts.imports.is_imported(head.id)):
        return None
    qualified = facts.qualify(func) or ""
    found = project.find_function(qualified, facts.config, project.roots_for(facts))
    if found is None or found[1].context.is_test:
        return None
    return found


# ------------------------------------------------------------------------------------------------
# OG201
# ------------------------------------------------------------------------------------------------
_FAMILY_NOTES = {
    known.HUEY: "every huey consumer started without -n runs the periodic scheduler",
    known.APS3: "APScheduler 3 has no coordination between processes",
    known.APS4: "without a shared data store each APScheduler 4 scheduler keeps its own schedules",
    known.FLASK_APS: "Flask-APScheduler starts a scheduler in every process that calls start()",
    known.SCHEDULE: "the schedule library runs in-process",
    known.ARQ: "cron(..., unique=False) lets every arq worker enqueue its own run",
    known.REPEAT_EVERY: "repeat_every starts one loop per process",
    known.AIOCRON: "aiocron runs on each process's event loop",
    known.ROCKETRY: "Rocketry runs in-process",
    known.TIMER: "the timer re-arms itself in each process",
    known.CELERY_BEAT: "beat is run per replica here (single-scheduler = false)",
    known.RQ_SCHEDULER: "rq-scheduler is run per replica here (single-scheduler = false)",
    known.DJANGO_CELERY_BEAT: "beat is run per replica here (single-scheduler = false)",
}

_FAMILY_ALTERNATIVES = {
    known.HUEY: " Or run exactly one consumer with periodic tasks (start the others with -n).",
    known.APS4: " Or give the scheduler a shared data store (SQLAlchemyDataStore) so replicas share schedules.",
    known.ARQ: " Or drop unique=False: arq's default unique=True enqueues each run once.",
    known.CELERY_BEAT: " Or run exactly one beat process.",
    known.DJANGO_CELERY_BEAT: " Or run exactly one beat process.",
    known.RQ_SCHEDULER: " Or run exactly one rqscheduler daemon.",
}

_ROW_SOURCES = frozenset({"filter", "all", "fetch", "fetchall", "scalars", "execute", "iterator", "exclude",
                          "query", "select", "where", "fetchmany"})
_ROW_WRITES = frozenset({"save", "update", "execute", "commit", "bulk_update", "executemany"})
_LONG_CALLS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                         "subprocess.Popen", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"})


def _situation(scheduled: Scheduled) -> str:
    target = scheduled.target
    function, facts = target.function, target.facts
    if function is not None and facts is not None:
        for node in walk_no_nested_functions(function):
            if isinstance(node, (ast.For, ast.AsyncFor)) and _iterates_rows(node, facts) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _ROW_WRITES
                    for b in node.body for n in ast.walk(b)):
                return "rows"
            if isinstance(node, ast.Call) and (facts.callee(node) or "") in _LONG_CALLS:
                return "long"
    if scheduled.long_hint:
        return "long"
    if scheduled.wall_clock:
        return "period"
    return "sweep"


def _iterates_rows(loop: ast.AST, facts: ModuleFacts) -> bool:
    source = loop.iter
    if isinstance(source, ast.Name):
        origin = Bindings.of_module(facts).origin(source)
        source = origin if origin is not None else source
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _ROW_SOURCES
               for n in ast.walk(source))


def _guard_call(guard: str, scheduled: Scheduled, name: str, facts: Optional[ModuleFacts], when: str) -> str:
    """``claim_period("app.jobs.digest", 3600)`` as the fix would write it: the module-qualified key, the
    period the trigger shows (seconds) or a placeholder, and the asyncio twin for a coroutine job."""
    target = scheduled.target
    function = target.function
    where = target.facts or facts
    module = own_module_name(where) if where is not None else ""
    short = function.name if function is not None else name.rsplit(".", 1)[-1]
    key = f"{module}.{short}" if module else short
    apscheduler = scheduled.family in (known.APS3, known.APS4, known.FLASK_APS)
    period = trigger_period(scheduled.trigger, scheduled.call, apscheduler) if when == "period" else None
    argument = str(period) if period else when
    if isinstance(function, ast.AsyncFunctionDef):
        guard = "await a" + guard
    return f"{guard}(\"{key}\", {argument}"


def _suggestion(scheduled: Scheduled, name: str, facts: Optional[ModuleFacts] = None) -> str:
    situation = _situation(scheduled)
    job = f"the {scheduled.family} job `{name}`"
    if scheduled.family in (known.ASYNCIO_TICKER, known.THREAD_TICKER):
        job = f"each iteration of the {scheduled.family} `{name}`"
    elif scheduled.family == known.TIMER:
        job = f"each run of the {known.TIMER} loop `{name}`"
    asynchronous = isinstance(scheduled.target.function, ast.AsyncFunctionDef)
    claim = _guard_call("claim_period", scheduled, name, facts, "period") + ")"
    imported = f"`from onceguard.guards import {'aclaim_period' if asynchronous else 'claim_period'}`"
    begin = f"Begin {job} with `if not {claim}: return`"
    if scheduled.family in (known.ASYNCIO_TICKER, known.THREAD_TICKER):
        begin = f"Begin {job} with `if not {claim}: continue`"  # a return would end the ticker's loop
    elif scheduled.family == known.TIMER:
        begin = f"Guard the work of {job} (not its re-arming) with `if {claim}:`"
    if situation == "rows":
        text = (f"{begin} ({imported}), and claim its rows atomically: "
                "`select_for_update(skip_locked=True)` / `with_for_update(skip_locked=True)` or "
                "`UPDATE ... WHERE id = :id AND status = 'pending'`, acting only on the rows you changed.")
    elif situation == "long":
        exclusive = _guard_call("run_exclusive", scheduled, name, facts, "ttl") + ", work)"
        text = (f"Run {job} under an exclusive lease: `{exclusive}` "
                f"(`from onceguard.guards import {'arun_exclusive' if asynchronous else 'run_exclusive'}`): "
                "`work(lease)` runs while an owner-token lease is renewed every ttl/3 and is stopped when it "
                "is lost.")
    elif situation == "period":
        once = _guard_call("run_once", scheduled, name, facts, "period") + ", work)"
        text = (f"{begin} ({imported}): the claim holds for the whole period, so "
                f"a late or restarted replica cannot repeat it; to let a failed run be retried, use "
                f"`{once}` instead.")
    else:
        text = (f"{begin} ({imported}): the first replica to ask in a "
                "period runs it, every other one skips.")
    return text + _FAMILY_ALTERNATIVES.get(scheduled.family, "")


def _message(scheduled: Scheduled, name: str) -> str:
    family = scheduled.family
    if family in (known.ASYNCIO_TICKER, known.THREAD_TICKER):
        where = f"`{scheduled.how}` (start-up: {scheduled.detail})" if scheduled.detail else f"`{scheduled.how}`"
        kind = "an asyncio ticker" if family == known.ASYNCIO_TICKER else "a thread ticker"
        return (f"`{name}` is {kind} started with {where} and its loop does not begin with a claim: "
                "every replica runs each iteration's work, and again after each restart.")
    if family == known.TIMER:
        return (f"`{name}` re-arms itself with `{scheduled.how}` and does not begin with a claim: every process "
                "that starts it runs it at every interval, and again after each restart.")
    note = _FAMILY_NOTES.get(family, "")
    return (f"`{name}` is scheduled with {family} (`{scheduled.how}`) and does not begin with a claim: "
            f"{note + ', so ' if note else ''}every replica runs it on every tick, and again after each restart.")


@dataclass
class _Verdict:
    scheduled: Scheduled
    function: FunctionNode
    kind: str  # "job" (OG201), "sweep" (OG204)
    name: str
    evidence: Optional[ast.AST] = None  # the idempotent statement a sweep runs
    #: The call that acts outside the process (the reason a claim is needed), and its file.
    effect: Optional[Evidence] = None


def _effect_note(verdict: _Verdict, facts: ModuleFacts) -> str:
    """Which call makes the job more than per-process work, so a reader can judge the finding."""
    if verdict.effect is None:
        return ""
    call, where = verdict.effect.call, verdict.effect.path
    shown = dotted(call.func) if isinstance(call, ast.Call) else ""
    shown = f"`{shown}(...)`" if shown else "a call"
    here = facts.context  # the file the finding is reported in
    place = f"line {call.lineno}" if where in (here.rel_path, here.path) else f"{where}:{call.lineno}"
    if verdict.effect.plain:
        return f" It acts outside the process: {shown} at {place}."
    return f" Its work is not known to stay inside the process: {shown} at {place}."


def _noqa_at_def(function: FunctionNode, facts: ModuleFacts, code: str) -> bool:
    """``# noqa: OG201`` on the job's ``def`` or decorator lines in its own file suppresses a finding reported
    at a registration elsewhere: the def is where the claim goes, so it is where the author answers."""
    lines = [function.lineno] + [d.lineno for d in function.decorator_list]
    for number in lines:
        if 0 < number <= len(facts.lines):
            codes = line_codes(facts.lines[number - 1])
            if codes is not None and (codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)):
                return True
    return False


def _skipped_calls(function: FunctionNode, scheduled: Scheduled) -> set:
    """The calls of the loop machinery itself (a ticker's sleep, a timer re-arming): not the job's work."""
    if scheduled.skip is None:
        return set()
    skipped = set()
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.stmt) and scheduled.skip(node):
            skipped.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Call))
    return skipped


#: Claims that a ``finally:`` can hand back (a lock manager's acquire/release, a Redis key deleted after).
_RELEASABLE_CLAIMS = frozenset({HELPER_RESULT, HELPER_GUARD, SET_NX})


def _released_after_work(function: FunctionNode) -> bool:
    """A ``finally:`` that calls a method of an object the function called another method of before it:
    ``lock.acquire_lock(...)`` ... ``finally: lock.release_lock(...)``."""
    earlier: Dict[str, set] = {}
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Try) and node.finalbody:
            for statement in node.finalbody:
                for call in ast.walk(statement):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                        receiver = dotted(call.func.value)
                        methods = earlier.get(receiver or "", set())
                        if receiver and methods - {call.func.attr}:
                            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = dotted(node.func.value)
            if receiver:
                earlier.setdefault(receiver, set()).add(node.func.attr)
    return False


def _verdicts(facts: ModuleFacts) -> List[_Verdict]:
    def build(_facts: ModuleFacts) -> List[_Verdict]:
        found: List[_Verdict] = []
        if facts.context.is_test:
            return found
        reported = set()
        resolver = _resolver if facts.context.cross_file else None
        summaries = summaries_for(facts)
        for scheduled in scheduled_in(facts):
            target = scheduled.target
            if not scheduled.periodic or scheduled.coordinated or target.claimed or scheduled.gated:
                continue
            function = target.function
            # A def here is reported once at the def; a def elsewhere at each registration.
            key = id(scheduled.registration) if target.foreign else id(function)
            if function is None or target.facts is None or key in reported:
                continue
            analyzer = ClaimAnalyzer.of_module(target.facts, resolver)
            analyzer.by_name = bool(resolver)
            lead = analyzer.lead(function, skip=scheduled.skip)
            if lead.claimed and lead.kind in _RELEASABLE_CLAIMS and not scheduled.wall_clock \
                    and _released_after_work(function):
                # Taken and given back around the work: it stops two runs overlapping, but a replica whose
                # interval fires after the release runs the same period again.
                lead = Lead(False, None, function)
            if lead.claimed or lead.first_work is None:
                continue
            if lead.first_work is not function and analyzer.guarded_later(function) is not None:
                continue  # the claim comes after reading config or metrics, or in a helper called first
            effects = summaries.effects(function, target.facts, skip=_skipped_calls(function, scheduled))
            reported.add(key)
            if effects.drain is not None:
                continue  # flushes what this process buffered: every replica must run it
            if effects.other:
                kind = "job"
            elif effects.idempotent:
                kind = "sweep"
            else:
                continue  # touches only the process itself: per-replica by design
            if target.foreign and _noqa_at_def(function, target.facts, "OG201" if kind == "job" else "OG204"):
                continue
            name = target.label or function.name
            found.append(_Verdict(scheduled, function, kind, name, effects.idempotent[0] if effects.idempotent else None,
                                  effects.first_other))
        return found

    return facts.cached("scheduled-jobs:verdicts", build)


def _report(rule: Rule, verdict: _Verdict, message: str, suggestion: str) -> Diagnostic:
    scheduled, function = verdict.scheduled, verdict.function
    target = scheduled.target
    if target.foreign:
        where = target.facts.context.rel_path or target.facts.context.path
        message = message.replace(f"`{verdict.name}` is", f"`{verdict.name}` (defined in {where}:{function.lineno}) is", 1)
        # Reported at the registration; the verdict is the definition's, in the other file.
        defined = Related(target.facts.context.path, function.lineno, function.col_offset + 1,
                          f"`{function.name}` is defined here, without a claim")
        return rule.finding(scheduled.registration, message, suggestion, related=[*scheduled.related, defined])
    return rule.at_def(function, message, suggestion, related=scheduled.related)


@register
class UnguardedScheduledJob(Rule):
    code = "OG201"
    name = "unguarded-scheduled-job"
    summary = "a scheduled function whose first statement is not a claim runs once per replica"
    # A ticker needs its sleep in the same file (the loop must be visible); arq is flagged only with unique=False.
    triggers = (
        b"add_job", b"scheduled_job", b"add_schedule", b".task(", b"every(", b"periodic_task",
        (b"cron", b"unique"), b"aiocron", b".cron(", b"repeat_", b"Timer", b"LoopingCall", b"looping_call",
        (b"create_task", b"sleep"), (b"create_task", b".wait("), (b"ensure_future", b"sleep"),
        (b"ensure_future", b".wait("), (b"start_soon", b"sleep"), (b"start_soon", b".wait("),
        (b"Thread", b"sleep"), (b"Thread", b".wait("),
        b"beat_schedule", b"BEAT_SCHEDULE", b"PeriodicTask", b"interval=",
    )
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for verdict in _verdicts(facts):
            if verdict.kind != "job":
                continue
            message = _message(verdict.scheduled, verdict.name) + _effect_note(verdict, facts)
            yield offer_claim(_report(self, verdict, message, _suggestion(verdict.scheduled, verdict.name, facts)),
                              verdict, facts)


#: OG204 is off unless selected by its full code: duplicate sweeps cost load, not correctness.
_SWEEP_CODE = "OG204"


@register
class UnguardedIdempotentSweep(Rule):
    code = _SWEEP_CODE
    name = "unguarded-idempotent-sweep"
    summary = ("a scheduled sweep whose only effects are idempotent set-based statements runs in every replica "
               "(duplicate work and lock contention; off by default)")
    triggers = UnguardedScheduledJob.triggers
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        config = facts.config
        if not any(code == _SWEEP_CODE for code in config.select + config.extend_select):
            return
        for verdict in _verdicts(facts):
            if verdict.kind != "sweep":
                continue
            statement = ""
            if verdict.evidence is not None:
                statement = f" (`{dotted(verdict.evidence.func) or 'execute'}(...)`, line {verdict.evidence.lineno})"
            message = (f"`{verdict.name}` is scheduled with {verdict.scheduled.family} (`{verdict.scheduled.how}`) "
                       f"and runs only idempotent set-based statements{statement} with no claim: every replica "
                       "repeats the same sweep on every tick, which costs duplicate work and lock contention but "
                       "gives the same result.")
            claim = _guard_call("claim_period", verdict.scheduled, verdict.name, facts, "period") + ")"
            asynchronous = isinstance(verdict.scheduled.target.function, ast.AsyncFunctionDef)
            suggestion = (f"If the duplicate load matters, begin `{verdict.name}` with `if not {claim}: return` "
                          f"(`from onceguard.guards import {'aclaim_period' if asynchronous else 'claim_period'}`), "
                          "or keep it per-replica and leave this rule off.")
            yield _report(self, verdict, message, suggestion)


# ------------------------------------------------------------------------------------------------
# OG202
# ------------------------------------------------------------------------------------------------
def _naive_run_date(value: Optional[ast.AST], facts: ModuleFacts) -> bool:
    if isinstance(_const(value), str):
        return True
    if isinstance(value, ast.Call) and (facts.callee(value) or "") in ("datetime.datetime", "datetime"):
        return len(value.args) < 8 and not any(k.arg == "tzinfo" for k in value.keywords)
    return False


class _Timezones:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.bindings = Bindings.of_module(facts)

    def missing(self, scheduled: Scheduled) -> Optional[str]:
        """A description of the wall-clock schedule that has no zone, or None."""
        family = scheduled.family
        if family in (known.APS3, known.APS4):
            return self._apscheduler(scheduled)
        if family == known.SCHEDULE:
            at = scheduled.trigger
            if isinstance(at, ast.Call) and scheduled.wall_clock:
                if len(at.args) > known.SCHEDULE_AT_TZ_POSITION or known.SCHEDULE_AT_TZ_KEYWORD in _keywords(at):
                    return None
                return f'.at("{at.args[0].value}")'
            return None
        if family == known.AIOCRON:
            call = scheduled.call
            if not scheduled.wall_clock or call is None or _has_splat(call):
                return None
            if known.AIOCRON_TZ_KEYWORD in _keywords(call) or len(call.args) > known.AIOCRON_TZ_POSITION:
                return None
            return f'crontab("{scheduled.trigger.value}")'
        if family == known.ARQ:
            return self._arq(scheduled)
        return None

    def _django_process(self) -> bool:
        """Django sets the process's time zone to ``settings.TIME_ZONE`` when it starts (``USE_TZ`` or
        not, on POSIX), so the "local" zone of a scheduler in a Django process is the same on every
        replica."""
        return any(value == "django" or value.startswith(("django.", "django_apscheduler"))
                   for value in self.facts.imports.aliases.values())

    def _apscheduler(self, scheduled: Scheduled) -> Optional[str]:
        call = scheduled.call
        trigger = scheduled.trigger
        if call is None or trigger is None or _has_splat(call):
            return None
        if self._django_process():
            return None
        origin = self.bindings.origin(trigger) if isinstance(trigger, ast.Name) else trigger
        keywords = _keywords(call)
        description = None
        trigger_object = False
        if scheduled.family == known.APS3 and isinstance(_const(origin), str):
            alias = origin.value
            if known.TIMEZONE_KEYWORD in keywords:
                return None
            if alias == "cron" and _fields_wall_clock(call):
                description = "cron trigger"
            elif alias == "calendarinterval":
                description = "calendarinterval trigger"
            elif alias == "date" and _naive_run_date(keywords.get("run_date"), self.facts):
                description = "date trigger"
        elif isinstance(origin, ast.Call):
            # A trigger object keeps its own zone: APScheduler 3 does not pass the scheduler's zone to it
            # (CronTrigger/DateTrigger fall back to the local zone, or to start_date's tzinfo).
            name = self.facts.callee(origin) or ""
            trigger_keywords = _keywords(origin)
            if (known.TIMEZONE_KEYWORD in trigger_keywords or _has_splat(origin)
                    or any(k in trigger_keywords for k in known.TRIGGER_ZONE_CARRIERS)):
                return None
            trigger_object = True
            short = name.rsplit(".", 1)[-1]
            if name in known.APS_CRON_FACTORIES:
                if len(origin.args) > 1 or not (origin.args and isinstance(_const(origin.args[0]), str)):
                    return None
                if _cron_wall_clock(origin.args[0].value):
                    description = f'CronTrigger.from_crontab("{origin.args[0].value}")'
            elif name in known.APS_DATE_CLASSES:
                run = _argument(origin, 0, "run_time" if scheduled.family == known.APS4 else "run_date")
                if _naive_run_date(run, self.facts):
                    description = short
            elif name in known.APS_CRON_CLASSES:
                if "CalendarInterval" in name or _fields_wall_clock(origin, positional_counts=True):
                    description = short
        if description is None:
            return None
        if scheduled.family == known.APS3 and not trigger_object and self._scheduler_zone(scheduled) is not False:
            return None
        if trigger_object and scheduled.family == known.APS3 and self._scheduler_zone(scheduled) is True:
            description += " (the scheduler's timezone does not apply to a trigger object)"
        return description

    def _scheduler_zone(self, scheduled: Scheduled) -> Optional[bool]:
        """True: the scheduler sets a zone; False: visibly not; None: cannot tell."""
        ctor = scheduled.ctor
        if ctor is None or _has_splat(ctor):
            return None
        if known.TIMEZONE_KEYWORD in _keywords(ctor):
            return True
        for argument in ctor.args:
            if isinstance(argument, ast.Dict):
                if any(_const(k) in known.APS_GCONFIG_TIMEZONE_KEYS for k in argument.keys):
                    return True
            else:
                return None
        for configure in self.facts.calls_by_name.get(known.APS_CONFIGURE_METHOD, ()):
            func = configure.func
            if not isinstance(func, ast.Attribute):
                continue
            if self.bindings.origin(func.value) is not ctor:
                continue
            if configure.args or _has_splat(configure) or known.TIMEZONE_KEYWORD in _keywords(configure):
                return True if known.TIMEZONE_KEYWORD in _keywords(configure) else None
        return False

    def _arq(self, scheduled: Scheduled) -> Optional[str]:
        call = scheduled.call
        if call is None or not scheduled.wall_clock or _has_splat(call):
            return None
        settings = self._arq_settings(call)
        if settings is None:
            return None
        if settings.bases and not all((dotted(b) or "") == "object" for b in settings.bases):
            return None
        for statement in settings.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else (
                [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == known.ARQ_SETTINGS_TIMEZONE for t in targets):
                return None
        fields = ", ".join(f"{k}=..." for k in _keywords(call) if k in known.CRON_WALL_CLOCK_FIELDS)
        return f"cron({fields}) in {settings.name}"

    def _arq_settings(self, call: ast.Call) -> Optional[ast.ClassDef]:
        statement = self.facts.statement_of(call)
        owner = parent(statement)
        if isinstance(owner, ast.ClassDef):
            return owner
        if owner is self.facts.tree and isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            for cls_node in self.facts.classes:
                for item in cls_node.body:
                    if (isinstance(item, ast.Assign) and isinstance(item.value, ast.Name) and item.value.id == name
                            and any(isinstance(t, ast.Name) and t.id == known.ARQ_CRON_JOBS_ATTRIBUTE
                                    for t in item.targets)):
                        return cls_node
        return None


_TZ_SUGGESTIONS = {
    known.APS3: "Pass `timezone=` to the trigger (e.g. `timezone=\"UTC\"` or your business zone) or create the "
                "scheduler with `{ctor}(timezone=...)`.",
    "aps3-object": "Pass `timezone=` to the trigger itself, e.g. `CronTrigger(hour=7, timezone=\"UTC\")` or "
                   "`CronTrigger.from_crontab(expr, timezone=\"UTC\")`: APScheduler 3 gives a trigger object the "
                   "local zone, not the scheduler's.",
    known.APS4: "Pass `timezone=` to the trigger, e.g. `CronTrigger(hour=7, timezone=\"Europe/Berlin\")` "
                "(APScheduler 4 defaults to the host's local zone).",
    known.SCHEDULE: "Pass the zone as the second argument of `.at()`, e.g. `.at(\"07:00\", \"UTC\")` or your "
                    "business zone.",
    known.AIOCRON: "Pass `tz=` to `aiocron.crontab`, e.g. `tz=zoneinfo.ZoneInfo(\"UTC\")`.",
    known.ARQ: "Set `timezone = datetime.timezone.utc` (or a `zoneinfo.ZoneInfo`) on the worker settings class.",
}


@register
class ImplicitScheduleTimezone(Rule):
    code = "OG202"
    name = "implicit-schedule-timezone"
    summary = "a cron/daily schedule without an explicit timezone fires by the host's local zone"
    triggers = (b"cron", b"Cron", (b".at(", b"every("), b"run_date", b"calendarinterval", b"CalendarInterval",
                b"DateTrigger")
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        zones = None
        for scheduled in scheduled_in(facts):
            if scheduled.family not in _TZ_SUGGESTIONS:
                continue
            if zones is None:
                zones = _Timezones(facts)
            description = zones.missing(scheduled)
            if description is None:
                continue
            name = scheduled.target.label or (scheduled.target.function.name if scheduled.target.function else "the job")
            ctor = "BackgroundScheduler"
            if scheduled.ctor is not None:
                ctor = (dotted(scheduled.ctor.func) or ctor).rsplit(".", 1)[-1]
            message = (f"`{name}` is scheduled with {scheduled.family} {description} and no timezone: it fires by "
                       "the host's local zone, which differs between machines and shifts with daylight saving.")
            key = scheduled.family
            trigger = scheduled.trigger
            origin = zones.bindings.origin(trigger) if isinstance(trigger, ast.Name) else trigger
            if key == known.APS3 and isinstance(origin, ast.Call):
                key = "aps3-object"
            yield self.finding(scheduled.registration, message, _TZ_SUGGESTIONS[key].format(ctor=ctor))


# ------------------------------------------------------------------------------------------------
# OG203
# ------------------------------------------------------------------------------------------------
_LOUD_CLAIM_KINDS = frozenset({CLAIM_FUNCTION, TRY_LOCK, SET_NX, LOCK_ACQUIRE, CACHE_ADD, HELPER_RESULT})


def _loud_level(call: ast.Call, facts: ModuleFacts) -> Optional[str]:
    """The loud level a log call uses (``warning``...), or None."""
    if not is_log_call(call) or not isinstance(call.func, ast.Attribute):
        return None
    method = call.func.attr
    if method in claim_data.LOUD_LOG_METHODS:
        return method
    if method == "log" and call.args:
        level = call.args[0]
        name = (facts.qualify(level) or "") if isinstance(level, (ast.Name, ast.Attribute)) else ""
        if name.rsplit(".", 1)[-1] in claim_data.LOUD_LEVEL_NAMES:
            return name.rsplit(".", 1)[-1].lower()
        if isinstance(_const(level), int) and level.value >= 30:
            return "warning"
    return None


@register
class LoudSkipLog(Rule):
    code = "OG203"
    name = "loud-skip-log"
    summary = "\"another replica has it\" logged at warning or above"
    # Every finding is a loud log call written as a method call.
    triggers = claim_data.LOUD_SKIP_TRIGGERS
    skips_tests = True

    @staticmethod
    def config_triggers(config) -> tuple:
        """Claim functions named in the config may be called anything."""
        names = {name.rsplit(".", 1)[-1].encode() for name in config.claim_functions}
        return tuple((name, log) for name in sorted(names) for log in claim_data.LOUD_LOG_CALL_WORDS)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        loud = []
        for method in claim_data.LOUD_LOG_METHODS | {"log"}:
            for call in facts.calls_by_name.get(method, ()):
                level = _loud_level(call, facts)
                if level is not None:
                    loud.append((call, level))
        if not loud:
            return
        analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
        branch_cache: Dict[int, Optional[List[ast.stmt]]] = {}
        lock_handlers: Optional[set] = None
        loud.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        for call, level in loud:
            if not self._in_failed_branch(call, facts, analyzer, branch_cache):
                if lock_handlers is None:
                    lock_handlers = {id(h) for h in failed_lock_handlers(facts, analyzer)}
                if not lock_handlers or not self._in_handler(call, lock_handlers):
                    continue
            fix = None
            if isinstance(call.func, ast.Attribute) and call.func.attr in claim_data.FIXABLE_LOG_METHODS:
                fix = Fix(kind="log-level-debug", description="log the skip at debug", applicability="safe")
            yield self.finding(
                call,
                f"The skip taken when another replica holds the claim is logged at {level}: it is the "
                "normal case on every replica but one, so each run raises a false alarm.",
                "Log the skip at debug (`log.debug(...)`), or claim with `onceguard.guards` (`claim_period`, "
                "`run_exclusive`), which logs a lost claim at debug itself; keep warning and error for failures "
                "of the job itself.",
                fix,
            )

    @staticmethod
    def _in_failed_branch(call: ast.Call, facts: ModuleFacts, analyzer: ClaimAnalyzer,
                          cache: Dict[int, Optional[List[ast.stmt]]]) -> bool:
        child: ast.AST = call
        for above in ancestors(call):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return False
            if isinstance(above, ast.If) and child is not above.test:
                key = id(above)
                if key not in cache:
                    found = analyzer.failed_branch(above)
                    branch = None
                    if found is not None and found[1].kind in _LOUD_CLAIM_KINDS:
                        branch = found[0]
                    cache[key] = branch
                branch = cache[key]
                if branch and any(child is statement for statement in branch):
                    return True
            child = above
        return False

    @staticmethod
    def _in_handler(call: ast.Call, handlers: set) -> bool:
        for above in ancestors(call):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return False
            if id(above) in handlers:
                return True
        return False


__all__ = ["UnguardedScheduledJob", "ImplicitScheduleTimezone", "LoudSkipLog", "scheduled_in", "Scheduled"]
