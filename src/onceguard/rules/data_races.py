"""Data races between replicas: a value read, changed in Python and written back (OG301); the row
pickups of OG302 are in ``row_pickup``, which shares the chain and loader helpers here.  reference/frameworks.md §6.

Everything here is judged within one function: the load, the change and the write must all be
visible there, and the objects must come from a visible ORM loader, a SQL text the module sends or a
Redis client whose origin is known.  Arithmetic done by the database (``F("n") + 1``,
``Model.n + 1``, ``SET n = n + 1``, ``INCR``) never reaches these rules as a Python value.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from pglast import ast as pg

from ..project import index as project
from ..analysis.executed_sql import ExecutedSql, bound_value, executed_sql
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, parent, walk_no_nested_functions
from .fix_plans import orm_update_fix
from ..analysis.handles import Handles
from ..knowledge import orm
from ..knowledge import redis_clients as redis_known
from ..model import Diagnostic
from ..analysis.names import dotted
from .registry import register
from ..analysis.sql import parse_statements, placeholder_names
from . import next_numbers
from .base import Rule
from .redis_leases import _client_calls, argument, has_spread, key_argument, redis_call, short

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_OPERATOR = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
             ast.Pow: "**"}


# -- chains --------------------------------------------------------------------------------------------

#: An attribute/call chain from its head outwards: (attribute or method name, the Call/Subscript or None).
Links = List[Tuple[str, Optional[ast.AST]]]


def unwrap(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Await):
        node = node.value
    return node


def chain(expr: ast.AST) -> Tuple[ast.AST, Links]:
    """``Job.objects.filter(a)[:5].first()`` -> (``Job``, [("objects", None), ("filter", call), ("[]", sub),
    ("first", call)]).  A call of a plain name (``select(Job)``) is a head."""
    links: Links = []
    node = unwrap(expr)
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            links.append((node.func.attr, node))
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            links.append((node.attr, None))
            node = node.value
        elif isinstance(node, ast.Subscript):
            links.append(("[]", node))
            node = node.value
        elif isinstance(node, ast.Await):
            node = node.value
        else:
            break
    links.reverse()
    return node, links


def names_in(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def target_names(target: ast.AST) -> List[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def later(node: ast.AST, than: ast.AST) -> bool:
    return (node.lineno, node.col_offset) > (than.lineno, than.col_offset)


def function_nodes(function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    return facts.cached(f"function_nodes:{id(function)}", lambda _f: list(walk_no_nested_functions(function)))


def module_imports_any(facts: ModuleFacts, modules: Iterable[str]) -> bool:
    heads = {target.split(".", 1)[0] for target in facts.imports.aliases.values()}
    return any(module in heads for module in modules)


# -- Django ---------------------------------------------------------------------------------------------


#: Flask-SQLAlchemy's ``Model.query`` writes through whatever ``<db>.session`` the app commits.
FLASK_SESSION = "<flask-sqlalchemy session>"


@dataclass
class Loaded:
    """Where a model instance (or rows) came from."""

    framework: str  # "django" | "sqlalchemy"
    model: str
    call: ast.AST  # the loader expression
    locked: bool
    session: Optional[str] = None  # SQLAlchemy: the dotted session the write must go through


def django_queryset(expr: ast.AST) -> Optional[Tuple[str, Links]]:
    """(model, links after the manager) when ``expr`` is ``Model.objects....``."""
    head, links = chain(expr)
    for index, (name, call) in enumerate(links):
        if name in orm.DJANGO_MANAGERS and call is None:
            model = dotted(head) if not links[:index] else ".".join(
                [dotted(head) or "?"] + [n for n, _ in links[:index]])
            if model is None:
                return None
            return model, links[index + 1:]
    return None


def django_instance_loader(expr: ast.AST, facts: ModuleFacts) -> Optional[Loaded]:
    expr = unwrap(expr)
    if isinstance(expr, ast.Call) and facts.callee(expr) in orm.DJANGO_SHORTCUT_LOADERS and expr.args:
        first = expr.args[0]
        queryset = django_queryset(first)
        if queryset is not None:
            model, links = queryset
            return Loaded("django", model, expr, any(n == orm.DJANGO_ROW_LOCK for n, _ in links))
        return Loaded("django", dotted(first) or "Model", expr, False)
    queryset = django_queryset(expr)
    if queryset is None:
        return None
    model, links = queryset
    if not links:
        return None
    last = links[-1][0]
    if last in orm.DJANGO_INSTANCE_LOADERS or last in orm.DJANGO_PAIR_LOADERS or (
            last == "[]" and isinstance(links[-1][1].slice, ast.Constant)):
        return Loaded("django", model, expr, any(n == orm.DJANGO_ROW_LOCK for n, _ in links))
    return None


# -- SQLAlchemy -------------------------------------------------------------------------------------------


def sa_statement(node: ast.AST, facts: ModuleFacts) -> Optional[Tuple[str, Links, ast.Call]]:
    """(model, links, select call) for ``select(Model).where(...)...``, following one name binding."""
    node = unwrap(node)
    if isinstance(node, ast.Name):
        value = bound_value(node, facts)
        if value is None:
            return None
        node = unwrap(value)
    head, links = chain(node)
    if isinstance(head, ast.Call) and facts.callee(head) in orm.SA_SELECT and head.args:
        return dotted(head.args[0]) or "Model", links, head
    return None


def _is_sa_session(receiver: ast.AST, facts: ModuleFacts) -> bool:
    handle = Handles.of_module(facts).of(receiver)
    return handle is not None and handle.library == "sqlalchemy"


def sa_source(expr: ast.AST, facts: ModuleFacts, many: bool) -> Optional[Loaded]:
    """An SQLAlchemy expression that loads one instance (``many=False``) or rows of instances (``many=True``)."""
    expr = unwrap(expr)
    head, links = chain(expr)
    if not links:
        return None
    terminals = orm.SA_MANY if many else orm.SA_ONE
    # session.get(Model, pk)
    if not many and len(links) == 1 and links[0][0] in orm.SA_SESSION_GET and isinstance(expr, ast.Call):
        if len(expr.args) >= 2 and _is_sa_session(expr.func.value, facts):
            locked = any(k.arg == orm.SA_ROW_LOCK_KEYWORD and not _falsy(k.value) for k in expr.keywords)
            return Loaded("sqlalchemy", dotted(expr.args[0]) or "Model", expr, locked, dotted(expr.func.value))
        return None
    for index, (name, call) in enumerate(links):
        if call is None or not isinstance(call, ast.Call):
            continue
        rest = links[index + 1:]
        session_node = call.func.value
        if name == orm.SA_QUERY and call.args:
            if not (_is_sa_session(session_node, facts) or module_imports_any(facts, orm.SA_MODULES)):
                return None
            if not _ends_with(rest, terminals, many, orm.SA_QUERY_METHODS):
                return None
            locked = any(n == orm.SA_ROW_LOCK for n, _ in rest)
            return Loaded("sqlalchemy", dotted(call.args[0]) or "Model", expr, locked, dotted(session_node))
        if name in orm.SA_EXECUTE and call.args:
            statement = sa_statement(call.args[0], facts)
            if statement is None:
                return None
            model, statement_links, _ = statement
            # session.scalar(select(M)) returns the instance itself.
            if not rest and not (name == "scalar" and not many) and not (many and name in ("scalars", "exec")):
                return None
            last = terminals | {"scalars"} if many else terminals
            if rest and not _ends_with(rest, last, many, frozenset({"scalars", "unique"})):
                return None
            locked = any(n == orm.SA_ROW_LOCK for n, _ in statement_links)
            return Loaded("sqlalchemy", model, expr, locked, dotted(session_node))
    # Flask-SQLAlchemy: Model.query.filter_by(...).first()
    if (isinstance(head, ast.Name) and links[0] == ("query", None)
            and module_imports_any(facts, orm.SA_MODULES)
            and _ends_with(links[1:], terminals, many, orm.SA_QUERY_METHODS)):
        return Loaded("sqlalchemy", head.id, expr, any(n == orm.SA_ROW_LOCK for n, _ in links), FLASK_SESSION)
    return None


def _ends_with(links, terminals, many: bool, between) -> bool:
    """The chain after the loader: query methods, then one terminal (rows may also be iterated directly)."""
    if not links:
        return many
    *middle, (last, _) = links
    return last in terminals and all(name in between for name, _ in middle)


def _falsy(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _session_matches(session: Optional[str], receiver: ast.AST) -> bool:
    """Whether ``receiver`` is the session the rows were loaded through."""
    spelled = dotted(receiver) or ""
    if session == FLASK_SESSION:
        return spelled.endswith("session")
    return spelled == session


# -- value flow within a function ----------------------------------------------------------------------------


class Flow:
    """Which local names hold a value read from the store (``tainted``) and which hold Python arithmetic
    on such a value (``computed``), following assignments in source order."""

    def __init__(self, function: FunctionNode, facts: ModuleFacts, is_source: Callable[[ast.AST], bool]) -> None:
        self.is_source = is_source
        self.tainted: Set[str] = set()
        self.computed: Set[str] = set()
        for node in function_nodes(function, facts):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n for t in targets for n in target_names(t)]
                if self.arithmetic(node.value):
                    self.computed.update(names)
                    self.tainted.update(names)
                elif self.reads(node.value):
                    self.tainted.update(names)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if node.target.id in self.tainted and isinstance(node.op, _ARITHMETIC):
                    self.computed.add(node.target.id)

    def reads_here(self, node: ast.AST) -> bool:
        """This one node is a read (a tainted name or the source), without looking below it."""
        return (isinstance(node, ast.Name) and node.id in self.tainted) or self.is_source(node)

    def reads(self, node: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id in self.tainted) or self.is_source(n) for n in ast.walk(node))

    def arithmetic(self, node: ast.AST) -> bool:
        if any(isinstance(n, ast.Name) and n.id in self.computed for n in ast.walk(node)):
            return True
        marked = _containing(node, self.reads_here)
        return bool(marked) and any(
            isinstance(n, ast.BinOp) and isinstance(n.op, _ARITHMETIC) and (
                id(n.left) in marked or id(n.right) in marked) and not _set_algebra(n) for n in ast.walk(node))


# -- OG301 ---------------------------------------------------------------------------------------------------


#: Module names that hold test helpers (Django's ``tests.py``, a package's ``test.py`` of fixtures).
_TEST_MODULES = frozenset({"test.py", "tests.py", "testing.py"})


def _single_process(facts: ModuleFacts) -> bool:
    """Tests, data migrations and operator commands (``manage.py …``, scripts) run in one process, once:
    nothing interleaves with them."""
    context = facts.context
    return (context.is_test or context.is_migration or context.is_operator_entrypoint
            or context.filename in _TEST_MODULES)


@dataclass
class Mutation:
    statement: ast.stmt
    instance: str
    field: str
    op: str
    amount: str


def _mutation(statement: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[Mutation]:
    """``obj.n += k`` / ``obj.n = obj.n + k`` (also through one local: ``new = obj.n - k; obj.n = new``)."""
    if isinstance(statement, ast.AugAssign):
        target = statement.target
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and isinstance(statement.op, _ARITHMETIC) and not _database_expression(statement.value, facts)):
            return Mutation(statement, target.value.id, target.attr, _OPERATOR[type(statement.op)],
                            short(statement.value, 30))
        return None
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return None
    if _database_expression(statement.value, facts):
        return None
    instance, field = target.value.id, target.attr

    def reads_field(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == field and isinstance(node.value, ast.Name)
                and node.value.id == instance)

    value = statement.value
    if isinstance(value, ast.Name):
        bound = _local_value_before(value, statement, function, facts)
        if bound is None:
            return None
        value = bound
    for node in ast.walk(value):
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
            if reads_field(node.left):
                return Mutation(statement, instance, field, _OPERATOR[type(node.op)], short(node.right, 30))
            if reads_field(node.right):
                return Mutation(statement, instance, field, _OPERATOR[type(node.op)], short(node.left, 30))
    return None


def _local_value_before(name: ast.Name, statement: ast.AST, function: FunctionNode,
                        facts: ModuleFacts) -> Optional[ast.AST]:
    found = None
    for node in function_nodes(function, facts):
        if node is statement:
            break
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name.id):
            found = node.value
    return found


def _database_expression(node: ast.AST, facts: ModuleFacts) -> bool:
    """``F("n") + 1`` or ``Counter.n + 1``: the database does the arithmetic."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and facts.callee(n) in orm.DJANGO_F:
            return True
    return False


