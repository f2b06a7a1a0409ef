"""Where code runs: on every replica (and why), only when an operator runs it (and why), or unknown.

One answer for a function or a call site, asked by every rule that cares (OG401/OG403 schema writes and
migration runners, OG603 start-up seeding):

- within a module (``Reach``): start-up code as ``StartupMap`` knows it (framework hooks, lifespan,
  ``AppConfig.ready``, import-time calls, programs a deployment file runs in every replica), plus a server's
  ``__main__`` block and a click/typer command that starts the server; request handlers and jobs; and
  operator code: management commands, files under scripts/ or bin/, ``manage.py``, click/typer/invoke
  commands, a ``__main__`` block that starts no server;
- across modules (``runs``), only when ``facts.context.cross_file``: the callers of a function in the project
  (``renamed_callers.project_callers``: also through import aliases and re-exports), hop by hop, until one
  runs on every replica or only for an operator.

The answer carries the way there as ``Related`` places, entry point first, for a rule to attach to its finding.
Under flake8 there is no project: the same question answers from the one file.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..analysis.applied_decorators import decorators
from ..analysis.executed_sql import bound_value
from ..analysis.facts import (FunctionNode, ModuleFacts, ancestors, body_nodes, call_name, walk,
                              walk_no_nested_functions)
from ..analysis.handed import handed_callable, handed_sites
from ..analysis.names import dotted
from ..knowledge import schedulers as known_schedulers
from ..knowledge import startup as known
from ..model import Related
from . import deployment
from .loop_exits import endless
from .startup import StartupMap, is_main_guard, is_unguarded_script, per_replica_programs
from .renamed_callers import project_callers


def enclosing_function(node: ast.AST) -> Optional[FunctionNode]:
    """The function whose body runs ``node``; a lambda runs with the function that passes it."""
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return above
        if isinstance(above, ast.ClassDef):
            return None
    return None


def _in_class_body(node: ast.AST) -> bool:
    for above in ancestors(node):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if isinstance(above, ast.ClassDef):
            return True
    return False


def _main_block(node: ast.AST) -> Optional[ast.If]:
    for above in ancestors(node):
        if isinstance(above, ast.If) and is_main_guard(above.test):
            return above
    return None


def _in_management_commands(context) -> bool:
    """The file is a Django management command's module (``<app>/management/commands/<name>.py``)."""
    parts = context.parts[:-1]
    first, second = known.SCRIPT_COMMAND_PARTS
    return any(parts[i] == first and parts[i + 1] == second for i in range(len(parts) - 1))


def _in_ticking_loop(node: ast.AST, function: Optional[FunctionNode], facts: ModuleFacts) -> bool:
    """``node`` is in the body of an endless loop of its function that sleeps between passes (a thread or task
    started at start-up that then works on every tick)."""
    for above in ancestors(node):
        if above is function or isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(above, ast.While) and endless(above) and any(
                isinstance(call, ast.Call) and (facts.callee(call) or "") in known_schedulers.SLEEPS
                for call in walk_no_nested_functions(above)):
            return True
    return False


def _imports_module(facts: ModuleFacts, prefixes: Iterable[str]) -> bool:
    targets = tuple(prefixes)
    return any(
        value == prefix or value.startswith(prefix + ".")
        for value in facts.imports.aliases.values() for prefix in targets
    )


def _decorator_names(facts: ModuleFacts, function: FunctionNode) -> Iterator[Tuple[ast.AST, str, str]]:
    """(decorator, last name, qualified name) of each decorator, calls unwrapped."""
    for decorator in decorators(function, facts):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        last = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        yield decorator, last, facts.qualify(target) or ""


_STARTUP_CODE = "which runs at start-up"
_CALLED_FROM = re.compile(r"called from start-up code \((\w+)\)")


