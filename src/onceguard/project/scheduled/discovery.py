"""Finds every scheduled function of a module once; OG201, OG202 and OG204 read the result."""
from __future__ import annotations

import ast
import os
import re
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from ...knowledge import deployment as deployment_known
from ...project import deployment, index as project, process_roles
from ...project.through_helpers import through_helpers
from ...project.bindings import Bindings, own_module_name, own_module_names
from ...project.claims import ClaimAnalyzer
from ...project.handed_values import cases_of
from ...analysis.applied_decorators import decorators
from ...analysis.context import FileContext
from ...analysis.facts import FunctionNode, ModuleFacts, parent, returned_def, walk_no_nested_functions
from ...analysis.executed_sql import bound_value
from ...analysis.handed import argument_for, closed_over_parameter, positional_parameters
from ...knowledge import schedulers as known
from ...model import Related
from ...analysis.names import dotted
from ...project.registries import registering_names, registration_of
from ...project.scheduler_handoffs import hands_registered_item
from ...project.summaries import _annotation_class, _parameter_annotation, resolve_reference
from .beat import BeatRegistrations
from .enqueued_jobs import enqueued_once_per_tick
from .periods import trigger_period
from .daemons import DaemonRegistrations
from .jobs import (Scheduled, Target, _FUNCTION_TYPES, _HH_MM, _argument, _const, _cron_wall_clock, _fields_wall_clock,
                   _has_splat, _is_true_constant, _keywords)
from .loops import LoopRegistrations
from .ticking_decorators import TICKING_WORDS, loop_repeating, timer_repeating


#: Not yet looked up (None means looked up and absent).
_UNASKED = object()