def _instance_bindings(function: FunctionNode, facts: ModuleFacts) -> Dict[str, List[Tuple[ast.AST, Loaded]]]:
    """name -> [(assignment, loader)] for names bound to one ORM instance in this function."""
    table: Dict[str, List[Tuple[ast.AST, Loaded]]] = {}
    for node in function_nodes(function, facts):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        if isinstance(node, ast.Assign):
            target = node.targets[0] if len(node.targets) == 1 else None
        else:
            target = node.target
        if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
            name = target.elts[0].id  # obj, created = Model.objects.get_or_create(...)
        elif isinstance(target, ast.Name):
            name = target.id
        else:
            continue
        loaded = (django_instance_loader(node.value, facts) or sa_source(node.value, facts, many=False)
                  or _session_get(node.value, facts))
        if loaded is not None:
            table.setdefault(name, []).append((node, loaded))
    return table


def _core_reads(model: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Dict[int, Optional[str]]:
    """Calls before ``before`` that run an unlocked ``select(model)`` / ``select(model.col)``: id -> column
    (None for the whole row)."""
    found: Dict[int, Optional[str]] = {}
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in orm.SA_EXECUTE and node.args and later(before, node)):
            continue
        statement = sa_statement(node.args[0], facts)
        if statement is None:
            continue
        selected, statement_links, select_call = statement
        if any(name == orm.SA_ROW_LOCK for name, _ in statement_links):
            continue
        for argument_node in select_call.args:
            spelled = dotted(argument_node) or ""
            if spelled == model:
                found[id(node)] = None
            elif spelled.rpartition(".")[0] == model:
                found[id(node)] = spelled.rpartition(".")[2]
    return found


def _names_compared(links: Links) -> Set[str]:
    """Columns the UPDATE's WHERE mentions (``.where(M.version == v)``, ``.filter_by(meta=old)``): a
    compare-and-set on the value written."""
    names: Set[str] = set()
    for name, call in links:
        if name in orm.PICKUP_FILTER_METHODS and isinstance(call, ast.Call):
            names.update(k.arg for k in call.keywords if k.arg)
            names.update(n.attr for a in call.args for n in ast.walk(a) if isinstance(n, ast.Attribute))
    return names


#: Class-body calls that declare a mapped column: SQLAlchemy ``Column``/``mapped_column``, Django ``*Field``.
_COLUMN_CALLS = frozenset({"Column", "mapped_column", "relationship", "ForeignKey"})


def _model_columns(cls: ast.ClassDef, facts: ModuleFacts) -> Set[str]:
    """The columns a mapped model class declares in its body (SQLAlchemy ``Column``/``mapped_column``,
    Django ``models.*Field``); empty for any other class (a serializer's fields are not columns)."""
    def build(_facts: ModuleFacts) -> Set[str]:
        columns: Set[str] = set()
        for statement in cls.body:
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = unwrap(statement.value)
            if not isinstance(value, ast.Call):
                continue
            spelled = dotted(value.func) or ""
            qualified = facts.callee(value) or ""
            if (spelled.rsplit(".", 1)[-1] in _COLUMN_CALLS
                    or spelled.endswith("Field") and (qualified.startswith("django.") or spelled.startswith("models."))):
                columns.update(t.id for t in targets if isinstance(t, ast.Name))
        return columns

    return facts.cached(f"model_columns:{id(cls)}", build)