class Reach:
    """Within one module: why code runs on every replica (start-up from ``StartupMap``, plus a server's
    ``__main__`` block and a server-starting command; request or job code), and what is a one-off command
    a person runs."""

    _MAX_DEPTH = 50

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.startup = StartupMap.of_module(facts)
        self._module_functions: Dict[str, FunctionNode] = {
            node.name: node for node in facts.tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self._main_blocks = [node for node in facts.tree.body if isinstance(node, ast.If) and is_main_guard(node.test)]
        #: deployment steps that run this module as a program in every replica (``python -m app.migrate``
        #: in the container's entrypoint): its module level and ``__main__`` block are start-up code.
        self.programs: List[deployment.Step] = per_replica_programs(facts)
        self._server_mains = {id(block) for block in self._main_blocks
                              if self.programs or self._starts_server(block)}
        self.extra: Dict[int, str] = {}
        self._startup_extra: Set[int] = set()  # ids in ``extra`` that run at start-up (not request/job)
        self._on_demand: Set[int] = set()  # ids in ``extra`` run once per queued task (``on_demand``)
        self._per_request: Set[int] = set()  # ids in ``extra`` run once per request (``per_request``)
        self._command_makers: Dict[str, bool] = {}  # decorator as spelled -> it makes commands
        self._entries: Set[int] = set()  # request handlers and jobs themselves (not what they call)
        self._find_server_main_callees()
        self._find_server_commands()
        self._find_deployed_commands()
        self._find_request_and_job_code()

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "Reach":
        return facts.cached("reach", cls)

    # -- one-off code ----------------------------------------------------------------------------------
    @property
    def module_is_one_off(self) -> bool:
        """A script a person runs: a management command, a file under scripts/ or bin/, ``manage.py``,
        a module whose ``__main__`` block does not start a server (its module level is the script's), or
        one with no guard that runs its program at module level and that nothing imports."""
        context = self.facts.context
        if self.programs:
            return False
        parts = context.parts[:-1]
        if _in_management_commands(context):
            return True
        if any(part in known.SCRIPT_DIRECTORIES for part in parts) or context.filename == "manage.py":
            return True
        return bool(self._main_blocks) and not self._server_mains or is_unguarded_script(self.facts)

    def is_command(self, function: FunctionNode) -> bool:
        for decorator, last, qualified in _decorator_names(self.facts, function):
            if qualified in known.COMMAND_DECORATOR_QUALIFIED or qualified.startswith(known.COMMAND_DECORATOR_PREFIXES):
                return True
            if last in known.COMMAND_DECORATORS:
                return True
            if self._makes_commands(decorator):
                return True
        cls_node = self.facts.enclosing_class(function)
        if cls_node is not None and function.name == "handle":
            return any((self.facts.qualify(base) or "") in known.MANAGEMENT_COMMAND_BASES for base in cls_node.bases)
        return False

    def _makes_commands(self, decorator: ast.AST) -> bool:
        """A decorator of the project that turns what it decorates into a command line's command: its def (or
        its class's ``__call__``) applies ``click.command``/``typer``'s (``@notify_command()`` whose ``__call__``
        wraps the function in ``click.command(name=...)``)."""
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted(func)
        if not name:
            return False
        cached = self._command_makers.get(name)
        if cached is None:
            cached = self._command_makers[name] = self._applies_command_decorator(func)
        return cached

    def _applies_command_decorator(self, func: ast.AST) -> bool:
        from .definitions import definition

        found = definition(self.facts.qualify(func) or dotted(func) or "", self.facts)
        if found is None:
            return False
        body, where = found
        return any(isinstance(node, (ast.Name, ast.Attribute))
                   and (where.qualify(node) or "") in known.COMMAND_DECORATOR_QUALIFIED for node in walk(body))

    def _served_by_deployment(self, command: Optional[FunctionNode]) -> bool:
        """A Django management command a deployment file keeps running in every replica (a Deployment's container
        running ``manage.py process_outbox``): a worker, not something an operator runs once."""
        if (command is not None and command.name != "handle") or not self.facts.context.cross_file:
            return False
        from . import deployment

        launch = deployment.launch_naming(self.facts, [os.path.splitext(self.facts.context.filename)[0]])
        return launch is not None and launch.per_replica and any(
            os.path.basename(word) == "manage.py" or word.endswith("django-admin") for word in launch.words)

    # -- start-up --------------------------------------------------------------------------------------
    def _starts_server(self, block: ast.AST) -> bool:
        """The block, or a function of this module it calls (``main()`` running ``uvicorn.run``), starts a server."""
        return any(isinstance(node, ast.Call) and self._runs_server(node) for node in self._run_by(block))

    def main_never_returns(self, node: ast.AST) -> bool:
        """The ``__main__`` block around ``node``, or a function of this module it calls, runs a loop with no
        way out (``while True:`` with no ``break``): the program is a long-running worker that a deployment
        keeps up, not a command that does its work and ends."""
        block = _main_block(node)
        return block is not None and any(endless(loop) for loop in self._run_by(block) if isinstance(loop, ast.While))

    def run_by_main_block(self, node: ast.AST) -> bool:
        """``node`` is in the module's ``__main__`` block or in a function of the module that block calls
        (transitively): it runs when the module is run as a program."""
        if not self._main_blocks:
            return False
        run = self.facts.cached("reach:run-by-main", lambda _facts: {
            id(found) for block in self._main_blocks for found in self._run_by(block)})
        return id(node) in run

    def _run_by(self, scope: ast.AST) -> Iterator[ast.AST]:
        """The nodes of ``scope`` and of the functions of this module it calls, transitively."""
        scopes: List[ast.AST] = [scope]
        seen: Set[int] = set()
        while scopes:
            for node in walk_no_nested_functions(scopes.pop()):
                yield node
                if not isinstance(node, ast.Call):
                    continue
                for callee_function in (self._function_named(node.func), self._handed_function(node)):
                    if callee_function is not None and id(callee_function) not in seen and len(seen) < self._MAX_DEPTH:
                        seen.add(id(callee_function))
                        scopes.append(callee_function)

    def _runs_server(self, node: ast.Call) -> bool:
        facts = self.facts
        if (facts.callee(node) or "") in known.SERVER_RUNNERS:
            return True
        func = node.func
        return (isinstance(func, ast.Attribute) and func.attr in known.SERVER_RUN_METHODS
                and self._is_web_app(func.value))

    def _is_web_app(self, receiver: ast.AST) -> bool:
        facts = self.facts
        if isinstance(receiver, ast.Call):
            callee = facts.callee(receiver) or ""
            return callee in known.WEB_APP_CONSTRUCTORS or call_name(receiver) in known.APP_FACTORY_NAMES
        if isinstance(receiver, ast.Name):
            if (facts.qualify(receiver) or "") in known.WEB_APP_CONSTRUCTORS:
                return False  # ``Flask.run`` on the class itself is not a server start
            value = bound_value(receiver, facts)
            if isinstance(value, ast.Call):
                return self._is_web_app(value)
            return receiver.id in known.SERVER_RECEIVER_NAMES
        return False

    def _find_server_main_callees(self) -> None:
        pending: List[FunctionNode] = []
        for block in self._main_blocks:
            if id(block) not in self._server_mains:
                continue
            for node in walk_no_nested_functions(block):
                for callee in self._called_functions(node):
                    if id(callee) not in self.extra:
                        self.extra[id(callee)] = "called from the server's __main__ block"
                        self._startup_extra.add(id(callee))
                        pending.append(callee)
        self._propagate(pending, _STARTUP_CODE)

    def _find_server_commands(self) -> None:
        """A click/typer command that starts the server (``litellm --port``, ``app serve``: its body, or a
        function of this module it calls, runs ``uvicorn.run`` / ``app.run`` / ``reactor.run``) is how every
        replica starts, not a one-off a person runs: what it calls runs at start-up."""
        pending: List[FunctionNode] = []
        for function in self.facts.functions:
            if id(function) in self.extra or not self._is_decorated_command(function):
                continue
            if self._starts_server(function):
                self.extra[id(function)] = f"in the command {function.name}(), which starts the server"
                self._startup_extra.add(id(function))
                pending.append(function)
        self._propagate(pending, _STARTUP_CODE)

    def _find_deployed_commands(self) -> None:
        """A Django management command a deployment file runs in every replica (``python manage.py seed_plans``
        in the web container's entrypoint, before the server; or the container's own command): its ``handle``
        runs as each replica starts, not when a person asks.  One that loops until stopped is a worker."""
        context = self.facts.context
        if not _in_management_commands(context) or not self._served_by_deployment(None):
            return
        stem = os.path.splitext(context.filename)[0]
        pending: List[FunctionNode] = []
        for function in self.facts.functions:
            if function.name != "handle" or not self.is_command(function) or id(function) in self.extra:
                continue
            if any(isinstance(node, ast.While) and endless(node) for node in walk_no_nested_functions(function)):
                continue  # a worker the container keeps running: its passes are jobs, not start-up
            self.extra[id(function)] = (f"in the management command {stem}, which a deployment file runs in "
                                        "every replica")
            self._startup_extra.add(id(function))
            pending.append(function)
        self._propagate(pending, _STARTUP_CODE)

    def _is_decorated_command(self, function: FunctionNode) -> bool:
        return any(
            qualified in known.COMMAND_DECORATOR_QUALIFIED or qualified.startswith(known.COMMAND_DECORATOR_PREFIXES)
            or last in known.COMMAND_DECORATORS
            for _, last, qualified in _decorator_names(self.facts, function)
        )

    # -- request and job code ----------------------------------------------------------------------------
    def _find_request_and_job_code(self) -> None:
        facts = self.facts
        pending: List[FunctionNode] = []
        imports_django = _imports_module(facts, ("django", "rest_framework"))
        imports_responders = _imports_module(facts, known.RESPONDER_MODULES)

        def mark(function: Optional[FunctionNode], reason: str, on_demand: bool = False,
                 per_request: bool = False) -> None:
            if function is not None and id(function) not in self.extra and self.startup.reason(function) is None:
                self.extra[id(function)] = reason
                self._entries.add(id(function))
                if on_demand:
                    self._on_demand.add(id(function))
                if per_request:
                    self._per_request.add(id(function))
                pending.append(function)

        for function in facts.functions:
            for decorator, last, qualified in _decorator_names(facts, function):
                if qualified.startswith(known.COMMAND_DECORATOR_PREFIXES):
                    continue
                if (last in known.ROUTE_DECORATORS and isinstance(decorator, ast.Call) and decorator.args
                        and isinstance(decorator.args[0], ast.Constant) and isinstance(decorator.args[0].value, str)
                        and (decorator.args[0].value.startswith("/") or decorator.args[0].value == "")):
                    # (``@router.post("")``: the router's own prefix is the path)
                    mark(function, f"in the request handler {function.name}()", per_request=True)
                elif last in known.REQUEST_HOOK_DECORATORS and isinstance(decorator, (ast.Attribute, ast.Call)):
                    # ``@app.before_request``, ``@app.middleware("http")``: every request runs through it
                    mark(function, f"in the request hook {function.name}()", per_request=True)
                elif last in known.JOB_DECORATORS or qualified.rsplit(".", 1)[-1] in known.JOB_DECORATORS:
                    # (also imported under another name)
                    mark(function, f"in the job {function.name}()",
                         on_demand=qualified.rsplit(".", 1)[-1] in known.QUEUED_TASK_DECORATORS)
            if imports_django and self._first_parameter(function) == known.REQUEST_PARAMETER:
                mark(function, f"in the request handler {function.name}()", per_request=True)
            elif self._takes_a_request(function):
                # ``async def update_flag(request: Request)``: handed the request, it runs while one is served,
                # whichever route table (of this module or another) names it
                mark(function, f"in the request handler {function.name}()", per_request=True)
            elif imports_responders and self._is_responder(function):
                mark(function, f"in the request handler {function.name}()", per_request=True)
        for call in facts.calls_named(*known.JOB_REGISTRATION_METHODS):
            if call.args:
                mark(self._function_named(call.args[0]), "in a scheduled job")
        self._propagate(pending, "which is request/job code")

    def _takes_a_request(self, function: FunctionNode) -> bool:
        """A parameter of ``function`` is annotated with a web framework's request or connection type."""
        arguments = function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            annotation = argument.annotation
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                continue  # (a string annotation: not read)
            if isinstance(annotation, (ast.Name, ast.Attribute)) \
                    and (self.facts.qualify(annotation) or "") in known.REQUEST_TYPES:
                return True
        return False

    def _is_responder(self, function: FunctionNode) -> bool:
        """A Falcon responder: ``def on_post(self, req, resp, ...)`` of a class (``on_get_item`` too)."""
        positional = function.args.posonlyargs + function.args.args
        return (known.RESPONDER_METHOD.fullmatch(function.name) is not None and len(positional) >= 3
                and positional[0].arg == "self" and self.facts.enclosing_class(function) is not None)

    @staticmethod
    def _first_parameter(function: FunctionNode) -> str:
        names = [a.arg for a in function.args.posonlyargs + function.args.args]
        if names and names[0] in ("self", "cls"):
            names = names[1:]
        return names[0] if names else ""

    # -- propagation -----------------------------------------------------------------------------------------
    def _function_named(self, node: ast.AST) -> Optional[FunctionNode]:
        if isinstance(node, ast.Name):
            return self._module_functions.get(node.id)
        return self.facts.module_method(node)

    def _handed_function(self, call: ast.Call, caller: Optional[FunctionNode] = None) -> Optional[FunctionNode]:
        """The function of this module ``call`` runs because it is handed to it (``asyncio.to_thread(upgrade)``,
        ``threading.Thread(target=self._poll)``, ``run_in_threadpool(partial(seed, db))``)."""
        handed = handed_callable(call, self.facts)
        if handed is None:
            return None
        return self._referenced_function(handed, caller)

    def _called_functions(self, node: ast.AST, caller: Optional[FunctionNode] = None) -> List[FunctionNode]:
        """The functions of this module a call runs: the one it calls, and the one it hands to a runner (a
        call of a helper that hands its argument on is both)."""
        if not isinstance(node, ast.Call):
            return []
        return [function for function in (self._referenced_function(node.func, caller),
                                          self._handed_function(node, caller)) if function is not None]

    def _referenced_function(self, func: ast.AST, caller: Optional[FunctionNode]) -> Optional[FunctionNode]:
        if (caller is not None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in ("self", "cls")):
            cls_node = self.facts.enclosing_class(caller)
            if cls_node is not None:
                for statement in cls_node.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
                        return statement
            return None
        return self._function_named(func)

    def _propagate(self, pending: List[FunctionNode], what: str) -> None:
        while pending:
            function = pending.pop()
            for node in body_nodes(function):
                for callee in self._called_functions(node, function):
                    if id(callee) not in self.extra and self.startup.reason(callee) is None:
                        self.extra[id(callee)] = f"called from {function.name}(), {what}"
                        if what == _STARTUP_CODE:
                            self._startup_extra.add(id(callee))
                        if id(function) in self._on_demand:
                            self._on_demand.add(id(callee))
                        if id(function) in self._per_request:
                            self._per_request.add(id(callee))
                        pending.append(callee)

    # -- the answer ------------------------------------------------------------------------------------------
    def reason(self, node: ast.AST) -> Optional[str]:
        """Why the code at ``node`` runs on every replica (start-up, request or job), or None."""
        context = self.facts.context
        if context.is_test or (context.is_migration and not self.programs):
            return None
        function = enclosing_function(node)
        if function is None:
            if _in_class_body(node):
                return None
            block = _main_block(node)
            if block is not None and self.programs:
                return f"from the __main__ block, run as a program in every replica by {self.programs[0].launch.where}"
            if block is not None:
                return "from the server's __main__ block" if id(block) in self._server_mains else None
            if self.module_is_one_off:
                return None
            if self.programs:
                return f"at module level, run as a program in every replica by {self.programs[0].launch.where}"
            return "at module level, when the module is imported"
        return self._function_reason(function, 0)

    def function_reason(self, function: FunctionNode) -> Optional[str]:
        """Why ``function`` runs on every replica (start-up, request or job), or None."""
        return self._function_reason(function, 0)

    def runs_at_startup(self, function: FunctionNode) -> bool:
        """Start-up code of this module: a framework hook or what it calls, or what a server's ``__main__``
        block or a server-starting command calls (not request or job code)."""
        return self.startup.reason(function) is not None or id(function) in self._startup_extra

    def is_entry(self, function: FunctionNode) -> bool:
        """A request handler or a job itself, which the framework calls (what it returns goes to the client
        or the queue), not a function it calls."""
        return id(function) in self._entries

    def is_request_or_job(self, function: FunctionNode) -> bool:
        """Request handler or job code of this module, or what it calls here."""
        return id(function) in self.extra and id(function) not in self._startup_extra

    def on_demand(self, function: FunctionNode) -> bool:
        """Code that runs once per ask, on the one worker a queue hands it to: a queued task (``@shared_task``,
        ``@actor``), or what it calls here.  Not a replica's own scheduler, whose jobs every replica runs on every
        tick, nor a request handler, which every replica serves as the load balancer sends it requests."""
        return id(function) in self._on_demand and self.is_request_or_job(function)

    def per_request(self, function: FunctionNode) -> bool:
        """A request handler, or what it calls here: it runs once per request, on the one replica the load
        balancer sends it to."""
        return id(function) in self._per_request and self.is_request_or_job(function)

    def _function_reason(self, function: FunctionNode, depth: int) -> Optional[str]:
        startup = self.startup.reason(function)
        if startup is not None:
            called = _CALLED_FROM.fullmatch(startup)
            if called:
                return f"called from {called.group(1)}(), {_STARTUP_CODE}"
            return startup if startup.startswith("called ") else f"from the {startup}"
        extra = self.extra.get(id(function))
        if id(function) in self._startup_extra:
            return extra  # a command that start-up code calls runs at start-up
        if self.is_command(function):
            return None
        if extra is not None:
            return extra
        # A helper defined inside a start-up function and called or passed there
        # (``await conn.run_sync(_create)``) runs when its outer function runs.
        outer = enclosing_function(function)
        if outer is not None and depth < self._MAX_DEPTH and self._used_in(function.name, outer):
            return self._function_reason(outer, depth + 1)
        return None

    @staticmethod
    def _used_in(name: str, outer: FunctionNode) -> bool:
        return any(
            isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            for node in walk_no_nested_functions(outer)
        )


    # -- operator code ---------------------------------------------------------------------------------------
    def operator_reason(self, node: ast.AST) -> Optional[str]:
        """Why the code at ``node`` runs only when an operator runs it (a command, a script), or None."""
        function = enclosing_function(node)
        while function is not None:
            if self.is_command(function) and not self._served_by_deployment(function):
                return f"in the command {function.name}()"
            function = enclosing_function(function)
        if self.programs:
            return None
        context = self.facts.context
        parts = context.parts[:-1]
        if _in_management_commands(context):
            return None if self._served_by_deployment(None) else "in a management command's module"
        if any(part in known.SCRIPT_DIRECTORIES for part in parts):
            return "in a script a person runs"
        if context.filename == "manage.py":
            return "in manage.py"
        block = _main_block(node)
        if block is not None and id(block) not in self._server_mains:
            return "in the __main__ block of a script"
        if self.module_is_one_off and enclosing_function(node) is None:
            return "at module level of a script (its __main__ block starts no server)"
        return None


# =====================================================================================================
# The answer, across modules
# =====================================================================================================
EVERY_REPLICA = "every replica"
OPERATOR = "operator"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Runs:
    """Where the code at a node runs, and why.

    ``reason`` is said as the module where the answer was found says it ("from the lifespan handler",
    "in the command migrate()").  For code every replica runs, ``entry`` holds the places in that module
    (the deployment file that runs it, the hook or module-level call, the calls on the way) and ``calls``
    the calls from there to the asked code, one per module crossed; both entry point first."""

    where: str = UNKNOWN
    reason: str = ""
    entry: Tuple[Related, ...] = ()
    calls: Tuple[Related, ...] = ()
    #: it runs only as a queued task is asked for, once per ask (``Reach.on_demand``)
    on_demand: bool = False
    #: it runs once per request, on the replica that serves it (``Reach.per_request``)
    per_request: bool = False

    @property
    def per_ask(self) -> bool:
        """It runs once per ask (a queued task, a request), not on every replica's own schedule or start-up."""
        return self.on_demand or self.per_request

    @property
    def every_replica(self) -> bool:
        return self.where == EVERY_REPLICA

    @property
    def operator(self) -> bool:
        return self.where == OPERATOR

    @property
    def via(self) -> Tuple[Related, ...]:
        """The whole way from the entry point to the asked code's caller, entry point first."""
        return self.entry + self.calls


_UNKNOWN = Runs()


#: By default at most this many places (the code asked of, then its callers, theirs, ...) are asked by one
#: question.  A way from start-up or a job is a narrow chain of calls; a helper called all over a large project
#: would otherwise have each of its callers' modules parsed, and theirs, for an answer none of them gives.
_MAX_ASKED = 24


@dataclass(frozen=True)
class _Ask:
    startup_only: bool
    through_migration_code: bool
    max_hops: int
    #: code under a gate that no process the deployment starts passes (``process_roles``) is run by none
    past_refused_gates: bool = False
    #: at most this many places are asked (the code itself, its callers, theirs...)
    max_asked: int = _MAX_ASKED
    #: the places asked so far (one count, shared by the whole walk)
    asked: List[int] = field(default_factory=lambda: [0], compare=False)


def runs(node: ast.AST, facts: ModuleFacts, *, startup_only: bool = False, through_migration_code: bool = True,
         max_hops: int = 4, past_refused_gates: bool = False, max_asked: int = _MAX_ASKED) -> Runs:
    """Where the code at ``node`` runs: on every replica (start-up, a request or a job; with
    ``startup_only``, start-up only: request and job code answer unknown), only for an operator, or unknown.

    Crosses modules through the callers of the enclosing function when ``facts.context.cross_file`` (at
    most ``max_hops`` calls away; with ``through_migration_code`` false a caller in migration code is no
    way there); otherwise says only what this file shows.  Tests are no way there."""
    return _runs(node, facts, _Ask(startup_only, through_migration_code, max_hops, past_refused_gates, max_asked), 0,
                 set())


def runs_function(function: FunctionNode, facts: ModuleFacts, **ask) -> Runs:
    """``runs`` for the body of ``function`` (its first statement)."""
    first = function.body[0] if function.body else function
    return runs(first, facts, **ask)


def _runs(node: ast.AST, facts: ModuleFacts, ask: _Ask, hops: int, seen: Set[int]) -> Runs:
    context = facts.context
    if context.is_test or hops > ask.max_hops or (context.is_migration and not ask.through_migration_code):
        return _UNKNOWN
    ask.asked[0] += 1
    if ask.asked[0] > ask.max_asked:
        return _UNKNOWN
    if ask.past_refused_gates and context.cross_file and _under_a_test(node, facts):
        from .process_roles import refused_everywhere

        if refused_everywhere(node, facts):
            return _UNKNOWN  # (``if settings.migrate_on_start:`` where every service sets it off)
    reach = Reach.of_module(facts)
    if hops and context.is_migration and not context.is_named_runner and not reach.programs:
        # A caller in migration code: the migrate step runs it once, in one process, as an operator's command.
        # (A runner module named for the verb is asked of its own callers: start-up code may call it.)
        return Runs(OPERATOR, "in migration code, which the migrate step runs once")
    function = enclosing_function(node)
    if ask.startup_only and _in_ticking_loop(node, function, facts):
        return _UNKNOWN  # a ticker's pass: it runs on every tick, which is a job's question, not start-up's
    here = _startup_here(node, function, reach, seen) if ask.startup_only else _here(node, function, reach, seen)
    if here is not None:
        return here
    assert function is not None
    outer = enclosing_function(function) if ask.startup_only else None
    if outer is not None:
        # A def nested in a function runs when that function calls it or hands it on.
        return _runs(function, facts, ask, hops, seen) if _runs_nested(function.name, outer) else _UNKNOWN
    one_off = ask.startup_only and reach.module_is_one_off
    if one_off and not context.cross_file:
        return Runs(OPERATOR, reach.operator_reason(node) or "in a script a person runs")
    if ask.startup_only and not context.cross_file:
        return _UNKNOWN
    if one_off:
        # A script's function that start-up code elsewhere also calls (``init_db.main()`` from the lifespan,
        # the module runnable by hand too) runs at start-up; called by nothing else, it is the script's.
        found = _runs_from_callers(node, function, facts, ask, hops, seen)
        if found.every_replica:
            return found
        return Runs(OPERATOR, reach.operator_reason(node) or "in a script a person runs")
    return _runs_from_callers(node, function, facts, ask, hops, seen)


def _under_a_test(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` sits in an ``if`` (or a conditional expression) of its function, or after one that leaves it."""
    for above in ancestors(node):
        if isinstance(above, (ast.If, ast.IfExp)):
            return True
        if isinstance(above, ast.Lambda):
            return False  # (an expression: no statement of it tests anything)
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return any(isinstance(statement, ast.If) for statement in above.body)
    return False


def _runs_from_callers(node: ast.AST, function: FunctionNode, facts: ModuleFacts, ask: _Ask, hops: int,
                       seen: Set[int]) -> Runs:
    """The answer of the callers of ``function`` in the project (and, with none, of a start-up hook of another
    module handed it, or of the calls that resolve to it by its method name)."""
    if hops >= ask.max_hops or ask.asked[0] >= ask.max_asked:
        return _UNKNOWN  # (its callers would be past the question's reach: their modules are not parsed to say so)
    any_caller, operator_only = False, True
    for call, other in project_callers(function, facts):
        if other.context.is_test or (other.context.is_migration and not ask.through_migration_code):
            continue
        found = _runs(call, other, ask, hops + 1, seen)
        if found.every_replica:
            step = _call_place(other, call, function)
            entry = found.entry
            if not found.calls and entry and (entry[-1].path, entry[-1].line, entry[-1].column) == (
                    step.path, step.line, step.column):
                entry = entry[:-1]  # the module-level call itself: the step says what happens there
            return Runs(found.where, found.reason, entry, found.calls + (step,), found.on_demand, found.per_request)
        any_caller, operator_only = True, operator_only and found.operator
    if not any_caller:
        handed = handed_to_startup_elsewhere(function, facts)
        if handed is not None:
            return handed
    if not any_caller:
        # A method called on an object whose class the caller does not show (``engine = get_engine();
        # engine.create_database()``): the calls that resolve to it, its name being rare in the project.
        for call, other in _method_callers_by_name(function, facts):
            if other.context.is_test or (other.context.is_migration and not ask.through_migration_code):
                continue
            found = _runs(call, other, ask, hops + 1, seen)
            if found.every_replica:
                return Runs(found.where, found.reason, found.entry,
                            found.calls + (_call_place(other, call, function),), found.on_demand, found.per_request)
            any_caller, operator_only = True, operator_only and found.operator
    if any_caller and operator_only:
        return Runs(OPERATOR, "called only from operator code")
    return _UNKNOWN


#: A method's callers are looked for by its name only when at most this many files call a method so named.
_MAX_NAME_CALLER_FILES = 30


def _method_callers_by_name(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[ast.Call, ModuleFacts]]:
    """``receiver.method(...)`` calls in the project that may run ``function`` (a method): the project has
    few defs of that name (``summaries.resolve`` then names them all) or the receiver's class is this one."""
    from . import index as project
    from .summaries import resolve

    cls = facts.enclosing_class(function)
    name = function.name
    if cls is None or name.startswith("__") or not facts.context.cross_file:
        return []
    key = (os.path.abspath(facts.context.path), function.lineno, name)
    found: List[Tuple[ast.Call, ModuleFacts]] = []
    # The whole project: the caller may sit in another package than the method (an app calling its library).
    paths = project.files_calling_method(name, facts.config.root or project.search_root(facts))
    if len(paths) > _MAX_NAME_CALLER_FILES:
        return []  # a name that common says nothing of which object a call has (and each file would be parsed)
    for path in paths:
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for call in other.calls_by_name.get(name, ()):
            func = call.func
            if not isinstance(func, ast.Attribute) or (isinstance(func.value, ast.Name)
                                                       and func.value.id in ("self", "cls")):
                continue
            targets = resolve(call, other, other.enclosing_function(call))
            if any((os.path.abspath(target_facts.context.path or ""), target.lineno, target.name) == key
                   for target, target_facts in targets):
                found.append((call, other))
    return found


def _here(node: ast.AST, function: Optional[FunctionNode], reach: Reach, seen: Set[int]) -> Optional[Runs]:
    """The answer this module gives for ``node`` (start-up, request or job code), or None to ask the callers
    of ``function``."""
    reason = reach.reason(node)
    if reason is not None:
        return Runs(EVERY_REPLICA, reason, tuple(_local_chain(node, reach.facts, reach, reason)),
                    on_demand=function is not None and reach.on_demand(function),
                    per_request=function is not None and reach.per_request(function))
    if function is None:
        return _operator_or_unknown(reach, node)
    if id(function) in seen:
        return _UNKNOWN
    if reach.is_command(function):
        return _operator_or_unknown(reach, node)
    seen.add(id(function))
    return None


#: Modules read for a start-up hook of another module handed a function by name.
_MAX_HANDING_MODULES = 20
#: What such a hook spells (``on_startup=[...]``, ``add_event_handler("startup", ...)``, ``cleanup_ctx``).
_HOOK_WORDS = tuple(word.encode() for word in (*known.ON_STARTUP_KEYWORDS, *known.LIFESPAN_KEYWORDS,
                                                 *known.STARTUP_LISTS, "add_event_handler",
                                                 *known.LISTENER_REGISTRATIONS, *known.SERVING_HOOK_DECORATORS))


def handed_to_startup_elsewhere(function: FunctionNode, facts: ModuleFacts) -> Optional[Runs]:
    """A start-up hook of another module of the project handed ``function`` by name, without calling it
    (``Litestar(on_startup=[init_db])``, ``app.add_event_handler("startup", init_db)``, ``FastAPI(lifespan=
    lifespan)``, with the function imported from here)."""
    from . import index as project
    from .bindings import own_module_names

    if not facts.context.cross_file or facts.enclosing_class(function) is not None \
            or facts.enclosing_function(function) is not None:
        return None  # (a file judged alone reads no other module)
    wanted = {f"{module}.{function.name}" for module in own_module_names(facts)}
    own = os.path.abspath(facts.context.path or "")
    for path in project.files_mentioning(function.name, project.search_root(facts))[:_MAX_HANDING_MODULES]:
        if os.path.abspath(path) == own or not any(word in project.read_bytes(path) for word in _HOOK_WORDS):
            continue  # (no start-up hook is spelled there: not parsed)
        other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for qualified, (reason, element) in StartupMap.of_module(other).imported.items():
            if qualified in wanted:
                place = Related(other.context.path, element.lineno, element.col_offset + 1,
                                f"{function.name}() is handed to the {reason} here")
                return Runs(EVERY_REPLICA, f"{reason} in `{other.context.rel_path or other.context.path}`", (),
                            (place,))
    return None


def _startup_here(node: ast.AST, function: Optional[FunctionNode], reach: Reach, seen: Set[int]) -> Optional[Runs]:
    """The answer this module gives for ``node`` when only start-up counts, or None to ask further (an
    enclosing function, or the callers)."""
    if function is None:
        if reach.module_is_one_off:
            return _operator_or_unknown(reach, node)
        reason = reach.reason(node)
        if reason is None:
            return _operator_or_unknown(reach, node)
        return Runs(EVERY_REPLICA, reason, tuple(_local_chain(node, reach.facts, reach, reason)))
    if id(function) in seen:
        return _UNKNOWN
    seen.add(id(function))
    if reach.runs_at_startup(function):
        reason = reach.reason(node)
        if reason is not None:
            return Runs(EVERY_REPLICA, reason, tuple(_local_chain(node, reach.facts, reach, reason)))
        return _UNKNOWN
    if reach.is_command(function):
        return _operator_or_unknown(reach, node)
    if reach.is_request_or_job(function):
        return Runs(UNKNOWN, "request or job code, not start-up")
    return None


def _operator_or_unknown(reach: Reach, node: ast.AST) -> Runs:
    reason = reach.operator_reason(node)
    return Runs(OPERATOR, reason) if reason is not None else _UNKNOWN


def _runs_nested(name: str, outer: FunctionNode, depth: int = 0) -> bool:
    """A def nested in ``outer`` runs with it when ``outer`` calls it or hands it to a call
    (``conn.run_sync(_seed)``); a nested def that is only returned (a loader factory) runs later, elsewhere, and
    so does one handed to a route registration (``router.add_api_route("/batch", batch_action)``), directly or
    through a helper of the module that only hands it on to one: a request runs it."""
    for node in walk_no_nested_functions(outer):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == name:
            return True
        handed = [index for index, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == name]
        keywords = [k.arg for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id == name and k.arg]
        if not handed and not keywords:
            continue
        if call_name(node) in known.ROUTE_REGISTRATIONS:
            continue
        helper = _module_def(node, outer) if depth < 2 else None
        if helper is not None:
            parameters = [a.arg for a in helper.args.posonlyargs + helper.args.args]
            received = [parameters[i] for i in handed if i < len(parameters)] + [k for k in keywords if k in parameters]
            if received and not any(_runs_nested(parameter, helper, depth + 1) for parameter in received):
                continue  # (the helper only registers what it is handed)
        return True
    return False


def _module_def(call: ast.Call, inside: ast.AST) -> Optional[FunctionNode]:
    """The top-level def of the module around ``inside`` that ``call`` names (``maybe_add_route(...)``)."""
    if not isinstance(call.func, ast.Name):
        return None
    module = next((above for above in ancestors(inside) if isinstance(above, ast.Module)), None)
    if module is None:
        return None
    return next((statement for statement in module.body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and statement.name == call.func.id), None)


# -- the places on the way ------------------------------------------------------------------------------------
def place(facts: ModuleFacts, node: ast.AST, message: str) -> Related:
    """``node`` of ``facts``'s module as a related place."""
    return Related(facts.context.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1, message)


def _call_place(facts: ModuleFacts, call: ast.AST, callee: FunctionNode) -> Related:
    """The call in ``facts``'s module that runs ``callee`` (a constructor's class call for an ``__init__``)."""
    name = callee.name
    if name == "__init__" and isinstance(call, ast.Call):
        name = call_name(call) or name
    return place(facts, call, _calls(enclosing_function(call), name, _runner(facts, call, name)))


def _calls(caller: Optional[FunctionNode], name: str, runner: Optional[str] = None) -> str:
    who = f"`{caller.name}`" if caller is not None else "module-level code"
    if runner is not None:
        return f"{who} runs `{name}()` through `{runner}(...)`"
    return f"{who} calls `{name}()`"


def _runner(facts: ModuleFacts, call: ast.AST, name: str) -> Optional[str]:
    """The runner ``call`` hands the function ``name`` to (``to_thread``), when it is not a call of it."""
    if not isinstance(call, ast.Call) or call_name(call) == name:
        return None
    handed = handed_callable(call, facts)
    if handed is None:
        return None
    return call_name(call) or (call_name(call.func) if isinstance(call.func, ast.Call) else None)


def _local_chain(call: ast.AST, facts: ModuleFacts, reach: Reach, reason: str) -> List[Related]:
    """Entry point first, within the module: the deployment file that runs it, the module-level call or the
    hook, then the calls on the way to ``call``'s function."""
    places: List[Related] = []
    for step in reach.programs[:1]:
        places.append(Related(step.launch.path, step.launch.line, 1, step.describe()))
    function = enclosing_function(call)
    path = _path_to(function, facts, reach) if function is not None else []
    for index, (node, name) in enumerate(path):
        if index == 0 and not places:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                why = reach._function_reason(node, 0) or reason
                places.append(place(facts, node, f"every replica runs {node.name}() ({why})"))
            else:
                places.append(place(facts, node, f"every replica runs this call ({reach.reason(node) or reason})"))
        else:
            places.append(place(facts, node, _calls(enclosing_function(node), name, _runner(facts, node, name))))
    if not places:
        places.append(place(facts, call, f"every replica runs this ({reason})"))
    return places


def _path_to(function: FunctionNode, facts: ModuleFacts, reach: Reach) -> List[Tuple[ast.AST, str]]:
    """(node, callee name) from the entry of this module to ``function``: a module-level or ``__main__``
    call, or a hook's ``def`` line; breadth first over the module's own calls."""
    queue: List[Tuple[FunctionNode, List[Tuple[ast.AST, str]]]] = [(function, [])]
    seen = {id(function)}
    while queue:
        current, tail = queue.pop(0)
        startup = reach.startup.reason(current)
        extra = reach.extra.get(id(current))
        direct = (startup is not None and not startup.startswith("called ")) or (
            extra is not None and not extra.startswith("called from"))
        sites = [c for c in facts.calls_named(current.name)
                 if isinstance(c.func, ast.Name) or _is_self_method_call(c, current)]
        sites += [site for site, handed in handed_sites(facts).get(current.name, ())
                  if isinstance(handed, ast.Name) or _is_self_reference(handed, current)]
        for site in sites:
            outer = enclosing_function(site)
            if outer is None:
                return [(site, current.name)] + tail
        if direct:
            return [(current, current.name)] + tail
        for site in sites:
            outer = enclosing_function(site)
            if outer is not None and id(outer) not in seen and len(seen) < 50:
                seen.add(id(outer))
                queue.append((outer, [(site, current.name)] + tail))
    return []


def _is_self_method_call(call: ast.Call, function: FunctionNode) -> bool:
    return _is_self_reference(call.func, function)


def _is_self_reference(func: ast.AST, function: FunctionNode) -> bool:
    """``self.name`` / ``cls.name`` for the method ``function``."""
    return (isinstance(func, ast.Attribute) and func.attr == function.name and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls"))