class _Collector(LoopRegistrations, DaemonRegistrations, BeatRegistrations):
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
        self._beat_launch: Optional[object] = _UNASKED
        #: receivers whose scheduler is being looked up through callers (a circle of hand-offs ends there)
        self._asking: set = set()
        #: registrations into a container whose items a loop hands to a scheduler: judged once that
        #: scheduler's own registration is known (``_handed_registrations``)
        self._handed: List[tuple] = []
        self._decorators()
        self._registry_calls()
        self._method_calls()
        self._module_functions()
        self._schedule_library()
        self._tickers()
        self._timers()
        self._worker_loops()
        self._handed_to_repeaters()
        self._daemons()
        self._cron_commands()
        before = len(self.found)
        self._celery_beat()
        self._django_celery_beat()
        if self.single and len(self.found) > before and self._embedded_beat() is None:
            # One beat process schedules them (no worker embeds it): each tick runs the task once, on one worker.
            for scheduled in self.found[before:]:
                scheduled.coordinated = True
        self._handed_registrations()

    # -- a management command a crontab runs in every replica ---------------------------------------------
    def _cron_commands(self) -> None:
        """A Django management command (``Command.handle``) that a crontab line runs, in a project whose every
        replica starts a cron daemon (``deployment.cron_line_of_command``): each replica's cron runs it on schedule."""
        context = self.facts.context
        if not self.cross_file or not context.path or context.is_test:
            return
        from ..deployment import cron_line_of_command, project_directory

        launch = cron_line_of_command(context.path, project_directory(context.path, self.facts.config,
                                                                      project.search_root(self.facts)),
                                      self.facts.config)
        command = next((c for c in self.facts.classes if c.name == "Command"), None) if launch is not None else None
        handle = next((s for s in command.body if isinstance(s, _FUNCTION_TYPES) and s.name == "handle"),
                      None) if command is not None else None
        if handle is None:
            return
        scheduled = Scheduled(known.CRON, "crontab", handle, self._local(handle), None)
        scheduled.related.append(Related(launch.path, launch.line, 1,
                                         f"this line runs `{context.filename[:-3]}` ({launch.where})"))
        self.add(scheduled)

    # -- scheduler objects ------------------------------------------------------------------------
    def scheduler_of(self, receiver: ast.AST) -> Tuple[Optional[str], Optional[ast.Call]]:
        """(family, constructor call) of a receiver bound to a scheduler constructor, else (None, None)."""
        facts = self.facts
        expr = self.bindings.origin(receiver) if not isinstance(receiver, ast.Call) else receiver
        if expr is None:
            expr = self.bindings.configured_origin(receiver)
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
            family = self._handed_scheduler(receiver)
            if family is not None:
                return family, None
        qualified = (self.bindings.imported_name(receiver)
                     if expr is None and isinstance(receiver, ast.Name) and self.cross_file else None)
        if qualified:
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

    def _handed_scheduler(self, receiver: ast.Name) -> Optional[str]:
        """A parameter (of a method too) every caller of this module fills with the same kind of scheduler."""
        asking = self._asking
        if id(receiver) in asking:
            return None  # (callers that hand the parameter round in a circle)
        asking.add(id(receiver))
        try:
            cases = cases_of([receiver.id], receiver, self.facts)
            families = {self.scheduler_of(case.values[receiver.id])[0] if case.facts is self.facts else None
                        for case in cases or ()}
        finally:
            asking.discard(id(receiver))
        return families.pop() if len(families) == 1 else None

    def _annotated_scheduler(self, receiver: ast.Name) -> Optional[str]:
        """``def register(scheduler: AsyncIOScheduler)``: a parameter whose type is a scheduler class."""
        function = self.facts.enclosing_function(receiver)
        annotation = _annotation_class(_parameter_annotation(function, receiver.id))
        if annotation is None:
            return None
        return known.CONSTRUCTORS.get(self.facts.qualify(annotation) or "")

    def _allowed(self, family: str) -> bool:
        if self.single is False or family not in known.SINGLE_SCHEDULER_FAMILIES:
            return True
        return family in known.BEAT_FAMILIES and self._embedded_beat() is not None

    def _embedded_beat(self):
        """The deployment command that runs beat inside every Celery worker (``worker -B``), or None: then beat
        is no single scheduler, whatever the configuration assumes."""
        if self._beat_launch is _UNASKED:
            self._beat_launch = deployment.embedded_beat_for(self.facts) if self.cross_file else None
        return self._beat_launch

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
            if isinstance(expr.func, (ast.Name, ast.Attribute)) and self.analyzer.claiming_wrapper(expr):
                # ``add_job(claimed(name, job))``: what is scheduled is the def the project's wrapper returns, which
                # claims before it calls the job it was handed
                return Target(claimed=True, label=dotted(expr.func) or "")
            if isinstance(expr.func, ast.Name):
                # ``.do(make_invoice_job(run, tz))``: the job is the def the project's factory returns; a def that
                # only wraps what it is handed (``.do(safe_run(sweep))``) runs that, judged as itself
                factory = self.resolve(expr.func, depth + 1)
                made = returned_def(factory.function) if factory is not None and factory.function is not None else None
                if made is not None:
                    calls = [n for n in walk_no_nested_functions(made) if isinstance(n, ast.Call)]
                    called = closed_over_parameter(made, factory.function, calls)
                    handed = argument_for(expr, factory.function, called) if called is not None else None
                    inner = self.resolve(handed, depth + 1) if handed is not None else None
                    if inner is not None and (inner.function is not None or inner.claimed):
                        return inner
                    return Target(made, factory.facts, factory.foreign, False, f"{factory.label}().{made.name}")
            return None
        if isinstance(expr, ast.Name):
            function = self.bindings.module_function(expr)
            if function is not None:
                return self._local(function)
            imported = self.bindings.imported_name(expr)
            if imported is not None:
                return self._foreign(imported, expr)
            # A job bound to a name first (``job = partial(report, redis)``, then ``every_hour(job)``).
            bound = bound_value(expr, facts)
            if bound is not None and not isinstance(bound, ast.Name):
                return self.resolve(bound, depth + 1)
            return None
        if isinstance(expr, ast.Attribute):
            method = self.bindings.method(expr)
            if method is not None:
                return self._local(method)
            if expr.attr in known.TASK_ENQUEUE_METHODS and isinstance(expr.value, (ast.Name, ast.Attribute)):
                # ``publish_rosters.send`` (Dramatiq), ``task.delay`` (Celery), ``task.kiq`` (Taskiq): each tick
                # puts the task on the queue, and a worker runs its function once per tick of each replica.
                task = self.resolve(expr.value, depth + 1)
                if task is not None and task.function is not None:
                    return task
            imported = self.bindings.imported_name(expr)
            if imported is not None:
                return self._foreign(imported, expr)
            found = resolve_reference(expr, facts)
            if found is not None:
                function, owner, instance = found
                if owner is facts:
                    target = self._local(function)
                    target.self_class = instance
                    return target
                if owner.context.is_test:
                    return None
                return Target(function, owner, True, False, f"{dotted(expr) or function.name}", instance)
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return self.resolve_string(expr.value, expr)
        return None

    def targets(self, written: ast.AST, trigger: Optional[ast.AST], call: ast.Call):
        """(target, where it is registered, its trigger, the way there) for each function a registration call
        schedules. A job handed in as a parameter or a loop variable (``def _register(s, func, trigger):
        s.add_job(func, trigger)`` called for each row of ``JOBS``) is each value its callers or its loop give, with
        the trigger given alongside it; a value in this module is reported where it is written."""
        target = self.resolve(written)
        wrapped = self._wrapped_parameter(target, written)
        if wrapped is not None:
            # ``def every(m): def decorator(func): def runner(): return func() ... .do(runner)``: the wrapper
            # runs what the decorator is handed; each decorated function is the job.
            written, target = wrapped, None
        if target is None and isinstance(written, ast.Name):
            names = [written.id] + ([trigger.id] if isinstance(trigger, ast.Name) and trigger.id != written.id else [])
            cases = cases_of(names, call, self.facts) or (cases_of([written.id], call, self.facts) if len(names) > 1
                                                          else None)
            found = []
            for case in cases or ():
                value = case.values[written.id]
                here = case.facts is self.facts
                handed = self.resolve(value) if here else _resolve_in(value, case.facts)
                if handed is None or handed.function is None:
                    continue
                if not here:
                    handed.foreign = True
                given = case.values.get(trigger.id) if isinstance(trigger, ast.Name) else None
                if given is None:
                    given = trigger
                elif not here:
                    given = None  # (written in another module: its names are not read with this module's imports)
                found.append((handed, value if here else call, given, [] if here else case.via))
            if found:
                return found
        return [(target or Target(label=dotted(written) or _const(written) or ""), call, trigger, [])]

    def _wrapped_parameter(self, target: Optional[Target], written: ast.AST) -> Optional[ast.Name]:
        """The parameter of the enclosing function that ``target`` -- a def nested in it, registered by its
        name -- calls and never takes a claim around: a wrapper whose work is what that function is handed."""
        if target is None or target.function is None or target.foreign or not isinstance(written, ast.Name):
            return None
        wrapper = target.function
        outer = self.facts.enclosing_function(wrapper)
        if outer is None:
            return None
        calls = [n for n in walk_no_nested_functions(wrapper) if isinstance(n, ast.Call)]
        called = closed_over_parameter(wrapper, outer, calls)
        if called is None or any(self.analyzer.is_claim_function(c) for c in calls):
            return None
        return ast.copy_location(ast.Name(id=called, ctx=ast.Load()), written)

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

    def _claimed_at_every_caller(self, node: ast.AST) -> bool:
        """``node`` sits in a function every call of which the project shows under a won claim (``if await
        lease.acquire(): await lead(...)``): only the winner runs it (one call up)."""
        return process_roles.at_every_caller(node, self.facts, lambda call, other: (
            self.analyzer if other is self.facts else ClaimAnalyzer.of_module(other, _resolver)
        ).dominating_claim(call) is not None)

    def add(self, scheduled: Scheduled) -> None:
        if self.facts.enclosing_function(scheduled.registration) is not None \
                and (self.analyzer.dominating_claim(scheduled.registration) is not None
                     or (self.cross_file and self._claimed_at_every_caller(scheduled.registration))):
            scheduled.gated = True  # added only by the replica that won a claim: a leader's scheduler
        elif process_roles.dedicated_gate(scheduled.registration, self.facts) is not None or (
                self.cross_file and process_roles.gated_at_every_caller(scheduled.registration, self.facts)):
            # added only where a setting that programs of the project fix for their own process says so,
            # and those programs are one process each: the deployment dedicates a process to the job
            scheduled.gated = True
        elif self.cross_file and process_roles.run_by_single_programs(scheduled.registration, self.facts):
            # registered only in a program the deployment runs as one replica (a clock process of its own)
            scheduled.gated = True
        if scheduled.family == known.HUEY and self.cross_file:
            running = deployment.huey_schedulers(self.facts)
            if running is not None and not running:
                # every consumer of the replicas is told not to schedule (``--no-periodic``): the periodic
                # tasks are enqueued once, by a consumer the deployment runs as one process
                scheduled.coordinated = True
            elif running:
                launch = running[0]
                scheduled.related.append(Related(launch.path, launch.line, 1,
                                                 "this consumer runs the periodic scheduler, in every replica"))
        if scheduled.family == known.PERIODIQ:
            running = deployment.periodiq_schedulers(self.facts) if self.cross_file else None
            if not running:
                # one periodiq process enqueues each tick (or none is seen running: nothing repeats the actor)
                scheduled.coordinated = True
            else:
                scheduled.related.append(Related(running[0].path, running[0].line, 1,
                                                 "periodiq runs here, in every replica"))
        if self.single and scheduled.family in known.BEAT_FAMILIES:
            launch = self._embedded_beat()
            if launch is not None:
                scheduled.detail = f"{launch.where} runs `{' '.join(launch.words)}`"
                standalone = deployment_known.CELERY_WORKER_SUBCOMMAND not in launch.words
                scheduled.beat_replicas = launch.replicas if standalone else None
                scheduled.related.append(Related(launch.path, launch.line, 1, (
                    f"beat runs in each of this service's {launch.replicas} replicas" if standalone
                    else "beat runs inside this worker, in every replica")))
        self.found.append(scheduled)

    # -- decorators --------------------------------------------------------------------------
    def _decorators(self) -> None:
        facts = self.facts
        for function in facts.functions:
            for decorator in decorators(function, facts):
                if self._registry_decorator(function, decorator):
                    continue
                if self._scheduling_decorator(function, decorator):
                    continue
                if self._ticking_decorator(function, decorator):
                    continue
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
                if registration is None:
                    continue
                if registration.requires_keyword and registration.requires_keyword not in _keywords(decorator):
                    continue  # (``@dramatiq.actor`` with no ``periodic=``: an actor, not a schedule)
                trigger = _argument(decorator, registration.trigger_position, registration.trigger_keyword)
                scheduled = Scheduled(
                    registration.family, "@" + (dotted(decorator.func) or registration.method), decorator,
                    self._local(function), decorator, ctor, trigger,
                )
                if isinstance(decorator.func, ast.Attribute) and id(decorator.func.value) in self.made_elsewhere:
                    scheduled.related.append(self.made_elsewhere[id(decorator.func.value)])
                # one scheduler process fires it (beat not embedded in the workers): kept, as coordinated
                scheduled.coordinated = not self._allowed(registration.family)
                self._classify_trigger(scheduled)
                self.add(scheduled)

    def _scheduling_decorator(self, function: FunctionNode, decorator: ast.AST) -> bool:
        """``@every(minutes=5)`` (or ``@nightly``), a decorator of the project whose def registers the function it
        is handed with a library scheduler -- itself or through a wrapper calling it (``schedule.every(m).minutes
        .do(runner)``): the decorated function is that scheduler's job, judged as one registered directly."""
        found = self._project_decorator(decorator, _SCHEDULING_WORDS)
        if found is None:
            return False
        written, applied, home = found
        handed = positional_parameters(applied)[0]
        first, last = applied.lineno, applied.end_lineno or applied.lineno
        added = False
        for registered in ([] if id(home.tree) in _collecting else scheduled_in(home)):
            call = registered.call
            if registered.target.function is not None or registered.target.label != handed or call is None \
                    or not first <= getattr(call, "lineno", 0) <= last:
                continue
            scheduled = Scheduled(registered.family, "@" + (dotted(written) or handed), decorator,
                                  self._local(function), decorator, registered.ctor, None)
            scheduled.coordinated = registered.coordinated
            scheduled.related.append(Related(home.context.path, call.lineno, call.col_offset + 1,
                                             f"`{dotted(written) or handed}` registers the function it decorates here"))
            self.add(scheduled)
            added = True
        return added

    def _ticking_decorator(self, function: FunctionNode, decorator: ast.AST) -> bool:
        """``@repeat_every(seconds=3600)`` written in the project (or copied from fastapi-utils): a decorator whose
        def keeps, in a def nested in it, a loop that calls the function it is handed and sleeps; calling the
        decorated name starts that loop.  The decorated function is a ticker's job, as with the library."""
        found = self._project_decorator(decorator, TICKING_WORDS)
        if found is None:
            return False
        written, applied, home = found
        handed = positional_parameters(applied)[0]
        loop = loop_repeating(applied, handed, home) or timer_repeating(applied, handed, home)
        if loop is None:
            return False
        scheduled = Scheduled(known.REPEAT_EVERY, "@" + (dotted(written) or applied.name), decorator,
                              self._local(function), decorator, None, None)
        scheduled.related.append(Related(home.context.path, loop.lineno, loop.col_offset + 1,
                                         f"`{dotted(written) or applied.name}` calls the function it decorates "
                                         + ("in this loop, then sleeps" if isinstance(loop, ast.While)
                                            else "from this timer, which it arms again")))
        self.add(scheduled)
        return True

    def _project_decorator(self, decorator: ast.AST, words: Tuple[bytes, ...]):
        """(the decorator as written, the def it applies to the function, that def's module) for a decorator of
        the project whose module's text holds one of ``words`` (``@every(minutes=5)``: the def ``every`` returns;
        ``@nightly``: ``nightly`` itself), whose applied def takes the function first; None otherwise."""
        written = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not self.cross_file or not isinstance(written, (ast.Name, ast.Attribute)) \
                or (self.facts.qualify(written) or "") in known.DECORATORS:
            return None
        if not self._module_of_decorator_says(written, words):
            return None
        factory = self.resolve(written)
        if factory is None or factory.function is None:
            return None
        applied = returned_def(factory.function) if isinstance(decorator, ast.Call) else factory.function
        if applied is None or not positional_parameters(applied):
            return None
        return written, applied, factory.facts or self.facts

    def _module_of_decorator_says(self, written: ast.AST, words: Tuple[bytes, ...]) -> bool:
        """The text of the module that defines the decorator holds one of ``words`` (read before the decorator
        is resolved, which parses that module; most decorators are a framework's)."""
        qualified = self.bindings.imported_name(written) if isinstance(written, (ast.Name, ast.Attribute)) else None
        if qualified is None:
            source = "\n".join(self.facts.lines).encode("utf-8", "replace")
        else:
            module = qualified.replace(":", ".").rpartition(".")[0]
            path = project.module_path(module, project.roots_for(self.facts)) if module else None
            if path is None and "." in module:  # (``pkg.mod.factory.method``: the module one level up)
                path = project.module_path(module.rpartition(".")[0], project.roots_for(self.facts))
            if path is None:
                return False
            source = project.read_bytes(path)
        return any(word in source for word in words)

    def _registry_calls(self) -> None:
        """``periodic(seconds=60)(export)`` and ``register(export)``: a registering decorator called by hand."""
        facts = self.facts
        for name in sorted(registering_names(facts)):
            for call in facts.calls_by_name.get(name, ()):
                outer = parent(call)
                if isinstance(outer, _FUNCTION_TYPES + (ast.ClassDef,)):
                    continue  # a decorator: ``_decorators`` read it
                if isinstance(outer, ast.Call) and outer.func is call and outer.args:
                    registering, handed, site = call, outer.args[0], outer
                elif call.args:
                    registering, handed, site = call.func, call.args[0], call
                else:
                    continue
                target = self.resolve(handed) if isinstance(handed, (ast.Name, ast.Attribute)) else None
                if target is None or target.function is None:
                    continue
                registry = registration_of(registering, facts)
                if registry is not None:
                    self._add_registered(target, site, registering, registry)

    def _add_registered(self, target: Target, site: ast.AST, registering: ast.AST, registry) -> None:
        if registry.hands_to is not None:
            self._handed.append((target, site, registering, registry))
            return
        how = _registered_how(site, registering, registry)
        scheduled = Scheduled(known.REGISTRY_LOOP, how, site, target,
                              registering if isinstance(registering, ast.Call) else None)
        scheduled.detail = f"the loop in `{registry.caller.name}`" if registry.caller is not None else "a module-level loop"
        scheduled.related.extend(registry.where.via)
        scheduled.related.append(Related(registry.facts.context.path, registry.loop.lineno,
                                         registry.loop.col_offset + 1,
                                         f"this loop calls each function registered in `{registry.short}`, then pauses"))
        self.add(scheduled)

    def _handed_registrations(self) -> None:
        """``@every(trigger)`` putting a job into ``PLAN``, and ``for name, trigger, fn in PLAN:
        scheduler.add_job(fn, trigger)``: the job is registered with that scheduler, and runs as its
        registration call says (the family, a store that coordinates the replicas, a claim or a dedicated
        process around it). A receiver that is no scheduler registers nothing."""
        for target, site, registering, registry in self._handed:
            call = registry.hands_to
            handing = self._scheduling_of(registry)
            if handing is None:
                continue
            how = _registered_how(site, registering, registry)
            if handing.target.claimed:
                target = replace(target, claimed=True)  # each item handed over wrapped in a claim
            scheduled = Scheduled(handing.family, how, site, target,
                                  registering if isinstance(registering, ast.Call) else None)
            scheduled.periodic, scheduled.coordinated = handing.periodic, handing.coordinated
            scheduled.gated = handing.gated
            loop_name = registry.caller.name if registry.caller is not None else "the module"
            scheduled.detail = f"`{dotted(call.func) or call.func.attr}` in `{loop_name}`"  # type: ignore[attr-defined]
            scheduled.related.extend(r for r in handing.related if r.path != registry.facts.context.path)
            scheduled.related.append(Related(registry.facts.context.path, call.lineno, call.col_offset + 1,
                                             f"each function registered in `{registry.short}` is handed to the "
                                             "scheduler here"))
            self.add(scheduled)

    def _scheduling_of(self, registry) -> Optional[Scheduled]:
        """What the job discovery of the handing loop's module found at its registration call."""
        call = registry.hands_to
        if registry.facts is self.facts:
            found = self.found
        elif id(registry.facts.tree) in _collecting:
            return None  # (two modules handing each other's registries round: neither decides the other)
        else:
            found = scheduled_in(registry.facts)
        place = (call.lineno, call.col_offset)
        return next((s for s in found if s.call is not None and (s.call.lineno, s.call.col_offset) == place
                     and isinstance(s.call, ast.Call) and getattr(s.call.func, "attr", None) == call.func.attr),
                    None)

    def _registry_decorator(self, function: FunctionNode, decorator: ast.AST) -> bool:
        """``@periodic(seconds=60)`` / ``@register``: a project decorator that puts the function in a container
        a never-ending loop calls the items of, on every pass (``project/registries``)."""
        if isinstance(decorator, ast.Call):
            if (self.facts.callee(decorator) or "") in known.DECORATORS:
                return False
        elif not isinstance(decorator, (ast.Name, ast.Attribute)):
            return False
        registry = registration_of(decorator, self.facts)
        if registry is None:
            return False
        self._add_registered(self._local(function), decorator, decorator, registry)
        return True

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
        if isinstance(receiver, ast.Name) and self.bindings.imported_name(receiver) == known.SCHEDULE_MODULE:
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
                again = None
                once = False
                if family is not None and not self._allowed(family):
                    # One scheduler process fires what is registered, but a registration every replica's start-up
                    # makes again without a stable id adds another copy each time (rq-scheduler's ``cron``).
                    again = self._registered_again(call, family)
                    # otherwise it is kept as coordinated: one process runs each tick (``scheduled_once``)
                    once = again is None
                if family is None:
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
                written = _argument(call, registration.trigger_position, registration.trigger_keyword)
                for target, site, trigger, via in self.targets(target_expr, written, call):
                    scheduled = Scheduled(family, dotted(func) or name, site, target, call, ctor, trigger)
                    scheduled.related.extend(via)
                    if again is not None:
                        scheduled.related.extend(again)
                    if id(func.value) in self.made_elsewhere:
                        scheduled.related.append(self.made_elsewhere[id(func.value)])
                    if family in (known.APS3, known.FLASK_APS):
                        alias = _const(trigger)
                        if (trigger is None and not _has_splat(call)) or alias in known.APS3_ONE_OFF_TRIGGERS:
                            scheduled.periodic = False  # (a ``**trigger_kwargs`` splat may hold a periodic trigger)
                    if once or (family == known.APS4 and (
                            self._aps4_shared_store(ctor) if ctor is not None
                            else self.cross_file and _aps4_stores_all_shared(self.facts))):
                        scheduled.coordinated = True
                    self._classify_trigger(scheduled)
                    self.add(scheduled)

    def _registered_again(self, call: ast.Call, family: str) -> Optional[List[Related]]:
        """The way from start-up code every replica runs to a registration without a job id, for a scheduler that
        keeps its registrations in a shared store (each start stores another copy); None otherwise."""
        if family not in known.ID_KEYED_STORES or known.ID_KEYED_STORES[family] in _keywords(call) \
                or not self.cross_file:
            return None
        from ...project.reach import runs

        where = runs(call, self.facts, startup_only=True)
        if not where.every_replica:
            return None
        return [*where.entry, *where.calls, Related(self.facts.context.path, call.lineno, call.col_offset + 1,
                                                    "registered here without an id: every start adds another copy")]

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
        for decorator in decorators(function, self.facts):
            name = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
            if name.endswith(("on_after_configure.connect", "on_after_finalize.connect")):
                return True
        return False

    def _aps4_shared_store(self, ctor: ast.Call) -> bool:
        return _aps4_shared_store_in(ctor, self.facts)

    # -- module functions: arq cron(...), aiocron.crontab(spec, func), LoopingCall(f) ---------------
    def _module_functions(self) -> None:
        facts = self.facts
        for name in sorted({qualified.rsplit(".", 1)[-1] for qualified in known.FUNCTIONS}):
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
                written = _argument(call, registration.trigger_position, registration.trigger_keyword)
                for target, site, trigger, via in self.targets(target_expr, written, call):
                    if target.function is not None and _runs_handed_callable(target.function, target.facts or facts):
                        continue  # a generic wrapper (``Clock.looping_call(f)``): its work is whatever it is handed
                    scheduled = Scheduled(registration.family, dotted(call.func) or name, site, target, call, None,
                                          trigger)
                    scheduled.related.extend(via)
                    if registration.family == known.ARQ:
                        unique = _keywords(call).get(known.ARQ_UNIQUE_KEYWORD)
                        scheduled.coordinated = not _is_true_constant(unique, False)
                        scheduled.may_overlap = _arq_runs_may_overlap(call)
                    self._classify_trigger(scheduled)
                    self.add(scheduled)

    # -- schedule.every(...)....do(job) -----------------------------------------------------------
    def _schedule_library(self) -> None:
        facts = self.facts
        for call in facts.calls_by_name.get(known.SCHEDULE_DO, ()):
            func = call.func
            if not isinstance(func, ast.Attribute) or not call.args:
                continue
            every, at = self._every_chain(func.value)
            if every is None or not self._schedule_receiver(every):
                continue
            for target, site, _, via in self.targets(call.args[0], None, call):
                # ``.do(in_app_context, app, jobs.purge)``: a wrapper that calls what it is handed runs that work
                target = self._handed_to_wrapper(target, call) or target
                scheduled = Scheduled(known.SCHEDULE, "schedule.every(...)" + ("" if at is None else ".at(...)") + ".do",
                                      site, target, call, None, at)
                scheduled.related.extend(via)
                if at is not None and at.args and (not isinstance(_const(at.args[0]), str)
                                                   or _HH_MM.match(at.args[0].value)):
                    # ``.at(...)`` names a time of day (or of the hour), a configured one too: every replica
                    # fires at the same moment
                    scheduled.wall_clock = True
                self.add(scheduled)

    def _handed_to_wrapper(self, target: Target, call: ast.Call) -> Optional[Target]:
        """The project function ``.do(wrapper, *args)`` hands a wrapper that calls one of its parameters: the
        argument given for that parameter (``schedule`` passes ``args`` to the job on each run)."""
        function = target.function
        if function is None:
            return None
        parameters = positional_parameters(function)
        called = [n.func.id for n in walk_no_nested_functions(function) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Name) and n.func.id in parameters]
        if called and target.facts is not None and ClaimAnalyzer.of_module(
                target.facts, _resolver if self.cross_file else None).lead(function).claimed:
            return None  # the wrapper claims before it runs what it is handed: the wrapper is the job, claim and all
        handing = ast.Call(func=call.func, args=call.args[1:], keywords=call.keywords)
        for parameter in called:
            expr = argument_for(handing, function, parameter)
            work = self.resolve(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
            if work is not None and (work.function is not None or work.claimed):
                return work
            if isinstance(expr, ast.Name) and hands_registered_item(call, expr.id, self.facts):
                # ``for fn in self._entries: ....do(runner, app, fn)``: the work is each registered function,
                # judged where it is registered (``_handed_registrations``), not the wrapper around it
                return Target(label=expr.id)
        return None

    def _schedule_receiver(self, every: ast.Call) -> bool:
        func = every.func
        if isinstance(func, ast.Name):
            return self.bindings.imported_name(func) == f"{known.SCHEDULE_MODULE}.{known.SCHEDULE_ENTRY}"
        receiver = func.value
        imported = self.bindings.imported_name(receiver) if isinstance(receiver, ast.Name) else None
        if imported is not None:
            return imported == known.SCHEDULE_MODULE
        family, _ = self.scheduler_of(receiver)
        return family == known.SCHEDULE

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


def _registered_how(site: ast.AST, registering: ast.AST, registry) -> str:
    """How a registry's function registers a job, as written: ``@periodic`` on the def, ``register(...)`` called."""
    spelled = dotted(registering.func if isinstance(registering, ast.Call) else registering) or registry.short
    return f"{spelled}(...)" if site is not registering else "@" + spelled


#: ids of the trees whose jobs are being collected (a registry handed round between modules stops there)
_collecting: set = set()


#: How a module that hands functions to a library scheduler spells it.
_SCHEDULING_WORDS = (b".do(", b"add_job(", b"add_schedule(", b"scheduled_job(", b"periodic_task(", b"add_interval_job(",
                     b"add_cron_job(", b"crontab(", b"repeat_every(")


def _aps4_shared_store_in(ctor: ast.Call, facts: ModuleFacts) -> bool:
    """An APScheduler 4 scheduler made with a data store every replica shares (not the memory store)."""
    store = _argument(ctor, known.APS4_DATA_STORE_POSITION, known.APS4_DATA_STORE_KEYWORD)
    if store is None or _is_true_constant(store, None):
        return False
    origin = Bindings.of_module(facts).origin(store) if not isinstance(store, ast.Call) else store
    return not (isinstance(origin, ast.Call) and (facts.callee(origin) or "") in known.APS4_MEMORY_STORES)


_APS4_WORDS = ("AsyncScheduler", "Scheduler(")


def _aps4_stores_all_shared(facts: ModuleFacts) -> bool:
    """Every APScheduler 4 scheduler the project makes shares its data store (a scheduler handed to the
    registering function is one of them, whichever caller hands it); False when the project makes none."""
    root = project.search_root(facts)
    made = []
    for path in sorted({p for word in _APS4_WORDS for p in project.files_mentioning(word, root)}):
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        made.extend((call, other) for call in other.calls
                    if known.CONSTRUCTORS.get(other.callee(call) or "") == known.APS4)
    return bool(made) and all(_aps4_shared_store_in(call, other) for call, other in made)


def scheduled_in(facts: ModuleFacts) -> List[Scheduled]:
    """Every scheduled function registered in this module (cached: OG201 and OG202 share it), read through
    the module's forwarding helpers."""
    facts = through_helpers(facts)
    return facts.cached("scheduled-jobs", _collect)


def _collect(facts: ModuleFacts) -> List[Scheduled]:
    _collecting.add(id(facts.tree))
    try:
        return _Collector(facts).found
    finally:
        _collecting.discard(id(facts.tree))


def _resolve_in(value: ast.AST, facts: ModuleFacts) -> Optional[Target]:
    """The function a reference written in another module names (a def of its own, or what it imports)."""
    if isinstance(value, ast.Name):
        for statement in facts.tree.body:
            if isinstance(statement, _FUNCTION_TYPES) and statement.name == value.id:
                return Target(statement, facts, True, False, f"{own_module_name(facts)}.{value.id}")
    qualified = facts.qualify(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    if not qualified or facts.context.is_test:
        return None
    found = project.find_function(qualified, facts.config, project.roots_for(facts))
    if found is None or found[1].context.is_test:
        return None
    return Target(found[0], found[1], True, False, qualified.replace(":", "."))


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


def scheduled_once(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is a scheduled job the deployment runs once per tick (one scheduling process, a leader's
    scheduler): one run at a time does its work, as a claimed run does."""
    found = _scheduled_as(function, facts)
    if not found and facts.context.cross_file:
        # a queued task only such a job enqueues, each run killed before the next enqueue
        return enqueued_once_per_tick(function, facts, _once_period)
    return bool(found) and all((s.coordinated and not s.may_overlap) or s.gated for s in found) \
        and not _enqueued_by_code(function, facts)


def _scheduled_as(function: FunctionNode, facts: ModuleFacts) -> List[Scheduled]:
    def same(target: Target) -> bool:
        return target.function is function or _same_def(target, function, facts)

    found = [s for s in scheduled_in(facts) if same(s.target)]
    if not found and facts.context.cross_file:
        # registered in another module by name, not called there (a beat schedule's entry naming the task)
        found = [s for other in _modules_naming(function, facts) for s in scheduled_in(other) if same(s.target)]
    return found


def _once_period(function: FunctionNode, facts: ModuleFacts) -> Optional[int]:
    """The seconds between the runs of a job the deployment runs once per tick (the shortest where it is
    registered more than once); None for any other function."""
    found = _scheduled_as(function, facts)
    if not found or not all((s.coordinated and not s.may_overlap) or s.gated for s in found) \
            or _enqueued_by_code(function, facts):
        return None
    periods = [trigger_period(s.trigger, s.call, s.family in (known.APS3, known.APS4, known.FLASK_APS))
               for s in found]
    return None if None in periods or not periods else min(periods)  # type: ignore[type-var]


def _arq_runs_may_overlap(call: ast.Call) -> bool:
    """An arq ``cron(...)`` whose ticks come closer together than one run may last (``cron(f, second={0, 30})``,
    each run allowed 300 s): a run still going when the next tick fires overlaps it.  A field not written out
    literally is not read."""
    keywords = _keywords(call)
    timeout = keywords.get(known.ARQ_TIMEOUT_KEYWORD)
    if timeout is None:
        allowed = known.ARQ_DEFAULT_JOB_TIMEOUT
    elif isinstance(timeout, ast.Constant) and isinstance(timeout.value, (int, float)):
        allowed = timeout.value
    else:
        return False  # (a timedelta or a setting: not read)
    # The gap between ticks: the finest field with several values divides its span (``second={0, 30}``: 30 s);
    # the first field left to every value ticks once per its own value (``minute=None``: once a minute).
    for field, span in known.ARQ_CRON_FIELDS:
        value = keywords.get(field)
        if value is None:
            if field == "second":
                continue  # (0 by default: one tick a minute, unless the minute is given)
            return span // 60 < allowed if field == "minute" else span // 24 < allowed
        values = _literal_values(value)
        if values is None:
            return False
        if len(values) > 1:
            return span / len(values) < allowed
    return False


def _literal_values(node: ast.AST) -> Optional[List[object]]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _enqueued_by_code(function: FunctionNode, facts: ModuleFacts) -> bool:
    """Code of the project also puts the task on the queue (``dispatch.delay()``, ``on_commit(dispatch.delay)``,
    ``dispatch.apply_async(...)``): runs that a request or a signal starts overlap the scheduled one, on
    other workers."""
    if not facts.context.cross_file:
        return False
    spelled = re.compile(rb"\b" + re.escape(function.name.encode()) + rb"\s*\.\s*(?:"
                         + b"|".join(re.escape(m.encode()) for m in known.TASK_ENQUEUE_METHODS) + rb")\b")
    return any(spelled.search(project.read_bytes(path)) and not FileContext(path, facts.config).is_test
               for path in project.files_mentioning(function.name, project.search_root(facts)))


def _same_def(target: Target, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``target`` is ``function`` read from another copy of its module (the checked file's tree, and the one the
    project model parsed)."""
    other = target.function
    return other is not None and target.facts is not None and other.name == function.name \
        and other.lineno == function.lineno \
        and os.path.abspath(target.facts.context.path or "") == os.path.abspath(facts.context.path or "")


def scheduled_by_all(function: FunctionNode, facts: ModuleFacts) -> List[Scheduled]:
    """Where ``function`` is scheduled: in its own module (a decorator, a registration there) or in a module
    that calls it (a worker loop, a ticker's registration of another module's def), and not coordinated
    there (one scheduling process, a leader's scheduler)."""
    def same(target: Target) -> bool:
        return target.function is function or _same_def(target, function, facts)

    found = [s for s in scheduled_in(facts) if same(s.target)]
    if facts.context.cross_file:
        from ..renamed_callers import project_callers

        asked = {id(facts)}
        for _, other in project_callers(function, facts):
            if id(other) not in asked:
                asked.add(id(other))
                found.extend(s for s in scheduled_in(other) if same(s.target))
        for other in _modules_naming(function, facts):
            if id(other) not in asked:
                asked.add(id(other))
                found.extend(s for s in scheduled_in(other) if same(s.target))
    return [s for s in found if not (s.coordinated or s.gated)]


#: Modules read for a function handed on by name rather than called (``run_hourly(submitter.run, 5)``).
_MAX_NAMING_MODULES = 12


def _modules_naming(function: FunctionNode, facts: ModuleFacts) -> List[ModuleFacts]:
    """The other modules of the project whose text names ``function`` (a method: its class too), where it may
    be handed to a scheduler or a repeater without being called there."""
    owner = facts.enclosing_class(function)
    words = [function.name] + ([owner.name] if owner is not None else [])
    root = project.search_root(facts)
    paths = None
    for word in words:
        named = set(project.files_mentioning(word, root))
        paths = named if paths is None else paths & named
    own = os.path.abspath(facts.context.path or "")
    found = []
    for path in sorted(paths or ()):
        if os.path.abspath(path) == own:
            continue
        other = project.module_facts(path, facts.config)
        if other is not None and not other.context.is_test:
            found.append(other)
        if len(found) >= _MAX_NAMING_MODULES:
            break
    return found


def _runs_handed_callable(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is a def nested in one that was handed a callable (a parameter annotated ``Callable``) and
    passes it on or calls it: the wrapper a generic scheduler helper repeats, whose work is its callers'."""
    outer = facts.enclosing_function(function)
    if outer is None:
        return False
    arguments = outer.args
    handed = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
              if a.annotation is not None and "Callable" in (dotted(a.annotation.value if isinstance(
                  a.annotation, ast.Subscript) else a.annotation) or "")}
    if not handed:
        return False
    return any(isinstance(node, ast.Name) and node.id in handed and isinstance(node.ctx, ast.Load)
               for node in ast.walk(function))