def _model_method(model: str, method: str, facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The ``def`` of ``Model.method`` for a model named in a loader: in this module, or where the model's
    import points (following one re-export through a package ``__init__``)."""
    head, _, rest = model.partition(".")
    if not rest:
        for cls in facts.classes:
            if cls.name == model and facts.enclosing_class(cls) is None:
                for statement in cls.body:
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == method:
                        return statement, facts
                return None
    qualified = facts.imports.aliases.get(head)
    if qualified is None:
        return None
    qualified = f"{qualified}.{rest}" if rest else qualified
    roots = project.roots_for(facts)
    found = project.find_function(f"{qualified}.{method}", facts.config, roots)
    if found is not None:
        return found
    module, _, name = qualified.rpartition(".")
    path = project.module_path(module, roots)
    other = project.module_facts(path, facts.config) if path else None
    target = other.imports.aliases.get(name) if other is not None else None
    if target is None or target == qualified:
        return None
    return project.find_function(f"{target}.{method}", facts.config, roots)


_GETTER, _SETTER = "get_", "set_"


def _accessor_write(read: ast.Call, receiver: str, name: str, function: FunctionNode,
                    facts: ModuleFacts) -> Optional[ast.Call]:
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, read)
                and plain_name(node.func.value) == receiver):
            continue
        if node.func.attr == _SETTER + name and node.args:
            return node
        if any(isinstance(a, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == name for k in a.keys)
               for a in node.args):
            return node
    return None


def _keyed(value: ast.AST, name: str) -> ast.AST:
    """The value a dict argument gives ``name`` (``{"count": n + 1}``), or the argument itself."""
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and key.value == name:
                return item
    return value


def _first_arithmetic(flow: "Flow", read: ast.AST, write: ast.AST, function: FunctionNode,
                      facts: ModuleFacts) -> ast.AST:
    """Where the value read is first changed: ``n += 1`` / ``n = n + 1`` after the read, else the write."""
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(node, read) or not later(write, node):
            continue
        if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in flow.tainted
                and isinstance(node.op, _ARITHMETIC)):
            return node
        if isinstance(node, ast.Assign) and flow.arithmetic(node.value):
            return node
    return write


#: Hash commands that show a class's ``__setitem__`` writes a Redis hash field.
_HASH_WRITES = frozenset({"hset", "hsetnx", "hmset"})


def _remote_dict_names(facts: ModuleFacts) -> Set[str]:
    """Module-level names bound (in some branch) to an instance of a project class whose ``__setitem__``
    writes a Redis hash: item assignment there is a network write other replicas see."""
    def build(_facts: ModuleFacts) -> Set[str]:
        names: Set[str] = set()
        for statement in facts.assigns:
            if not isinstance(statement, ast.Assign) or facts.enclosing_function(statement) is not None:
                continue
            value = statement.value
            if not isinstance(value, ast.Call):
                continue
            qualified = facts.callee(value)
            if not qualified or not qualified.rsplit(".", 1)[-1][:1].isupper():
                continue  # only a class makes an instance with ``__setitem__``
            if not _setitem_writes_hash(qualified, facts):
                continue
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        return names

    return facts.cached("remote_dict_names", build)


def _setitem_writes_hash(qualified: str, facts: ModuleFacts) -> bool:
    if "." not in qualified:
        method = None
        for cls in facts.classes:
            if cls.name == qualified:
                method = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__setitem__"),
                              None)
        found = (method, facts) if method is not None else None
    else:
        found = project.find_function(f"{qualified}.__setitem__", facts.config, project.roots_for(facts))
    if found is None:
        return False
    method, where = found
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _HASH_WRITES or (
                    node.func.attr in redis_known.WRITES and redis_call(node, where) is not None):
                return True
    return False


def _remote_read_back(assign: ast.Assign, name: str, key: ast.AST, function: FunctionNode,
                      facts: ModuleFacts) -> Optional[ast.AST]:
    """The read of ``name[key]`` the assigned value was built from: ``{**name.get(key), ...}`` in the value
    itself, or a local taken from ``name.get(key)`` / ``name[key]`` / ``for key, local in name.items()`` and
    changed in place before being put back."""
    key_text = ast.unparse(key)

    def reads_entry(node: ast.AST) -> Optional[ast.AST]:
        for n in ast.walk(node):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.args
                    and ast.unparse(n.args[0]) == key_text):
                return n
            if (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
                    and n.value.id == name and ast.unparse(n.slice) == key_text):
                return n
        return None

    value = assign.value
    direct = reads_entry(value)
    if direct is not None and not isinstance(unwrap(value), (ast.Call, ast.Subscript)):
        return direct
    if not isinstance(value, ast.Name):
        return None
    local = value.id
    origin: Optional[ast.AST] = None
    changed = False
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(assign, node):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Tuple) and len(
                node.target.elts) == 2 and isinstance(node.target.elts[1], ast.Name) and node.target.elts[1].id == local:
            iterated = node.iter.args[0] if isinstance(node.iter, ast.Call) and node.iter.args else node.iter
            if (isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute)
                    and iterated.func.attr == "items" and isinstance(iterated.func.value, ast.Name)
                    and iterated.func.value.id == name and ast.unparse(node.target.elts[0]) == key_text):
                origin, changed = node, False
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == local for t in node.targets):
            read = reads_entry(node.value)
            origin, changed = (read, False) if read is not None else (None, False)
        elif origin is not None and _changes_local(node, local):
            changed = True
    return origin if changed else None


def _changes_local(statement: ast.stmt, local: str) -> bool:
    if isinstance(statement, ast.Delete):
        return any(isinstance(t, ast.Subscript) and isinstance(_subscript_root(t), ast.Name)
                   and _subscript_root(t).id == local for t in statement.targets)
    if isinstance(statement, (ast.Assign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return any(isinstance(t, ast.Subscript) and isinstance(_subscript_root(t), ast.Name)
                   and _subscript_root(t).id == local for t in targets)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return (isinstance(func, ast.Attribute) and func.attr in _IN_PLACE
                and isinstance(_subscript_root(func.value), ast.Name) and _subscript_root(func.value).id == local)
    return False


def _session_get(expr: ast.AST, facts: ModuleFacts) -> Optional[Loaded]:
    """``await session.get(User, user_id)`` on a session whose origin is a project helper
    (``async with get_db() as session``): in a module that imports SQLAlchemy, a mapped class and a key
    are enough; the later ``session.commit()`` on the same name is the write."""
    expr = unwrap(expr)
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in orm.SA_SESSION_GET and len(expr.args) >= 2):
        return None
    model = dotted(expr.args[0]) or ""
    if not model.rsplit(".", 1)[-1][:1].isupper() or not module_imports_any(facts, orm.SA_MODULES):
        return None
    locked = any(k.arg == orm.SA_ROW_LOCK_KEYWORD and not _falsy(k.value) for k in expr.keywords)
    return Loaded("sqlalchemy", model, expr, locked, dotted(expr.func.value))


def _loader_before(bindings: List[Tuple[ast.AST, Loaded]], node: ast.AST) -> Optional[Loaded]:
    found = None
    for assignment, loaded in bindings:
        if later(node, assignment):
            found = loaded
    return found


def _relocked_before(instance: str, node: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``ti.refresh_from_db(lock_for_update=True)`` / ``session.refresh(ti, with_for_update=True)`` before
    the change: the instance was re-read under a row lock."""
    for call in function_nodes(function, facts):
        if not (isinstance(call, ast.Call) and later(node, call)):
            continue
        if not any(k.arg in orm.ROW_LOCK_KEYWORDS and not _falsy(k.value) for k in call.keywords):
            continue
        receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
        if receiver == instance or any(dotted(a) == instance for a in call.args):
            return True
    return False


# -- instances changed and written back ---------------------------------------------------------------------
# The write proves the value is a stored row: ``obj.save()``, ``session.add(obj)`` then ``commit()``/``flush()``,
# ``session.merge(obj)``, or a queryset ``update(n=obj.n)``.  Where the instance came from (a parameter,
# ``self.token``, a repository method, ``.all()[0]``, a loop over rows) does not matter once it is written back.

#: Methods that change a list, dict or set in place.
_IN_PLACE = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "remove", "discard",
                       "add", "clear"})
#: ``obj.tags.append(x)``: a list column grown in place (Django ``ArrayField``/``JSONField``).  Only reported with
#: an instance ``save()``: on SQLAlchemy a relationship collection's ``append`` inserts a link row instead, and
#: Django's many-to-many managers (``add``/``remove``/``clear``) write their own rows.
_LIST_GROWTH = frozenset({"append", "extend", "insert"})
#: Calls that copy a value: ``dict(obj.meta)``, ``list(obj.tags)``, ``deepcopy(obj.data)``.
_COPY_CALLS = frozenset({"dict", "list", "set", "copy", "deepcopy", "OrderedDict", "defaultdict"})
#: ``save(update_fields=[...])``: the fields a Django save writes.
_UPDATE_FIELDS = "update_fields"


