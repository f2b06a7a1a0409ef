"""Code that runs only in the process a setting selects, and whether that process is one process.

A registration that runs only when a condition on a setting holds (``if settings.role.runs_jobs:`` around
``scheduler.add_job(...)``, ``if os.environ.get("PROCESS_ROLE") != "worker": return`` before it) is not run
by every process.  Which processes run it depends on who sets the setting:

- a program of the project that fixes the setting for its own process before it builds the app
  (``settings.role = Role.WORKER``, ``os.environ["PROCESS_ROLE"] = "worker"``) is a process dedicated to a
  role.  When the gate may pass in such a program, and every such program in which it may pass is one
  process (it starts no server with several workers and spawns no processes), the project dedicates a
  process to the gated code: the operator runs that program once, and the scaled processes (the web
  server, which fixes nothing) are meant to run with the setting off;
- a setting that no program fixes per process (a feature flag, an instance's ``cron_responsible`` in its
  config file) has one value in every process of an instance, and a gate on it says nothing about how many
  processes run the code: a web server with eight workers runs it eight times.

The gate must be necessary: the registration runs only when the condition holds (``a and b`` needs both,
``a or b`` needs neither on its own).  The programs are other files of the project (the CLI), or, read
alone, the checked module itself when it is a program.
"""
from __future__ import annotations

import ast
import copy
import os
import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set, Tuple, Union

from ..analysis.facts import ModuleFacts, ancestors, parent, walk
from ..knowledge import deployment as known
from ..knowledge import startup as startup_known
from . import deployment
from . import index as project
from .program_arguments import PREFIX as ARGUMENT, argument_key, handed_words, may_read_arguments, program_facts
from .service_settings import service_pins, sets_elsewhere
from .settings_objects import Derived, EnvironmentField, derived_setting

#: ``os.environ.get("X")``, ``os.getenv("X")``: reads of a process's environment.
_ENV_GETTERS = frozenset({"os.environ.get", "os.getenv", "os.environ.pop"})
_ENV = "os.environ"
_ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv"})
_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Pin:
    """A program fixing a setting for its own process."""

    key: str  # "attr:<qualified name>" or "env:<variable>"
    value: Optional[ast.AST]
    facts: Optional[ModuleFacts]  # the program's module (None: a deployment file's service sets it)
    line: int
    single: bool  # the program (or the service) is one process
    file: str = ""  # the deployment file, for a service's setting

    @property
    def path(self) -> str:
        return self.file or (self.facts.context.path if self.facts is not None else "")


@dataclass(frozen=True)
class DedicatedGate:
    """The setting that selects where the gated code runs, and the programs that select it."""

    key: str
    condition: ast.AST  # the test (or early exit) in the checked module that reads the setting
    pins: Tuple[Pin, ...]  # the one-process programs in which the gate may pass

    @property
    def setting(self) -> str:
        return self.key.split(":", 1)[1]


# =====================================================================================================
# Programs that fix a setting for their own process
# =====================================================================================================
_lock = threading.Lock()
_pins: Dict[Tuple[str, str], Tuple[Dict[str, List[Pin]], Tuple[str, ...]]] = {}


def _clear() -> None:
    with _lock:
        _pins.clear()


project.on_clear(_clear)


def pins_for(facts: ModuleFacts) -> Dict[str, List[Pin]]:
    """key -> the programs of this module's project that fix it (once per run and project)."""
    root = project.search_root(facts)
    if not root:
        return {}
    cache_key = (os.path.abspath(root), os.path.abspath(facts.config.root or root))

    def scan() -> Tuple[Dict[str, List[Pin]], Tuple[str, ...]]:
        found: Dict[str, List[Pin]] = {}
        programs = _programs(facts, root)
        for path in programs:
            program = project.module_facts(path, facts.config)
            if program is None or program.context.is_test:
                continue
            single = None
            for key, value, line in _fixed_settings(program):
                if single is None:
                    single = _one_process(program, facts)
                found.setdefault(key, []).append(Pin(key, value, program, line, single))
        # A service of the deployment files setting a variable for its processes (``RUN_TICKERS: "1"`` on a
        # service pinned to one replica).
        for pin in service_pins(facts.config, root):
            key = f"env:{pin.variable}"
            found.setdefault(key, []).append(Pin(key, ast.Constant(pin.value), None, pin.line, pin.single, pin.path))
        return found, tuple(programs)

    return project.scan_once(_pins, cache_key, scan)


