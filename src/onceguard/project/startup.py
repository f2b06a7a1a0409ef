"""Which functions of a module run at every replica's start-up, and why.

A function is start-up code when a framework calls it on boot (FastAPI
lifespan or startup event, Starlette/aiohttp on_startup, Django
``AppConfig.ready``, Flask app factories and ``before_first_request``,
Celery worker signals, gunicorn hooks) or when start-up code of the same
module calls it, or hands it to a runner that calls it (``asyncio.to_thread(fn)``,
``threading.Thread(target=self._poll)``).
"""
from __future__ import annotations

import ast
import os
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ..analysis.applied_decorators import decorators
from ..analysis.facts import FunctionNode, ModuleFacts, returned_def, walk_no_nested_functions
from ..analysis.handed import handed_callable
from ..knowledge import startup as known
from . import deployment
from . import index as project


def per_replica_programs(facts: ModuleFacts) -> List[deployment.Step]:
    """The deployment steps that run this module as a program in every replica (``python -m app.migrate``
    in a container's entrypoint, a Procfile ``web:`` process, a Deployment's init container).  The CLI
    only: flake8 sees no deployment files."""

    def build(_facts: ModuleFacts) -> List[deployment.Step]:
        context = facts.context
        if not context.cross_file or not context.path or context.is_test:
            return []
        top = deployment.project_directory(context.path, facts.config, project.search_root(facts))
        steps = deployment.run_by(context.path, facts.config, top)
        return [step for step in steps if step.launch.per_replica]

    return facts.cached("startup:programs", build)


_program_files: Dict[str, FrozenSet[str]] = {}


def is_per_replica_program(config, path: str) -> bool:
    """Whether some deployment file of the project runs ``path`` as a Python program in every replica, read
    from the deployment files alone (no parse): what the prefilter asks of a file whose text may show no job,
    a program that hands its work to a loop written in another module."""
    files = per_replica_program_files(config)
    return bool(files) and os.path.abspath(path) in files


def per_replica_program_files(config) -> FrozenSet[str]:
    """The files some deployment file of the project runs as Python programs in every replica (none without a
    root)."""
    root = os.path.abspath(config.root) if config.root else ""
    if not root:
        return frozenset()
    files = _program_files.get(root)
    if files is None:
        files = _program_files[root] = frozenset(
            os.path.abspath(f) for step in deployment.steps(config)
            if step.kind in (deployment.PYTHON_MODULE, deployment.PYTHON_SCRIPT) and step.launch.per_replica
            for f in step.files)
    return files


project.on_clear(_program_files.clear)

#: ``from relay.worker import main``, ``from .worker import main``, ``import relay.worker``: a program's imports,
#: read off its text (the prefilter asks before anything is parsed).
_IMPORTED = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*)([A-Za-z_][\w.]*)?[ \t]+import|import[ \t]+([A-Za-z_][\w.]*))", re.M)
_imported_by_programs: Dict[str, FrozenSet[str]] = {}


def imported_by_program(config, path: str) -> bool:
    """Whether a program some deployment file runs in every replica imports ``path``'s module (``python -m
    relay`` whose ``__main__.py`` runs ``main()`` of ``relay/worker.py``): the loop a program repeats may be
    written there, with no word of the program in its text.  Read from the deployment files and the programs'
    import lines alone (no parse)."""
    root = os.path.abspath(config.root) if config.root else ""
    if not root:
        return False
    files = _imported_by_programs.get(root)
    if files is None:
        found = set()
        for step in deployment.steps(config):
            if step.kind not in (deployment.PYTHON_MODULE, deployment.PYTHON_SCRIPT) or not step.launch.per_replica:
                continue
            for program in step.files:
                found.update(_imported_files(program, root))
        files = _imported_by_programs[root] = frozenset(found)
    return bool(files) and os.path.abspath(path) in files


def _imported_files(program: str, root: str) -> Set[str]:
    found: Set[str] = set()
    package = os.path.dirname(os.path.abspath(program))
    base = project.package_root(program)
    dotted_package = os.path.relpath(package, base).replace(os.sep, ".") if package != base else ""
    for match in _IMPORTED.finditer(project.read_bytes(program)):
        dots, module, plain = match.group(1), match.group(2), match.group(3)
        name = (plain or module or b"").decode("ascii", "replace")
        if dots:  # relative to the program's package
            parts = dotted_package.split(".") if dotted_package else []
            up = len(dots) - 1
            if up > len(parts):
                continue
            name = ".".join(parts[:len(parts) - up] + ([name] if name else []))
        for search in (base, root):
            located = project.module_path(name, search) if name else None
            if located is not None:
                found.add(os.path.abspath(located))
                break
    return found