def plain_name(node: ast.AST) -> Optional[str]:
    """``self.token`` -> "self.token"; None for anything but names and attributes (no calls, no subscripts)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _field_of(node: ast.AST) -> Optional[Tuple[str, str]]:
    """``obj.meta`` / ``self.token.count`` -> (instance, field)."""
    node = unwrap(node)
    if isinstance(node, ast.Attribute):
        instance = plain_name(node.value)
        if instance is not None:
            return instance, node.attr
    return None


def _copied_field(value: ast.AST) -> Optional[Tuple[str, str]]:
    """The field a local starts as a copy of: ``obj.meta``, ``obj.meta or {}``, ``dict(obj.meta or {})``,
    ``obj.meta.copy()``, ``{**obj.meta}``, either branch of ``{} if reset else dict(obj.meta)``."""
    value = unwrap(value)
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and value.values:
        return _copied_field(value.values[0])
    if isinstance(value, ast.IfExp):  # ``{} if reset else dict(obj.meta)``: a copy on one branch
        return _copied_field(value.body) or _copied_field(value.orelse)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in _COPY_CALLS and len(value.args) == 1 and not value.keywords:
            return _copied_field(value.args[0])
        if isinstance(func, ast.Attribute) and func.attr == "copy" and not value.args:
            return _copied_field(func.value)
        return None
    if isinstance(value, ast.Dict) and len(value.keys) == 1 and value.keys[0] is None:
        return _copied_field(value.values[0])
    return _field_of(value)


def _tuple_branches(value: ast.AST) -> List[ast.Tuple]:
    """``a, b = (x, y)`` and ``a, b = ({}, {}) if reset else (x, y)``: the tuples a target may take."""
    value = unwrap(value)
    if isinstance(value, ast.Tuple):
        return [value]
    if isinstance(value, ast.IfExp):
        return _tuple_branches(value.body) + _tuple_branches(value.orelse)
    return []


def _subscript_root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _is_field(node: ast.AST, instance: str, field: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == field and plain_name(node.value) == instance


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _reads(node: ast.AST, instance: str, field: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == field and plain_name(n.value) == instance
               for n in ast.walk(node))


def _reads_name(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _containing(root: ast.AST, is_read: Callable[[ast.AST], bool]) -> Set[int]:
    """ids of the nodes under ``root`` (itself included) whose subtree holds a node ``is_read`` accepts.
    One walk and one climb per read, so deep expressions (a 2,500-term concatenation) stay linear."""
    marked: Set[int] = set()
    for n in ast.walk(root):
        if not is_read(n):
            continue
        current: Optional[ast.AST] = n
        while current is not None and id(current) not in marked:
            marked.add(id(current))
            if current is root:
                break
            current = parent(current)
    return marked


def _arithmetic_on(node: ast.AST, is_read: Callable[[ast.AST], bool]) -> Optional[ast.BinOp]:
    """The first ``+ - * / ...`` in ``node`` with an operand that reads the value (``is_read`` judges one
    node, not a subtree)."""
    marked = _containing(node, is_read)
    if not marked:
        return None
    for n in ast.walk(node):
        if (isinstance(n, ast.BinOp) and isinstance(n.op, _ARITHMETIC)
                and (id(n.left) in marked or id(n.right) in marked)
                and not _text(n.left) and not _text(n.right) and not _set_algebra(n)):
            return n
    return None


def _set_algebra(node: ast.BinOp) -> bool:
    """``set(a) - set(b)``: comparing two collections, not counting."""
    def is_set(n: ast.AST) -> bool:
        return isinstance(n, (ast.Set, ast.SetComp)) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("set", "frozenset"))
    return is_set(node.left) or is_set(node.right)


def _text(node: ast.AST) -> bool:
    """A string literal or f-string: ``obj.prefix + "TEST-"`` builds text, it does not count."""
    return isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str)


def _merged(node: ast.AST, is_read: Callable[[ast.AST], bool]) -> bool:
    """``{**old, k: v}`` or ``old | new``: a dict built from the value read (``is_read`` judges one node)."""
    marked = _containing(node, is_read)
    if not marked:
        return False
    for n in ast.walk(node):
        if isinstance(n, ast.Dict) and any(k is None and id(v) in marked for k, v in zip(n.keys, n.values)):
            return True
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) and (id(n.left) in marked or id(n.right) in marked):
            return True
    return False


@dataclass
class Change:
    statement: ast.AST  # where it is reported: the arithmetic, or the value put back
    instance: str
    field: str
    kind: str  # "arithmetic" | "merge" | "in place"
    back: ast.AST  # the statement after which the instance holds the new value
    op: str = "+"
    amount: str = "k"


class _Copy:
    def __init__(self, instance: str, field: str) -> None:
        self.instance, self.field = instance, field
        self.first_change: Optional[ast.AST] = None
        self.first_arithmetic: Optional[Tuple[ast.AST, str, str]] = None


def _dominates(earlier: ast.stmt, later_node: ast.AST) -> bool:
    """Whether ``earlier`` always runs before ``later_node``: it sits in a statement list that holds
    ``later_node`` (or a block around it), before it."""
    body_owner = parent(earlier)
    if body_owner is None:
        return False
    for above in ancestors(later_node):
        if above is body_owner:
            for name in ("body", "orelse", "finalbody"):
                block = getattr(above, name, None)
                if isinstance(block, list) and any(s is earlier for s in block):
                    child = later_node
                    while parent(child) is not above:
                        child = parent(child)
                    return any(s is child for s in block)
            return False
    return False


def instance_changes(function: FunctionNode, facts: ModuleFacts) -> List[Change]:
    """Fields of instances changed from their own value in this function, in source order."""
    return facts.cached(f"instance_changes:{id(function)}", lambda _f: _instance_changes(function, facts))


def _instance_changes(function: FunctionNode, facts: ModuleFacts) -> List[Change]:
    changes: List[Change] = []
    copies: Dict[str, _Copy] = {}
    fresh: Dict[Tuple[str, str], List[ast.stmt]] = {}

    def local_changed(name: str, node: ast.AST, value: Optional[ast.AST]) -> None:
        copy = copies.get(name)
        if copy is None:
            return
        if copy.first_change is None:
            copy.first_change = node
        if copy.first_arithmetic is None:
            if isinstance(node, ast.AugAssign) and isinstance(node.op, _ARITHMETIC):
                copy.first_arithmetic = (node, _OPERATOR[type(node.op)], short(node.value, 30))
            elif value is not None:
                binop = _arithmetic_on(value, lambda n: _is_name(n, name))
                if binop is not None:
                    copy.first_arithmetic = (node, _OPERATOR[type(binop.op)], short(binop.right, 30))

    def add(statement: ast.AST, instance: str, field: str, kind: str, back: ast.AST, op: str = "+",
            amount: str = "k") -> None:
        if any(_dominates(s, statement) for s in fresh.get((instance, field), ())):
            return  # the field was just set from something else (a COUNT, a constant): no stale row value
        if _database_expression(back, facts):
            return
        changes.append(Change(statement, instance, field, kind, back, op, amount))

    for node in function_nodes(function, facts):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            pairs = [(t, value) for t in targets]
            for target in targets:
                for branch in _tuple_branches(value):
                    if isinstance(target, ast.Tuple) and len(branch.elts) == len(target.elts):
                        pairs.extend(zip(target.elts, branch.elts))
            for target, value in pairs:
                if isinstance(target, ast.Name):
                    name = target.id
                    copied = _copied_field(value)
                    if copied is not None:
                        copies[name] = _Copy(*copied)
                    elif name in copies:
                        reads_local = lambda n, local=name: _is_name(n, local)  # noqa: E731
                        if (_arithmetic_on(value, reads_local) is not None or _merged(value, reads_local)
                                or isinstance(unwrap(value), (ast.ListComp, ast.DictComp, ast.SetComp))
                                and _reads_name(value, name)):
                            local_changed(name, node, value)
                        elif not _reads_name(value, name):
                            del copies[name]
                elif isinstance(target, ast.Subscript):
                    root = _subscript_root(target)
                    if isinstance(root, ast.Name):
                        local_changed(root.id, node, value)
                    elif (field_of := _field_of(root)) is not None and (
                            binop := _arithmetic_on(value, lambda n, f=field_of: _is_field(n, *f))) is not None:
                        # ``obj.counts[k] = obj.counts.get(k, 0) + 1``: a counter kept in a JSON column.  A plain
                        # ``obj.meta[k] = v`` is not reported: it sets a key, it does not compute from one.
                        add(node, *field_of, "arithmetic", node, _OPERATOR[type(binop.op)], short(binop.right, 30))
                elif isinstance(target, ast.Attribute) and (field_of := _field_of(target)) is not None:
                    instance, field = field_of
                    unwrapped = unwrap(value)
                    copy = copies.get(unwrapped.id) if isinstance(unwrapped, ast.Name) else None
                    reads_field = lambda n, i=instance, f=field: _reads(n, i, f)  # noqa: E731
                    is_field = lambda n, i=instance, f=field: _is_field(n, i, f)  # noqa: E731
                    if copy is not None and (copy.instance, copy.field) == field_of and copy.first_change is not None:
                        if copy.first_arithmetic is not None:
                            at, op, amount = copy.first_arithmetic
                            add(at, instance, field, "arithmetic", node, op, amount)
                        else:
                            add(node, instance, field, "merge", node)
                    elif (binop := _arithmetic_on(value, is_field)) is not None:
                        other = binop.right if reads_field(binop.left) else binop.left
                        add(node, instance, field, "arithmetic", node, _OPERATOR[type(binop.op)], short(other, 30))
                    elif _merged(value, is_field):
                        add(node, instance, field, "merge", node)
                    elif isinstance(unwrapped, ast.Name):
                        bound = _local_value_before(unwrapped, node, function, facts)
                        binop = _arithmetic_on(bound, is_field) if bound is not None else None
                        if binop is not None:
                            other = binop.right if reads_field(binop.left) else binop.left
                            add(node, instance, field, "arithmetic", node, _OPERATOR[type(binop.op)],
                                short(other, 30))
                        elif copy is None and isinstance(node, ast.stmt):
                            fresh.setdefault(field_of, []).append(node)
                    elif not reads_field(value) and isinstance(node, ast.stmt):
                        fresh.setdefault(field_of, []).append(node)
        elif isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Attribute) and (field_of := _field_of(target)) is not None:
                if isinstance(node.op, _ARITHMETIC) and not _text(node.value):
                    add(node, *field_of, "arithmetic", node, _OPERATOR[type(node.op)], short(node.value, 30))
            elif isinstance(target, ast.Name):
                local_changed(target.id, node, None)
            elif isinstance(target, ast.Subscript):
                root = _subscript_root(target)
                if isinstance(root, ast.Name):
                    local_changed(root.id, node, None)
                elif (field_of := _field_of(root)) is not None and isinstance(node.op, _ARITHMETIC):
                    add(node, *field_of, "arithmetic", node, _OPERATOR[type(node.op)], short(node.value, 30))
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                root = _subscript_root(target) if isinstance(target, ast.Subscript) else None
                if isinstance(root, ast.Name):
                    local_changed(root.id, node, None)
        elif (isinstance(node, ast.Expr) and isinstance(unwrap(node.value), ast.Call)
              and isinstance(unwrap(node.value).func, ast.Attribute) and unwrap(node.value).func.attr in _IN_PLACE):
            method = unwrap(node.value).func
            receiver = _subscript_root(method.value)
            if isinstance(receiver, ast.Name):
                local_changed(receiver.id, node, None)
            elif method.attr in _LIST_GROWTH and receiver is method.value and (
                    field_of := _field_of(receiver)) is not None:
                add(node, *field_of, "in place", node)
    return changes


def _update_fields(call: ast.Call) -> Optional[Set[str]]:
    """The fields ``save(update_fields=[...])`` names; None when it writes every field (or they are not literal)."""
    for keyword in call.keywords:
        if keyword.arg == _UPDATE_FIELDS:
            value = keyword.value
            if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                return {e.value for e in value.elts}
            return None
    return None


def _written_back(change: Change, function: FunctionNode, facts: ModuleFacts,
                  bindings: Dict[str, List[Tuple[ast.AST, Loaded]]]) -> Optional[ast.Call]:
    """The call after ``change`` that stores the instance's new value in the database."""
    instance, field = change.instance, change.field
    loaded = _loader_before(bindings.get(instance, []), change.back)
    nodes = function_nodes(function, facts)
    added_to: Set[str] = set()
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, receiver = node.func.attr, node.func.value
        if name in ("add", "merge") and len(node.args) == 1 and plain_name(node.args[0]) == instance:
            spelled = dotted(receiver)
            if name == "merge" and later(node, change.back):
                return node
            if spelled is not None:
                added_to.add(spelled)
            continue
        if not later(node, change.back):
            continue
        if change.kind == "in place" and name not in orm.DJANGO_SAVE:
            continue
        if name in orm.DJANGO_SAVE and plain_name(receiver) == instance:
            fields = _update_fields(node)
            if fields is None or field in fields:
                return node
        elif name in orm.SA_FLUSH and not node.args:
            spelled = dotted(receiver)
            if spelled in added_to:
                return node
            if loaded is not None and loaded.framework == "sqlalchemy" and _session_matches(loaded.session, receiver):
                return node
        elif name in ("update", "aupdate", "values") and any(
                keyword.arg == field and _reads(keyword.value, instance, field) for keyword in node.keywords):
            return node
    return None