def _own_pins(facts: ModuleFacts) -> Dict[str, List[Pin]]:
    """Read alone (flake8): the settings this module fixes, when it is itself a program."""
    from .startup import is_main_guard

    program = facts.context.filename == "__main__.py" or any(
        isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in facts.tree.body)
    if not program:
        return {}
    found: Dict[str, List[Pin]] = {}
    for key, value, line in _fixed_settings(facts):
        found.setdefault(key, []).append(Pin(key, value, facts, line, _one_process(facts, facts)))
    return found


def _programs(facts: ModuleFacts, root: str) -> List[str]:
    """Files of the project run as programs: a ``__main__`` guard or a ``__main__.py``, or a module or
    script a deployment file runs."""
    paths: List[str] = []
    for path in project.files_mentioning("__main__", root):
        paths.append(path)
    for path in project.project_files(root):
        if os.path.basename(path) == "__main__.py" and path not in paths:
            paths.append(path)
    for step in deployment.steps(facts.config, root):
        if step.kind in (deployment.PYTHON_MODULE, deployment.PYTHON_SCRIPT):
            paths.extend(f for f in step.files if f not in paths and f.endswith(".py"))
    return paths


def _fixed_settings(program: ModuleFacts) -> List[Tuple[str, Optional[ast.AST], int]]:
    """(key, value, line) for each setting the program assigns: an attribute of an object another module
    defines (``settings.role = ...``), or an environment variable of its own process."""
    found = []
    for node in walk(program.tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                key = _assigned_key(target, program)
                if key:
                    found.append((key, node.value, node.lineno))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            key = _assigned_key(node.target, program)
            if key:
                found.append((key, node.value, node.lineno))
        elif isinstance(node, ast.Call) and (program.callee(node) or "") in _ENV_SETTERS and len(node.args) >= 2:
            name = _constant_string(node.args[0])
            if name:
                found.append((f"env:{name}", node.args[1], node.lineno))
    return found


def _assigned_key(target: ast.AST, program: ModuleFacts) -> Optional[str]:
    if isinstance(target, ast.Subscript) and (program.qualify(target.value) or "") == _ENV:
        name = _constant_string(target.slice)
        return f"env:{name}" if name else None
    if not isinstance(target, ast.Attribute):
        return None
    head = target
    while isinstance(head, ast.Attribute):
        head = head.value
    # Only an object another module made: the program's own names (``self.x``, a local) are not settings
    # any other process reads.
    if not (isinstance(head, ast.Name) and program.imports.is_imported(head.id)):
        return None
    qualified = program.qualify(target)
    return f"attr:{qualified}" if qualified and "." in qualified else None


def _one_process(program: ModuleFacts, facts: ModuleFacts) -> bool:
    """The program runs as one process: it starts no server with several workers (or one whose worker count
    it does not fix), spawns no processes, and no deployment command serves it through a server."""
    for call in program.calls:
        callee = program.callee(call) or ""
        if callee in known.PROCESS_SPAWNERS:
            return False
        if callee in startup_known.SERVER_RUNNERS:
            workers = next((k.value for k in call.keywords if k.arg in known.SERVER_WORKER_KEYWORDS), None)
            if workers is not None and not (isinstance(workers, ast.Constant) and workers.value == 1):
                return False
        if callee in known.PROCESS_REPLACERS and call.args:
            first = _constant_string(call.args[0]) or ""
            if os.path.basename(first) in known.SERVER_COMMANDS:
                return False
    from .bindings import own_module_names

    served = {f"{name}:" for name in own_module_names(program)}
    for launch in deployment.launches_for(facts):
        if launch.words and os.path.basename(launch.words[0]) in known.SERVER_COMMANDS and any(
                word.startswith(tuple(served)) for word in launch.words[1:]):
            return False
    return True


def _constant_string(node: Optional[ast.AST]) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# =====================================================================================================
# The gate around a registration
# =====================================================================================================
def dedicated_gate(node: ast.AST, facts: ModuleFacts) -> Optional[DedicatedGate]:
    """The setting that must hold for ``node`` to run, when programs of the project fix it and the gate may
    pass only in programs that are one process each; None otherwise (no gate, a gate nothing fixes per
    process, or one that may pass in a program with several processes)."""
    if facts.context.is_test:
        return None
    conditions = _conditions(node)
    if not conditions:
        return None
    pins = pins_for(facts) if facts.context.cross_file else _own_pins(facts)
    if not pins and not may_read_arguments(facts):
        return None
    for test, positive in conditions:
        for key in sorted(_necessary_keys(test, positive, facts)):
            fixed = _argument_pins(key, facts) if key.startswith(ARGUMENT) else _pins_of(key, pins)
            if not fixed:
                continue
            passing = [pin for pin in fixed if _holds(conditions, pin, facts) is not False]
            if passing and all(pin.single for pin in passing):
                return DedicatedGate(key, test, tuple(passing))
            if not passing and (key.startswith(ARGUMENT) or (
                    key.startswith("env:") and facts.context.cross_file and any(pin.facts is None for pin in fixed)
                    and _refused_where_unset(conditions, key, facts)
                    and not sets_elsewhere(key[len("env:"):], facts.config, project.search_root(facts)))):
                # every launch of the program hands a word the gate refuses, or the deployment files set the
                # variable, every service that sets it sets it so and the rest leave it unset, which the gate
                # refuses too: no process the deployment starts runs the code
                return DedicatedGate(key, test, ())
    return None


def _refused_where_unset(conditions: List[Tuple[ast.AST, bool]], key: str, facts: ModuleFacts) -> bool:
    """The gate refuses a process whose environment leaves the variable unset."""
    return _holds(conditions, Pin(key, ast.Constant(None), None, 0, True), facts) is False


def refused_everywhere(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` sits under a gate that no process the deployment files start passes."""
    gate = dedicated_gate(node, facts)
    return gate is not None and not gate.pins


def gated_at_every_caller(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` sits in a function whose every call the project shows is under such a gate (``ready()`` calls
    ``start_scheduler()`` only ``if settings.RUN_SCHEDULER``), and that is handed on (``Thread(target=...)``)
    only under one too: it runs only where the gate passes (command line only; one call up)."""
    from .shared_channels import references_to

    if not at_every_caller(node, facts, lambda call, other: dedicated_gate(call, other) is not None):
        return False
    function = facts.enclosing_function(node)
    return function is not None and all(
        dedicated_gate(reference, other) is not None for reference, other in references_to(function, facts)
        if not _called(reference))


def at_every_caller(node: ast.AST, facts: ModuleFacts, holds: Callable[[ast.Call, ModuleFacts], bool]) -> bool:
    """``node`` sits in a function that the project calls, and ``holds`` of every such call (tests left out;
    command line only; one call up)."""
    from .fixed_arguments import callers_of

    function = facts.enclosing_function(node)
    if function is None or not facts.context.cross_file:
        return False
    calls = [(call, other) for call, other in callers_of(function, facts) if not other.context.is_test]
    return bool(calls) and all(holds(call, other) for call, other in calls)


def _called(reference: ast.AST) -> bool:
    return isinstance(parent(reference), ast.Call) and parent(reference).func is reference


def _argument_pins(key: str, facts: ModuleFacts) -> List[Pin]:
    """A program's command-line argument as each deployment launch of the program gives it (``python -m tally
    clock`` in a workload of one replica): the launch's word (None when it gives none there), one process
    when the launch is not run in every replica and the program starts no more processes itself."""
    program = program_facts(key, facts)
    if program is None:
        return []
    single = _one_process(program, facts)
    return [Pin(key, ast.Constant(word) if word is not None else None, None, step.launch.line,
                single and not step.launch.per_replica, step.launch.path) for word, step in handed_words(key, facts)]


def _pins_of(key: str, pins: Dict[str, List[Pin]]) -> List[Pin]:
    """The pins of ``key`` or of the object it is read from (``attr:config.settings.role`` read as
    ``settings.role.runs_jobs``)."""
    if key.startswith("env:"):
        return pins.get(key, [])
    found: List[Pin] = []
    parts = key.split(".")
    for index in range(2, len(parts) + 1):
        found.extend(pins.get(".".join(parts[:index]), []))
    return found


def _conditions(node: ast.AST) -> List[Tuple[ast.AST, bool]]:
    """(test, must be true) for each ``if`` (or conditional expression) the code at ``node`` sits in (its
    ``else`` branch: must be false), and each earlier ``if`` of the same blocks whose branch leaves (``if not ok: return``: must be
    false), up to the function or module it is in."""
    found: List[Tuple[ast.AST, bool]] = []
    child = node
    for above in ancestors(node):
        if isinstance(above, (ast.Lambda, ast.ClassDef)):
            break
        if isinstance(above, ast.IfExp) and child is not above.test:
            # ``start(...) if settings.run_tickers else []``
            found.append((above.test, child is above.body))
        for name in ("body", "orelse"):
            block = getattr(above, name, None)
            if not isinstance(block, list) or not any(s is child for s in block):
                continue
            if isinstance(above, ast.If):
                found.append((above.test, name == "body"))
            index = next(i for i, s in enumerate(block) if s is child)
            for statement in block[:index]:
                if isinstance(statement, ast.If) and _leaves(statement.body) and not statement.orelse:
                    found.append((statement.test, False))
        if isinstance(above, _FUNCTION_TYPES):
            break
        child = above
    return found


def _leaves(body: List[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _necessary_keys(test: ast.AST, positive: bool, facts: ModuleFacts) -> Set[str]:
    """The settings whose value the test (true when ``positive``, false otherwise) constrains in every case
    it holds: both sides of ``and``, only what every side of ``or`` reads."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _necessary_keys(test.operand, not positive, facts)
    if isinstance(test, ast.BoolOp):
        parts = [_necessary_keys(value, positive, facts) for value in test.values]
        conjunction = isinstance(test.op, ast.And) == positive
        if conjunction:
            return set().union(*parts)
        common = parts[0]
        for part in parts[1:]:
            common = common & part
        return common
    return _read_keys(test, facts)


def _read_keys(expr: ast.AST, facts: ModuleFacts) -> Set[str]:
    """Settings an expression reads: attribute chains of imported objects, environment variables; a local
    name bound once to such a read counts as the read."""
    keys: Set[str] = set()
    for node in walk(expr):
        key = _read_key(node, facts)
        if key:
            keys.add(key)
        elif isinstance(node, ast.Name):
            value = _bound_once(node, facts)
            if value is not None:
                keys.update(k for k in (_read_key(n, facts) for n in walk(value)) if k)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            # ``settings.run_tickers`` of a settings object the project makes, ``app.config["RUN_JOBS"]`` of a
            # mapping filled from a config class: what it is made of
            derived = _derived(node, facts)
            if isinstance(derived, EnvironmentField):
                keys.add(f"env:{derived.variable}")
            elif derived is not None and derived[0] is not node:
                keys.update(_read_keys(derived[0], derived[1]))
    return keys


def _env_helper_read(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """``_env_flag("RUN_JOBS")`` with ``def _env_flag(name, default=False): return os.environ.get(name, ...)
    .strip().lower() in {"1", "true"}``: the helper's one returned expression with the variable's name written in
    for its parameter, read in the helper's module (a project function reading the variable its caller names)."""
    if not isinstance(call.func, ast.Name) or len(call.args) < 1:
        return None
    if _constant_string(call.args[0]) is None:
        return _value_helper_read(call, facts)
    function = next((s for s in facts.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == call.func.id), None)
    where = facts
    if function is None and facts.context.cross_file and facts.imports.is_imported(call.func.id):
        found = project.find_function(facts.qualify(call.func) or "", facts.config, project.roots_for(facts))
        if found is None:
            return None
        function, where = found
    if function is None or not function.args.args:
        return None
    parameter = function.args.args[0].arg

    def reads_variable(expr: ast.AST) -> bool:
        return isinstance(expr, ast.Call) and (where.callee(expr) or "") in _ENV_GETTERS and bool(expr.args) \
            and isinstance(expr.args[0], ast.Name) and expr.args[0].id == parameter

    # ``raw = os.environ.get(name)`` kept in a local first: the returns read it through that name
    kept = {target.id: node.value for node in walk(function) if isinstance(node, ast.Assign)
            and reads_variable(node.value) for target in node.targets if isinstance(target, ast.Name)}
    # (``if raw is None: return default``: the variable unset, which a program that sets it never reaches)
    returns = [n.value for n in walk(function) if isinstance(n, ast.Return) and n.value is not None
               and any(reads_variable(part) or (isinstance(part, ast.Name) and part.id in kept)
                       for part in walk(n.value))]
    if len(returns) != 1:
        return None

    class _Named(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id == parameter:
                return ast.Constant(value=call.args[0].value)
            if node.id in kept:
                return self.visit(copy.deepcopy(kept[node.id]))
            return node

    return _Named().visit(copy.deepcopy(returns[0])), where


def _value_helper_read(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[ast.AST, ModuleFacts]]:
    """``_flag(os.environ.get("MIGRATE_ON_START"))`` with ``def _flag(value): return (value or "").strip().lower()
    in {"1", "true"}`` in the same module: the helper's one returned expression with the variable's read written
    in for its parameter."""
    if len(call.args) != 1 or call.keywords or not (_read_key(call.args[0], facts) or "").startswith("env:"):
        return None
    function = next((s for s in facts.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and s.name == call.func.id), None)  # type: ignore[attr-defined]
    if function is None or len(function.args.args) != 1 or _rebinds_name(function, function.args.args[0].arg):
        return None
    parameter = function.args.args[0].arg
    returns = [n.value for n in walk(function) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        return None

    class _Handed(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return copy.deepcopy(call.args[0]) if node.id == parameter else node

    return _Handed().visit(copy.deepcopy(returns[0])), facts


def _rebinds_name(function: ast.AST, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
               for node in walk(function))


def _derived(node: Union[ast.Attribute, ast.Subscript], facts: ModuleFacts) -> Optional[Derived]:
    def build(_facts: ModuleFacts) -> dict:
        return {}

    cache = facts.cached("process-roles:derived", build)
    if id(node) not in cache:
        cache[id(node)] = derived_setting(node, facts, _bound_once)
    return cache[id(node)]


def _read_key(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    argument = argument_key(node, facts)
    if argument is not None:
        return argument  # ``sys.argv[1]``, ``args.role``: the word the program's launch hands it
    if isinstance(node, ast.Call):
        if (facts.callee(node) or "") in _ENV_GETTERS and node.args:
            name = _constant_string(node.args[0])
            return f"env:{name}" if name else None
        read = _env_helper_read(node, facts)
        keys = _read_keys(read[0], read[1]) if read is not None else set()
        return next(iter(keys)) if len(keys) == 1 else None
    if isinstance(node, ast.Subscript) and (facts.qualify(node.value) or "") == _ENV:
        name = _constant_string(node.slice)
        return f"env:{name}" if name else None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
            and (facts.qualify(node.comparators[0]) or "") == _ENV:
        name = _constant_string(node.left)
        return f"env:{name}" if name else None
    if isinstance(node, ast.Attribute):
        head = node
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and facts.imports.is_imported(head.id):
            qualified = facts.qualify(node)
            if qualified and not (qualified == _ENV or qualified.startswith(_ENV + ".")):
                return f"attr:{qualified}"
    return None


def _bound_once(name: ast.Name, facts: ModuleFacts) -> Optional[ast.AST]:
    from .bindings import Bindings

    origin = Bindings.of_module(facts).origin(name)
    return origin if origin is not None and origin is not name and not isinstance(origin, ast.Name) else None


# -- whether the gate may pass in a program -------------------------------------------------------------
def _holds(conditions: List[Tuple[ast.AST, bool]], pin: Pin, facts: ModuleFacts) -> Optional[bool]:
    """Whether every condition holds with the value the program fixes: True, False, or None (unknown)."""
    result: Optional[bool] = True
    for test, positive in conditions:
        value = _evaluate(test, pin, facts)
        if value is None:
            result = None
            continue
        if value != positive:
            return False
    return result


def _evaluate(expr: ast.AST, pin: Pin, facts: ModuleFacts) -> Optional[bool]:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        inner = _evaluate(expr.operand, pin, facts)
        return None if inner is None else not inner
    if isinstance(expr, ast.BoolOp):
        values = [_evaluate(v, pin, facts) for v in expr.values]
        if isinstance(expr.op, ast.And):
            if False in values:
                return False
            return True if all(v is True for v in values) else None
        if True in values:
            return True
        return False if all(v is False for v in values) else None
    fixed = _literal(pin.value, pin.facts)
    if fixed is None:
        return None
    derived = _derived(expr, facts) if isinstance(expr, (ast.Attribute, ast.Subscript)) else None
    if isinstance(derived, EnvironmentField) and f"env:{derived.variable}" == pin.key and fixed[0] == "constant":
        # ``if settings.run_tickers:`` read from the variable (unset: the field's default, not read here)
        return derived.truth(str(fixed[1])) if fixed[1] is not None else None
    if isinstance(derived, tuple) and derived[0] is not expr and pin.key in _read_keys(derived[0], derived[1]):
        return _evaluate(derived[0], pin, derived[1])  # ``run_tickers=os.environ.get("RUN_TICKERS") == "1"``
    read = _env_helper_read(expr, facts) if isinstance(expr, ast.Call) else None
    if read is not None:
        return _evaluate(read[0], pin, read[1])  # ``_env_flag("RUN_JOBS")``: what the helper computes of it
    if _read_key(expr, facts) == pin.key and not isinstance(expr, ast.Compare):
        fixed = _as_read(expr, fixed, pin)
        return bool(fixed[1]) if fixed is not None and fixed[0] == "constant" else None
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        left, right = expr.left, expr.comparators[0]
        op = expr.ops[0]
        if _key_of(_normalised(right)[0], facts) == pin.key and isinstance(op, (ast.Eq, ast.NotEq)):
            left, right = right, left
        left, steps = _normalised(left)
        left, fallback = _or_text(left)
        if _key_of(left, facts) != pin.key:
            return None
        fixed = _as_read(left, fixed, pin)
        if fixed is None:
            return None
        if fallback is not None and fixed[0] == "constant" and (fixed[1] is None or isinstance(fixed[1], str)):
            fixed = ("constant", fixed[1] or fallback)  # ``(raw or "")``: the text, or the fallback when empty
        if steps:
            if fixed[0] != "constant" or not isinstance(fixed[1], str):
                return None
            text = fixed[1]
            for step in steps:  # ``.strip().lower()``: applied to the value as the program reads it
                text = getattr(text, step)()
            fixed = ("constant", text)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            other = _literal(right, facts)
            if other is None or other[0] != fixed[0]:
                return None  # a constant against a name (an enum member) cannot be compared here
            return (other == fixed) == isinstance(op, ast.Eq)
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            options = [_literal(e, facts) for e in right.elts]
            if any(o is None or o[0] != fixed[0] for o in options):
                return None
            return (fixed in options) == isinstance(op, ast.In)
    return None


def _as_read(read: ast.AST, fixed: Tuple[str, object], pin: Pin) -> Optional[Tuple[str, object]]:
    """The value ``read`` gives for what the pin fixes: for a variable left unset (an environment pin of None),
    ``os.environ.get``'s default (None without one); unknown for any other read of an unset variable."""
    if fixed != ("constant", None) or not pin.key.startswith("env:"):
        return fixed
    if not isinstance(read, ast.Call) or isinstance(read.func, ast.Name) or read.keywords:
        return None  # (``os.environ["X"]`` fails; a settings field falls back to a default not read here)
    if len(read.args) == 1:
        return fixed
    default = read.args[1] if len(read.args) == 2 else None
    return ("constant", default.value) if isinstance(default, ast.Constant) else None


def _or_text(node: ast.AST) -> Tuple[ast.AST, Optional[str]]:
    """``raw or ""`` -> (``raw``, ""): a text value, or the fallback text when it is empty or unset."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2 \
            and _constant_string(node.values[1]) is not None:
        return node.values[0], _constant_string(node.values[1])
    return node, None


#: Methods that normalise a variable's text before it is compared (``.strip().lower() in {"1", "true"}``).
_NORMALISERS = frozenset({"strip", "lower", "upper", "casefold", "lstrip", "rstrip"})


def _normalised(node: ast.AST) -> Tuple[ast.AST, List[str]]:
    """The value under ``x.strip().lower()`` and the normalising steps, innermost first."""
    steps: List[str] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _NORMALISERS \
            and not node.args and not node.keywords:
        steps.append(node.func.attr)
        node = node.func.value
    return node, steps[::-1]


def _key_of(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """The setting a compared value is: read here, or a settings class's field filled from the environment."""
    key = _read_key(node, facts)
    if key is None and isinstance(node, (ast.Attribute, ast.Subscript)):
        derived = _derived(node, facts)
        if isinstance(derived, EnvironmentField):
            return f"env:{derived.variable}"
    return key


def _literal(node: Optional[ast.AST], where: Optional[ModuleFacts]) -> Optional[Tuple[str, object]]:
    """A value two modules can compare: a constant, or a qualified name (``Role.WORKER``)."""
    if isinstance(node, ast.Constant):
        return ("constant", node.value)
    if isinstance(node, (ast.Name, ast.Attribute)):
        head = node
        while isinstance(head, ast.Attribute):
            head = head.value
        # Only a name another module defines reads the same in both modules (``Role.WORKER``).
        if isinstance(head, ast.Name) and where.imports.is_imported(head.id):
            qualified = where.qualify(node)
            return ("name", qualified) if qualified else None
    return None


# =====================================================================================================
# Code only single-replica programs run
# =====================================================================================================
def run_by_single_programs(node: ast.AST, facts: ModuleFacts) -> bool:
    """``node`` runs only in programs (a module's ``__main__``) that the deployment files start, and every such
    start is one replica (``replicas: 1``, a one-off command): a clock process the project runs once.  The
    programs are this module, or modules that import it, started by ``python -m`` or as a script."""
    from .bindings import own_module_names
    from .reach import runs
    from .renamed_callers import import_statements, spells

    if runs(node, facts).every_replica:
        return False
    root = deployment.project_directory(facts.context.path, facts.config, project.search_root(facts))
    own = os.path.abspath(facts.context.path or "")
    tails = {name.rsplit(".", 1)[-1].encode() for name in own_module_names(facts)}
    starting = []
    for step in deployment.steps(facts.config, root):
        if step.kind not in (deployment.PYTHON_MODULE, deployment.PYTHON_SCRIPT):
            continue
        for path in step.files:
            if os.path.abspath(path) == own or any(
                    spells(statement, tail) for statement in import_statements(project.read_bytes(path))
                    for tail in tails):
                starting.append(step)
                break
    return bool(starting) and all(not step.launch.per_replica for step in starting)
