"""Registrations that are loops: asyncio and thread tickers started at start-up, a ``threading.Timer``
that re-arms itself."""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, walk, walk_no_nested_functions
from ...analysis.handed import argument_for, closed_over_parameter, positional_parameters
from ...knowledge import schedulers as known
from ...analysis.names import dotted
from ...project.loop_exits import leaves_on_its_own
from ...project.reach import Reach, runs
from ...project.registries import consumes, is_pause, repeating_loops, repeats_a_registry
from ...project.startup import StartupMap
from ...project import process_roles
from ...project.renamed_callers import project_callers
from ...project.summaries import callers
from ...model import Related
from .jobs import Scheduled, Target, _argument
from .ticking_decorators import timer_callback


def _deployed_command_loop(loop: ast.AST, facts: ModuleFacts) -> bool:
    """``loop`` is in the ``handle`` of a Django management command (``management/commands/<name>.py``) that a
    deployment file runs in every replica (``python manage.py <name>`` as a container's command, a Procfile
    process): the command is that replica's long-running program."""
    from ...project import deployment

    if not facts.context.cross_file:
        return False
    path = (facts.context.path or "").replace("\\", "/")
    handle = facts.enclosing_function(loop)
    while handle is not None:
        cli_names = _cli_command_names(handle)
        if cli_names:
            # ``@app.cli.command("sync-crm")`` (click, Typer, Flask) run as ``flask --app shop sync-crm``
            launch = deployment.launch_naming(facts, cli_names)
            return launch is not None and launch.per_replica
        if facts.enclosing_function(handle) is None:
            break
        handle = facts.enclosing_function(handle)
    if handle is None:
        return False
    if "/management/commands/" not in path or handle.name != "handle" or facts.enclosing_class(handle) is None:
        return False
    launch = deployment.launch_naming(facts, [facts.context.filename[:-3]])
    return launch is not None and launch.per_replica and any(
        word.endswith("manage.py") or word == "django-admin" for word in launch.words)


def _cli_command_names(function: ast.AST) -> List[str]:
    """The names a command-line decorator gives ``function`` (``@cli.command("sync-crm")``, or its own name
    when the decorator names none); empty when it is no such command."""
    names: List[str] = []
    for decorator in getattr(function, "decorator_list", ()):
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if last != _CLI_COMMAND:
            continue
        given = next((a.value for a in (call.args if call is not None else ())
                      if isinstance(a, ast.Constant) and isinstance(a.value, str)), None) or next(
            (k.value.value for k in (call.keywords if call is not None else ()) if k.arg == "name"
             and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)), None)
        names.append(given or function.name)
    return names


#: The decorator click, Typer and Flask's ``app.cli`` register a command with.
_CLI_COMMAND = "command"


#: Functions followed up from a timer's start to the code that first runs it.
_MAX_START_DEPTH = 3


def _operator_only(call: ast.Call, facts: ModuleFacts, starts_of, depth: int) -> bool:
    """``call`` runs only in a program a person runs: in its ``__main__`` block or a command, or in a plain
    function (no start-up, request or job code) that only such code calls.  A ``__main__`` block that never
    returns (it runs a scheduler's loop forever) is a worker a deployment keeps up, as many times as it
    runs replicas: not a person's program."""
    reach = Reach.of_module(facts)
    if reach.operator_reason(call) is not None:
        return not reach.main_never_returns(call)
    function = facts.enclosing_function(call)
    if function is None or depth >= _MAX_START_DEPTH or reach.function_reason(function) is not None:
        return False
    outer = starts_of(function, facts)
    return bool(outer) and all(_operator_only(c, f, starts_of, depth + 1) for c, f in outer)


def _loops_calling_parameters(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.While, str]]:
    """(loop, parameter) for each never-ending, pausing loop of ``function`` that calls one of its parameters."""
    parameters = {*positional_parameters(function), *(a.arg for a in function.args.kwonlyargs)}
    found = []
    for loop in repeating_loops(facts):
        if not any(above is function for above in ancestors(loop)):
            continue
        called = {n.func.id for n in walk_no_nested_functions(loop)
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in parameters}
        found.extend((loop, name) for name in sorted(called))
    return found