def _fresh_object(instance: str, change: Change, function: FunctionNode, facts: ModuleFacts) -> bool:
    """The instance was built in this function (``obj = Model(...)``) and never loaded: no other writer has it."""
    statements = [node for node in function_nodes(function, facts)
                  if isinstance(node, ast.stmt) and later(change.statement, node)]
    if any(isinstance(node, ast.Assign) and len(node.targets) == 1
           and _field_of(node.targets[0]) in ((instance, "pk"), (instance, "id"))
           and isinstance(node.value, ast.Constant) and node.value.value is None for node in statements):
        return True  # ``obj.pk = None``: the save inserts a copy as a new row
    bindings = []
    for node in statements:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == instance for t in node.targets):
            bindings.append(unwrap(node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor)) and instance in target_names(node.target):
            return False
        elif isinstance(node, (ast.With, ast.AsyncWith)) and any(
                item.optional_vars is not None and instance in target_names(item.optional_vars) for item in node.items):
            return False
    return bool(bindings) and all(_constructs(binding, facts) for binding in bindings)


def _constructs(value: ast.AST, facts: ModuleFacts) -> bool:
    if not isinstance(value, ast.Call):
        return False
    last = (dotted(value.func) or "").rsplit(".", 1)[-1]
    return bool(last) and last[0].isupper() and django_instance_loader(value, facts) is None