project.on_clear(_imported_by_programs.clear)


def is_unguarded_script(facts: ModuleFacts) -> bool:
    """A script written without a ``__main__`` guard: its own module level runs a program to completion
    (``asyncio.run(main())``, ``loop.run_until_complete(...)``), no deployment step runs it in every replica,
    and no file of the project imports it (or spells its dotted name, as a dynamic import would).  Nothing
    imports it at start-up, so its module level is the script's, run by a person.  The CLI only: read alone,
    a module cannot tell who imports it."""

    def build(_facts: ModuleFacts) -> bool:
        context = facts.context
        if not context.cross_file or not context.path or context.is_test or per_replica_programs(facts):
            return False
        if not (any(_runs_program(statement, facts) for statement in facts.tree.body) or _reads_arguments(facts)
                or _closes_what_it_opened(facts)):
            return False
        return not _imported_in_project(facts) and not _named_by_a_launch(facts)

    return facts.cached("startup:unguarded-script", build)


def _named_by_a_launch(facts: ModuleFacts) -> bool:
    """A deployment command names the module as what a server imports (``gunicorn orders.app:app``,
    ``uvicorn shop.main:app``): its module level runs in every server process."""
    from . import deployment
    from .bindings import own_module_names

    names = {name for name in own_module_names(facts) if "." in name}
    return bool(names) and any(word.split(":", 1)[0] in names
                               for launch in deployment.launches_for(facts) for word in launch.words)


def _reads_arguments(facts: ModuleFacts) -> bool:
    """Module-level code (outside any def or class) takes the arguments a person typed: ``sys.argv[1]``, or
    an argparse parser's ``parse_args()``.  Nothing imports a module for the arguments of its own command line."""
    for statement in facts.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in walk_no_nested_functions(statement):
            if isinstance(node, ast.Subscript) and (facts.qualify(node.value) or "") == "sys.argv":
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse_args":
                return True
    return False


def _closes_what_it_opened(facts: ModuleFacts) -> bool:
    """Module-level code closes a connection or client its module level opened (``conn = connect(...)`` ...
    ``conn.close()``): the module's top level does its work and ends it, as a program does; a module imported
    for what it defines keeps what it opens for the importer."""
    opened: Set[str] = set()
    for statement in facts.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in (statement, *walk_no_nested_functions(statement)):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)):
                opened.add(node.targets[0].id)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in known.CLOSE_METHODS and isinstance(node.func.value, ast.Name)
                  and node.func.value.id in opened):
                return True
    return False


def _runs_program(statement: ast.stmt, facts: ModuleFacts) -> bool:
    """A module-level statement (outside any ``if``) that runs an event loop to completion."""
    if isinstance(statement, ast.Expr):
        value = statement.value
    elif isinstance(statement, ast.Assign):
        value = statement.value
    else:
        return False
    if not isinstance(value, ast.Call):
        return False
    if (facts.callee(value) or "") in known.PROGRAM_RUNNERS:
        return True
    return isinstance(value.func, ast.Attribute) and value.func.attr in known.PROGRAM_RUNNER_METHODS


def _imported_in_project(facts: ModuleFacts) -> bool:
    """Whether some other file of the project imports this module (also one of its parent packages' names
    ending in it, or a relative import), or holds its dotted name as text.  Unreadable files count as
    importing it."""
    from .bindings import own_module_names

    names = own_module_names(facts)
    stem = facts.context.filename[:-3] if facts.context.filename.endswith(".py") else facts.context.filename
    own = os.path.abspath(facts.context.path)
    spelled = [name.encode() for name in names if "." in name]
    root = facts.config.root or project.search_root(facts)
    # An import names the module by its stem as a whole word (``import app.main``, ``from . import main``,
    # ``from .main import run``): a file where the stem is only part of another word cannot import it.
    stem_bytes = stem.encode()
    for path in project.files_mentioning(stem, root):
        if os.path.abspath(path) == own:
            continue
        data = project.read_bytes(path)
        if any(name in data for name in spelled):
            return True
        if data and not _may_import(data, stem_bytes):
            continue
        other = project.module_facts(path, facts.config)
        if other is None:
            return True
        if any(_names_module(imported, names) for imported in _imported_names(other)):
            return True
    return False