def _pumps_a_scheduler(loop: ast.While) -> bool:
    """The loop's work is a scheduler's pump (``schedule.run_pending()``): what runs is the jobs registered on
    that scheduler, judged where they are registered."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in known.SCHEDULER_PUMP_METHODS for n in walk_no_nested_functions(loop))


def pumps_only(function: FunctionNode) -> bool:
    """Every call ``function`` makes pumps a scheduler (``def run_pending(): schedule.run_pending()``): a pass
    calling it runs the jobs registered there, each judged where it is registered, not work of its own."""
    calls = [n for n in walk_no_nested_functions(function) if isinstance(n, ast.Call)]
    return bool(calls) and all(isinstance(c.func, ast.Attribute) and c.func.attr in known.SCHEDULER_PUMP_METHODS
                               for c in calls)


class LoopRegistrations:
    """Mixin of the collector: loops that call their work again and again."""

    # -- asyncio / thread tickers started at start-up ---------------------------------------------
    def _tickers(self) -> None:
        facts = self.facts
        startup = None
        for name in ("create_task", "ensure_future", "start_soon", *known.APP_TASK_METHODS, "Thread", "spawn",
                     "spawn_later", "spawn_n", "spawn_after"):
            for call in facts.calls_by_name.get(name, ()):
                family, target_expr = self._ticker_start(call, name)
                if target_expr is None:
                    continue
                # A def of this module, a method (of ``self`` or of a module-level instance), or a loop
                # imported from another module of the project, started here at start-up.
                target = self.resolve(target_expr) if isinstance(target_expr, (ast.Name, ast.Attribute)) else None
                if target is None or target.function is None:
                    continue
                function = target.function
                target_facts = target.facts or facts
                loop = self._ticker_loop(function, target_facts)
                if loop is None or repeats_a_registry(loop, target_facts) or _pumps_a_scheduler(loop):
                    continue
                if startup is None:
                    startup = StartupMap.of_module(facts)
                reason = startup.reason_for_node(call)
                gated = False
                if reason is None and self.cross_file:
                    # started by a function of this module that another module's start-up calls
                    # (``tk.start_background(settings, pool)`` in the app factory's lifespan)
                    reason, gated = self._started_elsewhere(call)
                if reason is None:
                    continue
                # A generic ticker (``forever(work, seconds)``) repeats the work it is handed: that work is the
                # job, judged (claims, effects) where it is defined.
                handed = self._handed_work(call, name, function, loop)
                repeater = ""
                if handed is not None:
                    repeater, target = target.label or function.name, handed
                scheduled = Scheduled(family, dotted(call.func) or name, call, target, call, repeater=repeater)
                scheduled.detail = reason
                scheduled.skip = lambda statement, _facts=target_facts: self._is_sleep_statement(statement, _facts)
                self.add(scheduled)
                if gated:
                    scheduled.gated = True

    def _started_elsewhere(self, call: ast.Call) -> Tuple[Optional[str], bool]:
        """(why every replica starts the ticker, whether only a process the project dedicates to it does) when
        ``call`` sits in a function of this module that start-up code of another module calls."""
        function = self.facts.enclosing_function(call)
        if function is None or self.facts.enclosing_function(function) is not None:
            return None, False
        callers = [(site, other) for site, other in project_callers(function, self.facts)
                   if other is not self.facts and not other.context.is_test]
        for site, other in callers:
            # (one call further at most: start-up code that starts a ticker through a longer chain of helpers
            # is rare, and each hop reads the callers of a function across the project)
            reach = runs(site, other, startup_only=True, max_hops=1)
            if reach.every_replica:
                gated = process_roles.dedicated_gate(site, other) is not None
                return f"{reach.reason}, through `{function.name}()`", gated
        if not callers:
            # handed to another module's start-up hook rather than called (``app.on_startup.append(start)``)
            from ...project.reach import handed_to_startup_elsewhere

            reach = handed_to_startup_elsewhere(function, self.facts)
            if reach is not None:
                return f"{reach.reason}, through `{function.name}()`", False
        return None, False

    def _handed_work(self, call: ast.Call, name: str, function: FunctionNode, loop: ast.While) -> Optional[Target]:
        """The project function a ticker's start hands it, when the ticker's loop calls that parameter:
        ``create_task(forever(alerts.push, 30))`` with ``async def forever(work, seconds)`` calling ``work()``
        on each pass, ``task_group.start_soon(forever, alerts.push, 30)``, ``Thread(target=every, args=(push, 30))``."""
        parameters = {*positional_parameters(function), *(a.arg for a in function.args.kwonlyargs)}
        called = [node.func.id for node in walk_no_nested_functions(loop) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name) and node.func.id in parameters]
        if not called:
            return self._closed_over_work(call, function, loop)
        # The call that hands the ticker its arguments, as one call whatever the start's spelling.
        if name in known.CALLABLE_AND_ARGS_STARTS:
            handing = ast.Call(func=call.func, args=call.args[1:], keywords=call.keywords)
        elif name == "Thread":
            handed_args = _argument(call, 3, "args")
            handing = ast.Call(func=call.func, keywords=[],
                               args=handed_args.elts if isinstance(handed_args, (ast.Tuple, ast.List)) else [])
        elif call.args and isinstance(call.args[0], ast.Call):
            handing = call.args[0]
        else:
            return None
        for parameter in called:
            expr = argument_for(handing, function, parameter)
            work = self.resolve(expr) if isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Lambda)) else None
            if work is not None and (work.function is not None or work.claimed):
                return work
        return None

    def _closed_over_work(self, call: ast.Call, function: FunctionNode, loop: ast.While) -> Optional[Target]:
        """``def run_daily(name, at, fn): def _loop(): while True: ...; fn(day)`` started in ``run_daily``: the
        loop repeats what ``run_daily``'s callers hand it, and that is the job (the first the project shows a
        caller hand it), judged where it is defined."""
        outer = self.facts.enclosing_function(function)
        if outer is None or self.facts.enclosing_function(call) is not outer:
            return None
        called = closed_over_parameter(function, outer, [node for node in walk_no_nested_functions(loop)
                                                          if isinstance(node, ast.Call)])
        if called is None:
            return None
        from ...project.handed_values import cases_of
        from .discovery import _resolve_in

        for case in cases_of([called], call, self.facts) or ():
            value = case.values[called]
            work = self.resolve(value) if case.facts is self.facts else _resolve_in(value, case.facts)
            if work is not None and (work.function is not None or work.claimed):
                return work
        return None

    def _ticker_start(self, call: ast.Call, name: str) -> Tuple[str, Optional[ast.AST]]:
        facts = self.facts
        if name == "Thread":
            if (facts.callee(call) or "") not in known.THREAD_CLASSES:
                return known.THREAD_TICKER, None
            return known.THREAD_TICKER, _argument(call, 1, "target")
        qualified = facts.callee(call) or ""
        if qualified in known.GREENLET_SPAWNERS:
            position = known.GREENLET_SPAWNERS[qualified]
            return known.THREAD_TICKER, call.args[position] if len(call.args) > position else None
        if name.startswith("spawn"):
            return known.THREAD_TICKER, None
        if not call.args:
            return known.ASYNCIO_TICKER, None
        started = False
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
                elif origin_name in known.APP_TASK_METHODS.get(name, ()):
                    started = True
            elif name in known.APP_TASK_METHODS and self._app_parameter(call.func.value, name):
                started = True  # ``app.add_task(...)`` on the app a Sanic listener is handed
        if not started:
            return known.ASYNCIO_TICKER, None
        argument = call.args[0]
        if name in known.CALLABLE_AND_ARGS_STARTS:
            return known.ASYNCIO_TICKER, argument
        if isinstance(argument, ast.Call) and not argument.args and not argument.keywords:
            return known.ASYNCIO_TICKER, argument.func
        if isinstance(argument, ast.Call):
            return known.ASYNCIO_TICKER, argument.func
        return known.ASYNCIO_TICKER, None

    def _app_parameter(self, receiver: ast.AST, method: str) -> bool:
        """``receiver`` is a parameter annotated with an app class that runs tasks by ``method`` (``app: Sanic``)."""
        function = self.facts.enclosing_function(receiver)
        if not isinstance(receiver, ast.Name) or function is None:
            return False
        arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        return any(a.arg == receiver.id and a.annotation is not None
                   and (self.facts.qualify(a.annotation) or "") in known.APP_TASK_METHODS[method] for a in arguments)

    def _sleep_call(self, node: ast.AST, facts: Optional[ModuleFacts] = None) -> bool:
        return is_pause(node, facts or self.facts)

    def _is_sleep_statement(self, statement: ast.stmt, facts: Optional[ModuleFacts] = None) -> bool:
        """A pause of the loop: ``await asyncio.sleep(delay)``, or one taken only while time is left (``if delay
        > 0: await asyncio.sleep(delay)``) -- still the loop's wait, not the work a claim must lead."""
        if isinstance(statement, ast.If) and not statement.orelse and statement.body:
            return all(self._is_sleep_statement(inner, facts) for inner in statement.body)
        return isinstance(statement, ast.Expr) and self._sleep_call(statement.value, facts)

    def _ticker_loop(self, function: FunctionNode, facts: Optional[ModuleFacts] = None) -> Optional[ast.While]:
        for node in walk_no_nested_functions(function):
            if not isinstance(node, ast.While) or leaves_on_its_own(node):
                continue  # (a loop that leaves on its own, when its work is done or a deadline passes, retries)
            nodes = list(walk_no_nested_functions(node))
            if not any(self._sleep_call(n, facts) for n in nodes + [node.test]):
                continue
            if any(self._consumes(n) for n in nodes):
                return None
            return node
        return None

    _consumes = staticmethod(consumes)

    # -- a long-running program's own loop -----------------------------------------------------------
    def _worker_loops(self) -> None:
        """``while True: export(); time.sleep(60)`` that a program runs from its ``__main__`` block (in the block,
        or in a function of the module the block calls), in a program a deployment file runs in every replica:
        the program never ends, and every copy runs each pass's work -- a scheduler, whoever wrote it.  Each project
        function a pass calls as a statement is a job of it, judged as a ticker's work is (claims, effects)."""
        facts = self.facts
        reach = None
        for loop in repeating_loops(facts):
            nodes = list(walk_no_nested_functions(loop))
            if reach is None:
                reach = Reach.of_module(facts)
            # A program a deployment file runs in every replica (a container's command, a Procfile process):
            # a worker nothing shows deployed may be the one process of its kind, and is not reported.
            if not (reach.programs and reach.run_by_main_block(loop)) and not _deployed_command_loop(loop, facts) \
                    and not _reached_by_a_program(loop, facts):
                continue
            # the pause between passes as written (``time.sleep(60)``): the period a claim is taken for
            pause = next((_argument(n, 0, None) for n in nodes if isinstance(n, ast.Call) and self._sleep_call(n)),
                         None)
            for node in nodes:
                # the pass's work: a call made as a statement, whose result is kept (``count = send(day)``), or
                # whose result decides the pause (``if relay(conn) < batch: time.sleep(idle)``)
                if isinstance(node, ast.If) and node is not loop:
                    calls = [c.value if isinstance(c, ast.Await) else c for c in ast.iter_child_nodes(node.test)]
                    call = next((c for c in [node.test, *calls] if isinstance(c, ast.Call)), None)
                elif isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) and node.value is not None:
                    call = node.value.value if isinstance(node.value, ast.Await) else node.value
                else:
                    continue
                if not isinstance(call, ast.Call) or self._sleep_call(call) \
                        or not isinstance(call.func, (ast.Name, ast.Attribute)):
                    continue
                target = self.resolve(call.func)
                if (target is None or target.function is None) and getattr(call, "_og_helper", None):
                    target = self._inlined_helper(call._og_helper)
                if target is None or target.function is None or pumps_only(target.function):
                    continue
                scheduled = Scheduled(known.WORKER_LOOP, "while True", call, target, call, trigger=pause,
                                      value_kept=not isinstance(node, (ast.Expr, ast.If)))
                scheduled.related.append(Related(facts.context.path, loop.lineno, loop.col_offset + 1,
                                                 "the program repeats this loop until it is stopped"))
                self.add(scheduled)

    # -- a program handing its work to a repeater --------------------------------------------------------
    def _handed_to_repeaters(self) -> None:
        """``await run_hourly(submitter.run, 5)`` in a program a deployment file runs in every replica (its
        ``__main__`` block, or a function of the module the block calls), where ``run_hourly`` -- of this module
        or another -- calls what its parameter was handed on every pass of a loop that pauses and never ends:
        the handed function is a job of that loop, as a ticker's handed work is."""
        facts = self.facts
        reach = Reach.of_module(facts)
        if not reach.programs:
            return
        for node in walk(facts.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
                    and (node.args or node.keywords) and reach.run_by_main_block(node)):
                continue
            repeater = self.resolve(node.func)
            if repeater is None or repeater.function is None:
                continue
            function, repeater_facts = repeater.function, repeater.facts or facts
            for loop, parameter in _loops_calling_parameters(function, repeater_facts):
                work_expr = argument_for(node, function, parameter)
                work = self.resolve(work_expr) if isinstance(work_expr, (ast.Name, ast.Attribute, ast.Call,
                                                                         ast.Lambda)) else None
                if work is None or (work.function is None and not work.claimed):
                    continue
                scheduled = Scheduled(known.WORKER_LOOP, dotted(node.func) or function.name, node, work, node,
                                      repeater=repeater.label or function.name)
                scheduled.related.append(Related(repeater_facts.context.path, loop.lineno, loop.col_offset + 1,
                                                 f"`{function.name}` calls `{parameter}` on every pass of this loop"))
                self.add(scheduled)

    def _inlined_helper(self, name: str) -> Optional[Target]:
        """The module's own function a pass called before its one call was read in its place (``charge_due()``
        doing ``httpx.post(...)``): that function is the job, as written in the module."""
        facts = self.facts
        for where in (facts, getattr(facts, "origin", None)):
            function = next((f for f in (where.functions_by_name.get(name, ()) if where is not None else ())
                             if where.enclosing_function(f) is None and where.enclosing_class(f) is None), None)
            if function is not None:
                return Target(function, where, False, False, name)
        return None

    # -- threading.Timer that re-arms itself --------------------------------------------------------
    def _timers(self) -> None:
        facts = self.facts
        armed = [(call, timer_callback(call, facts)) for name in ("Timer", *known.DELAYED_CALL_METHODS)
                 for call in facts.calls_by_name.get(name, ())]
        for call, target_expr in armed:
            function = facts.enclosing_function(call)
            if function is None or target_expr is None:
                continue
            found = self.resolve(target_expr) if isinstance(target_expr, (ast.Name, ast.Attribute)) else None
            # a nested def re-arms itself by its own name (``def _fire(): ...; Timer(300, _fire).start()``)
            same = (found is not None and found.function is function) or (
                isinstance(target_expr, ast.Name) and target_expr.id == function.name
                and facts.enclosing_function(function) is not None)
            # ``_arm()`` makes ``Timer(60, _tick)`` and ``_tick`` calls ``_arm()`` when done: the two re-arm each
            # other, and the work is ``_tick``'s
            job = function if same else (found.function if found is not None and found.function is not None
                                         and not found.foreign and _arms_again(found.function, function, facts)
                                         else None)
            if job is None or self._started_only_by_operators(function) or _runs_what_it_closes_over(job, facts):
                continue  # (a decorator's timer runs the function it decorates: that is the job, found there)
            how = ast.unparse(call.func)  # as written (``asyncio.get_running_loop().call_later``)
            scheduled = Scheduled(known.TIMER, how, call, self._local(job), call)
            scheduled.skip = self._is_timer_statement
            self.add(scheduled)

    def _started_only_by_operators(self, function: FunctionNode) -> bool:
        """Every first start of the timer's function is a program's own code a person runs (a script's
        ``__main__`` block, a command), directly or through functions only such code calls: the loop runs in
        that one process, as a ticker started there does.  A function nothing is seen starting may be
        started anywhere, and stays reported."""
        starts = self._starts_of(function, self.facts)
        return bool(starts) and all(_operator_only(call, facts, self._starts_of, 0) for call, facts in starts)

    def _starts_of(self, function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
        """Calls of ``function`` outside its own body: in its module (also through an instance, as the
        collector resolves them) and, reading the project, in the modules that import it."""
        found: List[Tuple[ast.Call, ModuleFacts]] = []
        for call in facts.calls_by_name.get(function.name, ()):
            if any(above is function for above in ancestors(call)):
                continue
            if facts is self.facts:
                target = self.resolve(call.func) if isinstance(call.func, (ast.Name, ast.Attribute)) else None
                if target is not None and target.function is function:
                    found.append((call, facts))
            elif isinstance(call.func, ast.Name) and facts.enclosing_function(call) is not function:
                found.append((call, facts))
        found.extend((call, other) for call, other in callers(function, facts) if other is not facts)
        return found

    def _is_timer_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (self.facts.callee(node) or "") in known.TIMER_CLASSES

    def _is_timer_statement(self, statement: ast.stmt) -> bool:
        if not isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)):
            return False
        if any(self._is_timer_call(n) for n in walk(statement)):
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