@register
class ReadModifyWrite(Rule):
    code = "OG301"
    name = "read-modify-write"
    summary = "a value read, changed in Python and written back, so concurrent updates are lost"
    triggers = orm.READ_MODIFY_WRITE_TRIGGERS + orm.NEXT_NUMBER_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if _single_process(facts):
            return
        yield from self._orm(facts)
        yield from self._raw_sql(facts)
        yield from self._core_updates(facts)
        yield from self._model_methods(facts)
        yield from self._accessors(facts)
        yield from self._remote_dicts(facts)
        yield from self._redis(facts)
        yield from self._next_numbers(facts)
        yield from self._discarded_locks(facts)

    # a row lock whose result is thrown away, then a model method on an instance loaded before it ------------
    def _discarded_locks(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``Summary.objects.select_for_update().filter(pk=s.pk).first()`` as a statement: the row is locked,
        but the code goes on with the instance it loaded before the lock.  A method of that model which
        changes ``self`` from its own values then computes from a stale read, and its save writes it over
        whatever the previous lock holder wrote."""
        lockers = {id(function): function for call in facts.calls_named(*orm.ROW_LOCKS)
                   for function in [facts.enclosing_function(call)] if function is not None}
        for function in lockers.values():
            nodes = function_nodes(function, facts)
            locks = [(node, loaded) for node in nodes if isinstance(node, ast.Expr)
                     for loaded in [django_instance_loader(node.value, facts) or sa_source(node.value, facts, False)]
                     if loaded is not None and loaded.locked]
            for lock, loaded in locks:
                for node in nodes:
                    if not (isinstance(node, ast.Expr) and later(node, lock)):
                        continue
                    call = unwrap(node.value)
                    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                        continue
                    found = _model_method(loaded.model, call.func.attr, facts)
                    if found is None:
                        continue
                    method, method_facts = found
                    change = next((c for c in instance_changes(method, method_facts) if c.instance == "self"), None)
                    if change is None:
                        continue
                    model = loaded.model.rsplit(".", 1)[-1]
                    yield self.finding(
                        node,
                        f"The `{model}` row is locked on line {lock.lineno} but the locked row is thrown away: "
                        f"`{short(call, 50)}` works on an instance loaded before the lock, and "
                        f"`{model}.{method.name}()` changes `self.{change.field}` from that stale value and writes "
                        f"it back, so each request overwrites what the previous lock holder wrote.",
                        f"Use the row the lock returns: `locked = {model}.objects.select_for_update().get(pk=...)` "
                        f"then `locked.{method.name}(...)` (or `refresh_from_db()` after taking the lock); better, "
                        f"change the counters in SQL (`F()` expressions, `jsonb_set`).",
                    )
                    break

    # next-number allocation: the highest value read, one added in Python, stored in a row ---------------
    def _next_numbers(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for allocation in next_numbers.allocations(facts):
            column = f"`{allocation.column}`" if allocation.column else "value"
            hazard = (f"The next number is the highest {column} read by `{short(allocation.read, 50)}` plus one, "
                      f"computed in Python and stored: two replicas (or requests) reading at the same time "
                      f"allocate the same number, so two rows share it or one insert fails on a unique "
                      f"constraint.")
            suggestion = ("Let the database allocate it (a sequence or identity column); or keep a unique "
                          "constraint on the number and retry the insert on `IntegrityError`; or lock the parent "
                          "row first (`select_for_update()` / `.with_for_update()`) so allocations for it run one "
                          "at a time.")
            yield self.finding(allocation.statement, hazard, suggestion)

    # ORM instances --------------------------------------------------------------------------------------
    def _orm(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for function in _functions_writing_instances(facts):
            changes = instance_changes(function, facts)
            bindings = _instance_bindings(function, facts)
            # One finding per instance and function (its first changed field), and one per place that field
            # is changed (``likes += 1`` in one branch, ``likes -= 1`` in the other).
            reported: Dict[str, str] = {}
            for change in changes:
                if reported.get(change.instance, change.field) != change.field:
                    continue
                if change.kind == "in place" and not module_imports_any(facts, ("django",)):
                    continue  # list columns grown in place: Django ArrayField/JSONField (see _LIST_GROWTH)
                loaded = _loader_before(bindings.get(change.instance, []), change.back)
                if loaded is not None and loaded.locked:
                    continue
                if _relocked_before(change.instance, change.statement, function, facts):
                    continue
                if _fresh_object(change.instance, change, function, facts):
                    continue
                write = _written_back(change, function, facts, bindings)
                if write is None:
                    continue
                reported[change.instance] = change.field
                yield self._report(change, loaded, write)
            seen: Set[int] = set()
            for change, at in self._callee_changes(function, facts, bindings):
                if id(at) in seen or _fresh_object(change.instance, change, function, facts):
                    continue
                write = _written_back(change, function, facts, bindings)
                if write is not None:
                    seen.add(id(at))
                    loaded = _loader_before(bindings.get(change.instance, []), change.back)
                    change.statement = at
                    yield self._report(change, loaded, write)

    @staticmethod
    def _write_after(mutation: Mutation, loaded: Loaded, function: FunctionNode,
                     facts: ModuleFacts) -> Optional[ast.Call]:
        for node in function_nodes(function, facts):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and later(node, mutation.statement)):
                continue
            receiver = node.func.value
            if loaded.framework == "django":
                if (node.func.attr in orm.DJANGO_SAVE and isinstance(receiver, ast.Name)
                        and receiver.id == mutation.instance):
                    return node
            elif node.func.attr in orm.SA_FLUSH and _session_matches(loaded.session, receiver):
                return node
        return None

    def _report(self, change: Change, loaded: Optional[Loaded], write: ast.Call) -> Diagnostic:
        obj, field, op, amount = change.instance, change.field, change.op, change.amount
        origin = f"read by `{short(loaded.call, 50)}`" if loaded is not None else "read when the instance was loaded"
        what = {"arithmetic": "changed in Python", "merge": "merged in Python from the value read",
                "in place": "changed in place in Python"}[change.kind]
        hazard = (f"`{obj}.{field}` is {origin}, {what} and written back by `{short(write, 40)}` on line "
                  f"{write.lineno}: two replicas (or requests) doing this at once start from the same value and one "
                  f"of the updates is lost.")
        django = (loaded.framework == "django") if loaded is not None else write.func.attr in orm.DJANGO_SAVE
        model = loaded.model.rsplit(".", 1)[-1] if loaded is not None else "Model"
        if change.kind != "arithmetic":
            lock = ("`select_for_update()` inside `transaction.atomic()`" if django
                    else "`.with_for_update()` (or `session.get(..., with_for_update=True)`) in the same transaction")
            suggestion = (f"Re-read the row under a lock before merging ({lock}), change only the keys you own in "
                          f"SQL (`jsonb_set`, `||`, `array_append`), or compare-and-set on a version column and retry.")
        elif django:
            suggestion = (f"Let the database do the arithmetic: `{model}.objects.filter(pk={obj}.pk).update("
                          f"{field}=F(\"{field}\") {op} {amount})`; for a limit, filter on it "
                          f"(`.filter(pk={obj}.pk, {field}__lt=limit)`) and check the returned count; or load the row "
                          f"with `select_for_update()` inside `transaction.atomic()`.")
        else:
            suggestion = (f"Let the database do the arithmetic: `session.execute(update({model}).where({model}.id == "
                          f"{obj}.id).values({field}={model}.{field} {op} {amount}))` and check `rowcount` (put a "
                          f"limit in the `where`); or load the row with `.with_for_update()` and keep it in that "
                          f"transaction.")
        fix = None
        if change.kind == "arithmetic":
            fix = orm_update_fix(change.statement, obj, field, "django" if django else "sqlalchemy",
                                 loaded.model if loaded is not None else None,
                                 loaded.session if loaded is not None else None, write)
        return self.finding(change.statement, hazard, suggestion, fix=fix)

    # changes made by a callee: a model method on ``self``, a helper on its parameter ----------------------------
    def _model_methods(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``def increase(self): self.n = self.n + 1`` in a mapped model class: every caller that commits or
        saves the instance writes a value computed from a stale read."""
        for cls in facts.classes:
            columns = _model_columns(cls, facts)
            if not columns:
                continue
            for statement in cls.body:
                if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.name == "__init__":
                    continue
                for change in instance_changes(statement, facts):
                    if change.instance == "self" and change.kind == "arithmetic" and change.field in columns and not _written_back(
                            change, statement, facts, {}):
                        yield self.finding(
                            change.statement,
                            f"`{cls.name}.{statement.name}()` changes `self.{change.field}` from the value loaded "
                            f"with the row; the caller's commit or save writes it back, so two replicas (or requests) "
                            f"calling it at once start from the same value and one of the updates is lost.",
                            f"Do the arithmetic in SQL (`{cls.name}.{change.field} {change.op} {change.amount}` in an "
                            f"UPDATE, or `F(\"{change.field}\") {change.op} {change.amount}` in Django) and refresh; "
                            f"or have callers load the row with a row lock (`with_for_update()` / "
                            f"`select_for_update()`).",
                        )
                        break

    def _callee_changes(self, function: FunctionNode, facts: ModuleFacts,
                        bindings: Dict[str, List[Tuple[ast.AST, Loaded]]]) -> Iterable[Tuple[Change, ast.AST]]:
        """(change as the caller sees it, where to report) for calls that change an instance the caller
        writes back: ``counter.increase()`` on a loaded row, ``bump_votes(poll)`` then ``poll.save()``."""
        for node in function_nodes(function, facts):
            if not isinstance(node, ast.Expr):
                continue
            call = unwrap(node.value)
            if not isinstance(call, ast.Call):
                continue
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                instance = call.func.value.id
                loaded = _loader_before(bindings.get(instance, []), node)
                if loaded is None or loaded.locked:
                    continue
                found = _model_method(loaded.model, call.func.attr, facts)
                if found is None:
                    continue
                method, method_facts = found
                for change in instance_changes(method, method_facts):
                    if change.instance == "self" and change.kind == "arithmetic":
                        yield Change(node, instance, change.field, "arithmetic", node, change.op, change.amount), node
                        break
            elif isinstance(call.func, ast.Name):
                helpers = [f for f in facts.functions_by_name.get(call.func.id, ())
                           if f is not function and facts.enclosing_function(f) is None
                           and facts.enclosing_class(f) is None]
                if len(helpers) != 1:
                    continue
                helper = helpers[0]
                parameters = [a.arg for a in helper.args.posonlyargs + helper.args.args]
                passed = {parameters[i]: plain_name(a) for i, a in enumerate(call.args) if i < len(parameters)}
                passed.update({k.arg: plain_name(k.value) for k in call.keywords if k.arg})
                for change in instance_changes(helper, facts):
                    argument_name = passed.get(change.instance)
                    if argument_name and change.kind == "arithmetic" and not _written_back(change, helper, facts, {}):
                        yield (Change(node, argument_name, change.field, "arithmetic", node, change.op, change.amount),
                               change.statement)
                        break  # the helper's first change is where it is reported

    # accessor pairs: ``n = obj.get_count(); obj.set_count(n + 1)`` ------------------------------------------
    def _accessors(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A value read through ``get_<name>()`` and written back through ``set_<name>(...)`` (or a write
        whose dict names ``"<name>"``) on the same object, in a module that saves or commits: the accessors
        front a stored value, and the read and the write are two round trips."""
        if not any(facts.calls_named(*orm.DJANGO_SAVE, *orm.SA_FLUSH)):
            return
        getters: Dict[int, List[Tuple[ast.Call, str, str]]] = {}
        for call in facts.calls:
            if not (isinstance(call.func, ast.Attribute) and call.func.attr.startswith(_GETTER)):
                continue
            receiver = plain_name(call.func.value)
            function = facts.enclosing_function(call)
            if receiver is None or function is None:
                continue
            getters.setdefault(id(function), []).append((call, receiver, call.func.attr[len(_GETTER):]))
        for calls in getters.values():
            function = facts.enclosing_function(calls[0][0])
            for read, receiver, name in calls:
                write = _accessor_write(read, receiver, name, function, facts)
                if write is None:
                    continue
                flow = Flow(function, facts, lambda n, r=read: n is r)
                values = [a for a in write.args] + [k.value for k in write.keywords]
                if not any(flow.arithmetic(_keyed(v, name)) for v in values):
                    continue
                at = _first_arithmetic(flow, read, write, function, facts)
                yield self.finding(
                    at,
                    f"`{receiver}.{_GETTER}{name}()` is read, changed in Python and stored again by "
                    f"`{short(write, 50)}` on line {write.lineno}: two replicas (or requests) doing this at once "
                    f"read the same value and one of the updates is lost.",
                    "Change the stored value in one statement (an UPDATE with the arithmetic in SQL and the limit "
                    "in its WHERE, checking the rows affected), or read it under a row lock in the same "
                    "transaction.",
                )
                break

    # dict-like classes over a Redis hash: ``POOL[k] = {**POOL.get(k), ...}`` -----------------------------------
    def _remote_dicts(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        remote = _remote_dict_names(facts)
        if not remote:
            return
        for assign in facts.assigns:
            if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                    and isinstance(assign.targets[0], ast.Subscript)):
                continue
            target = assign.targets[0]
            if not (isinstance(target.value, ast.Name) and target.value.id in remote):
                continue
            function = facts.enclosing_function(assign)
            if function is None:
                continue
            read = _remote_read_back(assign, target.value.id, target.slice, function, facts)
            if read is not None:
                name = target.value.id
                yield self.finding(
                    assign,
                    f"`{name}[{short(target.slice, 30)}]` is written back whole from the value read on line "
                    f"{read.lineno}: `{name}` keeps its entries in Redis, so another replica's change to the same "
                    f"entry between the read and this write is lost.",
                    "Keep one Redis key (or hash field) per inner item so each change is a single command "
                    "(`HSET`/`HDEL` on `name:key`, a set with `SADD`/`SREM`), or do the change in a Lua script or "
                    "a `WATCH`/`MULTI` transaction.",
                )

    # SQLAlchemy Core: select(M.col) read, update(M).values(col=<computed from it>) ----------------------------
    def _core_updates(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for call in facts.calls_named("values"):
            head, links = chain(call)
            if not (isinstance(head, ast.Call) and facts.callee(head) in orm.SA_UPDATE and head.args):
                continue
            model = dotted(head.args[0])
            function = facts.enclosing_function(call)
            if model is None or function is None:
                continue
            reads = _core_reads(model, call, function, facts)
            if not reads:
                continue
            flow = Flow(function, facts, lambda n: id(n) in reads)
            guarded = _names_compared(links)
            for keyword in call.keywords:
                column = keyword.arg
                if column is None or column in guarded or not any(c in (None, column) for c in reads.values()):
                    continue
                if flow.arithmetic(keyword.value) or _merged(keyword.value, flow.reads_here):
                    yield self.finding(
                        call,
                        f"`{column}` of `{model}` is read by a SELECT earlier in this function, "
                        f"{'merged' if not flow.arithmetic(keyword.value) else 'changed'} in Python and written "
                        f"back whole by this UPDATE: two replicas (or requests) doing this at once start from the "
                        f"same value and one of the changes is lost.",
                        f"Change the value in the statement (`{model}.{column} + delta`, or a JSON function such "
                        f"as `func.jsonb_set` / `{model}.{column}.concat(...)` for one key); or read the row "
                        f"`.with_for_update()` in the same transaction; or add `.where({model}.{column} == old)` "
                        f"and check `rowcount` (compare-and-set).",
                    )
                    break

    # raw SQL ---------------------------------------------------------------------------------------------
    def _raw_sql(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for executions in _sql_by_function(facts):
            selects = [e for e in executions if e.sql.statement_types == ("SelectStmt",) and not e.sql.for_update]
            updates = [e for e in executions if e.sql.statement_types == ("UpdateStmt",)]
            if not selects or not updates:
                continue
            function = facts.enclosing_function(selects[0].call)
            for update in updates:
                finding = self._raw_update(update, selects, function, facts)
                if finding is not None:
                    yield finding

    def _raw_update(self, update: ExecutedSql, selects: List[ExecutedSql], function: FunctionNode,
                    facts: ModuleFacts) -> Optional[Diagnostic]:
        statement = parse_statements(update.text)[0]
        table = statement.relation.relname
        where_columns = _columns(statement.whereClause)
        if where_columns & {target.name for target in statement.targetList or ()}:
            return None  # compare-and-set: the WHERE checks a column this UPDATE changes (a version, the value)
        earlier = [s for s in selects if later(update.call, s.call)]
        for select in earlier:
            read = _selected_columns(select, table)
            if not read:
                continue
            flow = Flow(function, facts, _select_result_source(select))
            for target in statement.targetList or ():
                column = target.name
                if not isinstance(target.val, pg.ParamRef):
                    continue  # SET n = n + 1: the database does the arithmetic
                if column not in read and "*" not in read:
                    continue
                value = _parameter(update, target.val.number, facts)
                if value is not None and flow.arithmetic(value):
                    return self.finding(
                        update.call,
                        f"`{column}` of `{table}` is read by the SELECT on line {select.call.lineno}, changed in "
                        f"Python and written back as a parameter of this UPDATE: two replicas doing this at once "
                        f"read the same value and one of the updates is lost.",
                        f"Do the arithmetic in the statement: `UPDATE {table} SET {column} = {column} + :delta "
                        f"WHERE … AND {column} + :delta <= :limit` and check the rows affected; or read the row "
                        f"with `SELECT … FOR UPDATE` in the same transaction.",
                    )
        return None

    # Redis -----------------------------------------------------------------------------------------------
    def _redis(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for command, (key_arg, field_arg, value_arg) in redis_known.WRITES.items():
            for call in facts.calls_named(command):
                function = facts.enclosing_function(call)
                if function is None or has_spread(call):
                    continue
                handle = redis_call(call, facts)
                if handle is None:
                    continue
                key = key_argument(call, handle, key_arg)
                field = argument(call, field_arg) if field_arg else None
                value = argument(call, value_arg)
                if key is None or value is None or (field_arg and field is None):
                    continue
                reads = self._reads_of(call, key, field, function, facts)
                if not reads:
                    continue
                read_ids = {id(r) for r in reads}
                flow = Flow(function, facts, lambda n: id(n) in read_ids)
                if flow.arithmetic(value):
                    yield self._redis_report(call, command, reads[0], handle.kind)
        yield from self._wrapper_redis(facts)

    def _wrapper_redis(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A project class over a cache (``await self.cache.async_get_cache(key=k)``, the dict changed in
        Python, ``async_set_cache(key=k, value=d)``): the wrapper's methods are known by their verbs, the
        receiver only by a visible construction or annotation of such a class."""
        key_arg, _, value_arg = redis_known.WRITES["set"]
        writes = [item for item in _client_calls(facts, ("set",))
                  if item[1].kind == redis_known.WRAPPER and item[0].func.attr not in redis_known.WRITES]
        if not writes:
            return
        reads = [item for item in _client_calls(facts, ("get",)) if item[1].kind == redis_known.WRAPPER]
        for call, handle, _command in writes:
            function = facts.enclosing_function(call)
            if function is None or has_spread(call):
                continue
            if _in_process_only(call):
                continue
            key = key_argument(call, handle, key_arg)
            value = argument(call, value_arg)
            if key is None or value is None:
                continue
            key_dump = ast.dump(key)
            matching = [read for read, read_handle, _ in reads
                        if facts.enclosing_function(read) is function and not later(read, call)
                        and ast.dump(key_argument(read, read_handle, key_arg) or ast.Pass()) == key_dump]
            if not matching:
                continue
            read_ids = {id(r) for r in matching}
            flow = Flow(function, facts, lambda n: id(n) in read_ids)
            if flow.arithmetic(value):
                yield self._redis_report(call, "set", matching[-1], handle.kind)
            elif _entry_counted(value, flow, matching[-1], call, function, facts):
                # A dict of counts: a Redis hash counts each entry atomically.
                yield self._redis_report(call, "hset", matching[-1], handle.kind)

    @staticmethod
    def _reads_of(write: ast.Call, key: ast.AST, field: Optional[ast.AST], function: FunctionNode,
                  facts: ModuleFacts) -> List[ast.Call]:
        key_dump = ast.dump(key)
        field_dump = ast.dump(field) if field is not None else None
        found = []
        for command, (key_arg, field_arg) in redis_known.READS.items():
            if (field_arg is None) != (field is None):
                continue
            for call in facts.calls_named(command):
                if facts.enclosing_function(call) is not function or later(call, write):
                    continue
                handle = redis_call(call, facts)
                if handle is None:
                    continue
                read_key = key_argument(call, handle, key_arg)
                read_field = argument(call, field_arg) if field_arg else None
                if read_key is not None and ast.dump(read_key) == key_dump and (
                        field_dump is None or (read_field is not None and ast.dump(read_field) == field_dump)):
                    found.append(call)
        return found

    def _redis_report(self, write: ast.Call, command: str, read: ast.Call, kind: str) -> Diagnostic:
        hazard = (f"`{short(write, 50)}` writes a value computed from `{short(read, 40)}` on line {read.lineno}: "
                  f"two replicas doing this at once read the same value and one of the updates is lost.")
        if kind == redis_known.DJANGO_CACHE:
            suggestion = ("Use the cache's atomic counter: `cache.add(key, 0, timeout)` once, then "
                          "`cache.incr(key, delta)` (atomic on django-redis and Memcached).")
        else:
            atomic = redis_known.ATOMIC_COUNTER.get(command, "INCRBY")
            suggestion = (f"Use {atomic}, which changes the value inside Redis in one command; when the key needs "
                          f"a TTL, send EXPIRE with it in a `MULTI` pipeline (or set it only when INCR returned "
                          f"the first value).")
        return self.finding(write, hazard, suggestion)


#: Keywords by which a call on a two-level cache wrapper says it stays in this process's memory
#: (``cache.set_cache(key=k, value=v, local_only=True)``): each replica keeps its own copy on purpose.
_IN_PROCESS_KEYWORDS = frozenset({"local_only", "in_memory_only", "local"})


def _in_process_only(call: ast.Call) -> bool:
    return any(kw.arg in _IN_PROCESS_KEYWORDS and isinstance(kw.value, ast.Constant) and kw.value.value is True
               for kw in call.keywords)


def _entry_counted(value: ast.AST, flow: Flow, read: ast.Call, write: ast.Call, function: FunctionNode,
                   facts: ModuleFacts) -> bool:
    """``d[k] = d.get(k, 0) + n`` (or ``d[k] += n``) between the read of ``d`` and the write of ``d``: the
    read value changed in place, so the write sends a count computed in Python."""
    if not (isinstance(value, ast.Name) and value.id in flow.tainted):
        return False
    for node in function_nodes(function, facts):
        if not isinstance(node, (ast.Assign, ast.AugAssign)) or not later(node, read) or later(node, write):
            continue
        if isinstance(node, ast.Assign):
            targets, changed = node.targets, flow.arithmetic(node.value)
        elif isinstance(node, ast.AugAssign):
            targets, changed = [node.target], isinstance(node.op, _ARITHMETIC)
        else:
            continue
        if changed and any(isinstance(t, ast.Subscript) and _is_name(_subscript_root(t), value.id) for t in targets):
            return True
    return False


def _sql_by_function(facts: ModuleFacts) -> List[List[ExecutedSql]]:
    """The parsed SQL each function sends, in source order (shared by OG301 and OG302)."""

    def build(_facts: ModuleFacts) -> List[List[ExecutedSql]]:
        by_function: Dict[int, List[ExecutedSql]] = {}
        for executed in executed_sql(facts):
            function = facts.enclosing_function(executed.call)
            if function is not None and executed.sql.parsed:
                by_function.setdefault(id(function), []).append(executed)
        return list(by_function.values())

    return facts.cached("sql_by_function", build)


def _columns(node) -> Set[str]:
    """Column names a pglast expression mentions."""
    found: Set[str] = set()
    if node is None:
        return found
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, pg.ColumnRef):
            last = current.fields[-1]
            if isinstance(last, pg.String):
                found.add(last.sval)
            continue
        if isinstance(current, (tuple, list)):
            stack.extend(current)
        elif isinstance(current, pg.Node):
            for name in current:
                value = getattr(current, name, None)
                if isinstance(value, (pg.Node, tuple, list)):
                    stack.append(value)
    return found


def _tables(statement) -> Set[str]:
    names: Set[str] = set()
    stack = [statement]
    while stack:
        current = stack.pop()
        if isinstance(current, pg.RangeVar):
            names.add(current.relname)
        elif isinstance(current, (tuple, list)):
            stack.extend(current)
        elif isinstance(current, pg.Node):
            for name in current:
                value = getattr(current, name, None)
                if isinstance(value, (pg.Node, tuple, list)):
                    stack.append(value)
    return names


def _selected_columns(select: ExecutedSql, table: str) -> Set[str]:
    """Columns a SELECT returns from ``table`` ("*" for all); empty when it reads another table."""
    statements = parse_statements(select.text)
    if not statements or table not in _tables(statements[0].fromClause):
        return set()
    columns: Set[str] = set()
    for target in statements[0].targetList or ():
        if isinstance(target.val, pg.ColumnRef):
            last = target.val.fields[-1]
            columns.add("*" if isinstance(last, pg.A_Star) else last.sval)
    return columns


_FETCH = frozenset({"fetchone", "fetchall", "fetchmany", "scalar", "one", "first", "scalar_one",
                    "scalar_one_or_none", "one_or_none", "all", "mappings"})


def _select_result_source(select: ExecutedSql) -> Callable[[ast.AST], bool]:
    """What carries the SELECT's result: the sending call itself, or a later fetch on the same cursor."""
    receiver = dotted(select.receiver) if select.receiver is not None else None

    def is_source(node: ast.AST) -> bool:
        if node is select.call:
            return True
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FETCH
                and receiver is not None and dotted(node.func.value) == receiver and later(node, select.call))

    return is_source