def _may_import(data: bytes, stem: bytes) -> bool:
    """Whether some import statement of the text can name ``stem``: it occurs as a whole word on a line that
    says ``import`` or ``from`` (or continues one with a backslash), or inside the parentheses of an
    ``import (...)``. A file that only uses the word otherwise is not parsed to find out."""
    from .renamed_callers import word_places

    for at in word_places(data, stem):
        start = data.rfind(b"\n", 0, at) + 1
        # a backslash continuation: the logical line begins where the last unescaped newline is
        while start > 1 and data[start - 2:start - 1] == b"\\":
            start = data.rfind(b"\n", 0, start - 2) + 1
        end = data.find(b"\n", at)
        line = data[start:end if end != -1 else len(data)]
        if b"import" in line or b"from" in line:
            return True
        opened = data.rfind(b"import", 0, at)
        if opened != -1 and data[opened + 6:at].lstrip(b" \t").startswith(b"(") and b")" not in data[opened:at]:
            return True
    return False


def _imported_names(other: ModuleFacts) -> List[str]:
    """Every dotted name an import statement of ``other`` loads (``import a.b.c`` loads ``a``, ``a.b`` and
    ``a.b.c``; ``from a.b import c`` loads those and may load ``a.b.c``), relative imports resolved."""
    found: List[str] = []
    for node in other.import_statements:
        if isinstance(node, ast.Import):
            dotted_names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = other.imports._relative(module, node.level).lstrip(".")
            dotted_names = [f"{module}.{alias.name}" if module else alias.name for alias in node.names]
        else:
            continue
        for dotted_name in dotted_names:
            parts = dotted_name.split(".")
            found.extend(".".join(parts[:index]) for index in range(1, len(parts) + 1))
    return found


def _names_module(imported: str, names) -> bool:
    """``imported`` is this module under one of its names, or the tail of one (a source root further in)."""
    return bool(imported) and any(name == imported or name.endswith("." + imported) for name in names)