def _runs_what_it_closes_over(job: FunctionNode, facts: ModuleFacts) -> bool:
    """``tick`` calls ``fn``, a parameter of a def around it (``def decorator(fn): def tick(): fn() ...``): a
    generic repeater whose work is whatever each use hands it."""
    outer = facts.enclosing_function(job)
    handed = set()
    while outer is not None:
        handed |= {a.arg for a in (*outer.args.posonlyargs, *outer.args.args, *outer.args.kwonlyargs)}
        outer = facts.enclosing_function(outer)
    return bool(handed) and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in handed
                                for n in walk_no_nested_functions(job))


def _calls_by_name(function: FunctionNode, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in walk_no_nested_functions(function))


#: How many of the module's functions a callback may pass through before it arms its timer again.
_MAX_REARM_STEPS = 3


def _arms_again(callback: FunctionNode, arming: FunctionNode, facts: ModuleFacts) -> bool:
    """``callback``, when it runs, calls ``arming`` again: itself, or through functions of the module it calls
    or starts as a task (``_fire`` starts ``self._tick()``, whose ``finally`` calls ``self._arm(...)``): a
    function by its name, a method of the same class through ``self``."""
    owner = facts.enclosing_class(arming)
    seen, pending = {id(callback)}, [callback]
    for _ in range(_MAX_REARM_STEPS):
        following = []
        for function in pending:
            for node in walk_no_nested_functions(function):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Name):
                    candidates = [f for f in facts.functions_by_name.get(func.id, ())
                                  if facts.enclosing_class(f) is None]
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                        and owner is not None:
                    candidates = [f for f in facts.functions_by_name.get(func.attr, ())
                                  if facts.enclosing_class(f) is owner]
                else:
                    continue
                if any(f is arming for f in candidates):
                    return True
                following += [f for f in candidates if id(f) not in seen]
                seen.update(id(f) for f in candidates)
        pending = following
    return False


def _reached_by_a_program(loop: ast.While, facts: ModuleFacts) -> bool:
    """The loop's function is called, through the project, from the ``__main__`` code of a program a deployment
    file runs in every replica (``python -m relay`` whose ``__main__.py`` runs ``main()``, which awaits
    ``worker.run()``): the program is that loop.  Command line only."""
    from ..startup import is_per_replica_program, per_replica_program_files

    if not facts.context.cross_file or not per_replica_program_files(facts.config):
        return False  # (no program of the project runs in every replica: reach is not asked)
    from ..reach import runs

    answer = runs(loop, facts, startup_only=True)
    # (the way there begins in the program's own module: its module-level code or its ``__main__`` block)
    return answer.every_replica and bool(answer.calls) and is_per_replica_program(facts.config, answer.calls[0].path)