def _parameter(executed: ExecutedSql, number: int, facts: ModuleFacts) -> Optional[ast.AST]:
    """The Python expression sent for ``$number`` of the normalised SQL."""
    spelled = placeholder_names(executed.text)  # per counted placeholder: its name, or None when positional
    params = executed.params
    if not spelled:  # native $n placeholders (asyncpg)
        values = _sequence(params)
        return values[number - 1] if values and number <= len(values) else None
    if number > len(spelled):
        return None
    name = spelled[number - 1]
    if name is None:
        values = _sequence(params)
        return values[number - 1] if values and number <= len(values) else None
    call = executed.call
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    for param in params:
        mapping = bound_value(param, facts) if isinstance(param, ast.Name) else param
        if isinstance(mapping, ast.Dict):
            for key, value in zip(mapping.keys, mapping.values):
                if isinstance(key, ast.Constant) and key.value == name:
                    return value
    return None


def _sequence(params: List[ast.AST]) -> List[ast.AST]:
    if len(params) == 1 and isinstance(params[0], (ast.Tuple, ast.List)):
        return list(params[0].elts)
    return [p for p in params if not isinstance(p, ast.keyword)]


# -- OG302 ------------------------------------------------------------------------------------------------


def _functions_writing_instances(facts: ModuleFacts) -> List[FunctionNode]:
    """Functions that write an instance back (``save``, ``commit``, ``flush``, ``merge``, ``update``): the only
    ones OG301's instance check needs to read."""
    found: Dict[int, FunctionNode] = {}
    for call in facts.calls_named(*orm.DJANGO_SAVE, *orm.SA_FLUSH, "merge", "update", "aupdate", "values"):
        function = facts.enclosing_function(call)
        if function is not None:
            found.setdefault(id(function), function)
    return list(found.values())


def _functions_assigning_attributes(facts: ModuleFacts) -> List[FunctionNode]:
    """Functions that change an attribute (``obj.n += 1``, ``obj.n = ...``): the only ones OG301's ORM
    check needs to read."""
    found: Dict[int, FunctionNode] = {}
    for assign in facts.assigns:
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        if any(isinstance(t, ast.Attribute) for t in targets):
            function = facts.enclosing_function(assign)
            if function is not None:
                found.setdefault(id(function), function)
    return list(found.values())