class StartupMap:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.reasons: Dict[int, str] = {}
        #: ids of the functions that run at start-up because start-up code hands them to a runner
        #: (``asyncio.to_thread(poll)``), not because it calls them
        self.handed: Set[int] = set()
        #: qualified name -> (reason, the node that hands it): functions of other modules of the project that a
        #: start-up hook of this module is handed (``Litestar(on_startup=[init_db])`` with ``init_db`` imported)
        self.imported: Dict[str, Tuple[str, ast.AST]] = {}
        self._module_functions = {
            node.name: node for node in facts.tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self._find_hooks()
        self._find_import_time_calls()
        self._propagate()

    @classmethod
    def of_module(cls, facts: ModuleFacts) -> "StartupMap":
        return facts.cached("startup", cls)

    def reason(self, function: Optional[ast.AST]) -> Optional[str]:
        """Why ``function`` runs at start-up ("FastAPI lifespan", ...), or None."""
        if function is None:
            return None
        return self.reasons.get(id(function))

    def reason_for_node(self, node: ast.AST) -> Optional[str]:
        """Why the code at ``node`` runs at start-up: its enclosing function's reason, or module level."""
        function = self.facts.enclosing_function(node)
        if function is not None:
            return self.reason(function)
        if self.facts.context.is_test or self.facts.context.is_migration:
            return None
        if self.in_main_block(node):
            return None
        if self.facts.enclosing_class(node) is not None:
            return None
        return "module level (runs when the module is imported)"

    @staticmethod
    def in_main_block(node: ast.AST) -> bool:
        from ..analysis.facts import ancestors

        for above in ancestors(node):
            if isinstance(above, ast.If) and is_main_guard(above.test):
                return True
        return False

    # -- discovery ------------------------------------------------------------
    def _hook(self, element: ast.AST, reason: str) -> None:
        """A start-up hook handed ``element``: a function of this module, or one imported from the project."""
        function = self._function_named(element)
        if function is not None:
            self._mark(function, reason)
        elif isinstance(element, (ast.Name, ast.Attribute)) and self.facts.context.cross_file:
            qualified = self.facts.qualify(element)
            if qualified and "." in qualified:
                self.imported.setdefault(qualified, (reason, element))

    def _mark(self, function: Optional[ast.AST], reason: str, handed: bool = False) -> None:
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(function) not in self.reasons:
            self.reasons[id(function)] = reason
            if handed:
                self.handed.add(id(function))

    def _function_named(self, node: ast.AST) -> Optional[FunctionNode]:
        if isinstance(node, ast.Name):
            return self._module_functions.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            # ``FastAPI(lifespan=self._lifespan)`` in a class that owns the app: a method of that class
            owner = self.facts.enclosing_class(node)
            found = next((s for s in owner.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and s.name == node.attr), None) if owner is not None else None
            if found is not None:
                return found
        return self.facts.module_method(node)

    def _find_hooks(self) -> None:
        facts = self.facts
        for function in facts.functions:
            for decorator in decorators(function, facts):
                call = decorator if isinstance(decorator, ast.Call) else None
                target = call.func if call else decorator
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name in known.STARTUP_EVENT_DECORATORS and call and call.args and _is_const(call.args[0], known.STARTUP_EVENT_NAMES):
                    self._mark(function, "startup event handler")
                elif name in known.BEFORE_FIRST_REQUEST:
                    self._mark(function, "Flask before_first_request hook")
                elif name in known.SERVING_HOOK_DECORATORS and isinstance(target, ast.Attribute):
                    self._mark(function, f"{name} hook")
                elif name in known.LISTENER_DECORATORS and call and call.args \
                        and _is_const(call.args[0], known.SERVING_EVENTS):
                    self._mark(function, f"{call.args[0].value} listener")
                elif name == "connect" and isinstance(target, ast.Attribute):
                    qualified = facts.qualify(target.value) or ""
                    if qualified in known.CELERY_STARTUP_SIGNALS:
                        self._mark(function, f"Celery {qualified.rsplit('.', 1)[-1]} signal")
            if function.name in known.APP_FACTORY_NAMES and facts.enclosing_class(function) is None:
                self._mark(function, f"app factory {function.name}()")
            if function.name == "ready":
                cls_node = facts.enclosing_class(function)
                if cls_node is not None and any(
                    (facts.qualify(base) or "") in known.APPCONFIG_BASES for base in cls_node.bases
                ):
                    self._mark(function, "Django AppConfig.ready()")
            if function.name in known.GUNICORN_HOOKS and "gunicorn" in facts.context.filename:
                self._mark(function, f"gunicorn {function.name} hook")
        for call in facts.calls:
            for keyword in call.keywords:
                if keyword.arg in known.LIFESPAN_KEYWORDS:
                    lifespan = self._lifespan_function(keyword.value)
                    if lifespan is not None:
                        self._mark(lifespan, "lifespan handler")
                    else:  # ``lifespan=lifespan`` imported from another module of the project
                        self._hook(keyword.value, "lifespan handler")
                elif keyword.arg in known.ON_STARTUP_KEYWORDS and isinstance(keyword.value, (ast.List, ast.Tuple)):
                    for element in keyword.value.elts:
                        self._hook(element, "on_startup handler")
            func = call.func
            if isinstance(func, ast.Attribute):
                if func.attr == known.ADD_EVENT_HANDLER and len(call.args) >= 2 and _is_const(call.args[0], known.STARTUP_EVENT_NAMES):
                    self._hook(call.args[1], "startup event handler")
                elif func.attr in known.LISTENER_REGISTRATIONS and len(call.args) >= 2 \
                        and _is_const(call.args[1], known.SERVING_EVENTS):
                    self._hook(call.args[0], f"{call.args[1].value} listener")
                elif func.attr in known.SERVING_HOOK_DECORATORS and len(call.args) == 1 and not call.keywords:
                    self._hook(call.args[0], f"{func.attr} hook")  # ``app.before_server_start(open_pool)``
                elif (func.attr in ("append", "insert") and isinstance(func.value, ast.Attribute)
                      and func.value.attr in known.STARTUP_LISTS and call.args):
                    self._hook(call.args[-1], f"{func.value.attr} hook")
                elif (func.attr == "extend" and isinstance(func.value, ast.Attribute)
                      and func.value.attr in known.STARTUP_LISTS and call.args
                      and isinstance(call.args[0], (ast.List, ast.Tuple))):
                    # ``app.cleanup_ctx.extend([database, pollers])``: each element is a hook as an append's is
                    for element in call.args[0].elts:
                        self._hook(element, f"{func.value.attr} hook")

    def _lifespan_function(self, value: ast.AST, depth: int = 0) -> Optional[FunctionNode]:
        """The function given as ``lifespan=``: a def by name, or the nested def that a lifespan factory
        returns (``lifespan=get_lifespan(version=v)``, also through a local name bound to that call)."""
        if depth > 3:
            return None
        if isinstance(value, ast.Attribute):
            return self._function_named(value)  # ``lifespan=service.lifespan``
        if isinstance(value, ast.Name):
            function = self._function_named(value)
            if function is not None:
                return function
            scope = self.facts.enclosing_function(value)
            body = scope.body if scope is not None else self.facts.tree.body
            for statement in body:
                if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
                        and any(isinstance(t, ast.Name) and t.id == value.id for t in statement.targets)):
                    return self._lifespan_function(statement.value, depth + 1)
            return None
        if isinstance(value, ast.Call):
            factory = self._function_named(value.func)
            return returned_def(factory) if factory is not None else None
        return None

    def _find_import_time_calls(self) -> None:
        """Functions of this module called by its own module-level code run when the module is imported
        (``if ENABLE_MIGRATIONS: run_migrations()`` in a config module): at every replica's start-up.
        A script's module level (a ``__main__`` block, a file under scripts/ or a management command) is
        not the server's."""
        facts = self.facts
        context = facts.context
        if context.is_test:
            return
        if per_replica_programs(facts):
            self._mark_module_level_calls("called by module-level code of a program every replica runs")
            return
        if is_unguarded_script(facts):
            return
        if context.is_migration:
            return
        parts = context.parts[:-1]
        first, second = known.SCRIPT_COMMAND_PARTS
        if any(parts[i] == first and parts[i + 1] == second for i in range(len(parts) - 1)):
            return
        if any(part in known.SCRIPT_DIRECTORIES for part in parts) or context.filename in known.SCRIPT_FILENAMES:
            return
        body = facts.tree.body
        if any(isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in body):
            return
        self._mark_module_level_calls("called by module-level code, which runs when the module is imported")

    def _mark_module_level_calls(self, reason: str) -> None:
        for statement in self.facts.tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for node in walk_no_nested_functions(statement):
                if isinstance(node, ast.Call):
                    self._mark(self._function_named(node.func), reason)
                    self._mark(self._handed(node, None), reason, handed=True)

    def _propagate(self) -> None:
        """Functions of this module, and methods of the same class (``AppConfig.ready`` calling
        ``self.start_tickers()``), called from start-up code run at start-up too."""
        pending = [f for f in self.facts.functions if id(f) in self.reasons]
        while pending:
            function = pending.pop()
            for node in walk_no_nested_functions(function):
                if not isinstance(node, ast.Call):
                    continue
                called = self._function_named(node.func) or self._method_called(node.func, function)
                # A call hands a function on (``await run_blocking(seed)``) as well as it calls one.
                for callee, handed in ((called, False), (self._handed(node, function), True)):
                    if callee is not None and id(callee) not in self.reasons:
                        self.reasons[id(callee)] = f"called from start-up code ({function.name})"
                        if handed:
                            self.handed.add(id(callee))
                        pending.append(callee)

    def _handed(self, call: ast.Call, caller: Optional[FunctionNode]) -> Optional[FunctionNode]:
        """The function of this module a runner call runs (``asyncio.to_thread(upgrade)``,
        ``threading.Thread(target=self._poll)``): handed to it, it runs there."""
        handed = handed_callable(call, self.facts)
        if handed is None:
            return None
        return self._function_named(handed) or (self._method_called(handed, caller) if caller is not None else None)

    def _method_called(self, func: ast.AST, caller: FunctionNode) -> Optional[FunctionNode]:
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in ("self", "cls")):
            return None
        cls_node = self.facts.enclosing_class(caller)
        if cls_node is None:
            return None
        for statement in cls_node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
                return statement
        return None


def _is_const(node: ast.AST, values) -> bool:
    return isinstance(node, ast.Constant) and node.value in values


def is_main_guard(test: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
