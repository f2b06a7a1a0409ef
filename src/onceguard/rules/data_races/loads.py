"""Where a row comes from: attribute and call chains, Django and SQLAlchemy loaders, the bindings of
loaded instances in one function, and the model classes and methods a loader names."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ...project import index as project
from ...analysis.executed_sql import bound_value
from ...analysis.facts import FunctionNode, ModuleFacts, walk, walk_no_nested_functions
from ...project.db_handles import ProjectHandles
from ...project.definitions import definition
from ...knowledge.databases import FLASK_SQLALCHEMY as FLASK_SQLALCHEMY_HANDLE
from ...knowledge import orm
from ...model import Related
from ...analysis.names import dotted


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
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def target_names(target: ast.AST) -> List[str]:
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]


def later(node: ast.AST, than: ast.AST) -> bool:
    return (node.lineno, node.col_offset) > (than.lineno, than.col_offset)


def function_nodes(function: FunctionNode, facts: ModuleFacts) -> List[ast.AST]:
    return facts.cached(f"function_nodes:{id(function)}", lambda _f: facts.own_subtree(function))


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
    #: where the row is loaded when a project function loads it and returns it to the caller
    where: Optional[Related] = None


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
    head, links = module_chain(head, links, facts)
    if isinstance(head, ast.Call) and facts.callee(head) in orm.SA_SELECT and head.args:
        return _selected_from(head.args[0]), links, head
    return None


def _selected_from(first: ast.AST) -> str:
    """The model or table a ``select(...)`` reads: ``Model``, or ``deliveries`` for a Core table's column
    (``select(deliveries.c.id, ...)``)."""
    spelled = dotted(first) or "Model"
    parts = spelled.split(".")
    if len(parts) >= 3 and parts[-2] in ("c", "columns"):
        return ".".join(parts[:-2])
    return spelled


def module_chain(head: ast.AST, links: Links, facts: ModuleFacts) -> Tuple[ast.AST, Links]:
    """``chain()`` of ``sqlalchemy.select(Model).where(...)``, read as ``select(Model).where(...)``: a head
    that is an imported module is no receiver, the first call through it is the head."""
    if not (isinstance(head, ast.Name) and facts.imports.is_module(head.id)):
        return head, links
    for index, (_, call) in enumerate(links):
        if isinstance(call, ast.Call):
            return call, links[index + 1:]
        if call is not None:
            break
    return head, links


def _is_flask_sqlalchemy(receiver: ast.AST, facts: ModuleFacts) -> bool:
    handle = ProjectHandles.of_module(facts).of(receiver)
    return handle is not None and handle.kind == FLASK_SQLALCHEMY_HANDLE


#: How many base classes back a model's mapping is looked for (``class Order(TimestampedModel)``).
_MAX_BASE_HOPS = 2


def _mapped_class(name: ast.Name, facts: ModuleFacts, hops: int = 0) -> bool:
    """A class of the project mapped by SQLAlchemy: defined in a module that imports it, or deriving from a
    Flask-SQLAlchemy ``db.Model`` (or from such a class), wherever the ``db`` was made.  ``Customer.query``
    in a module that imports only the model is the same loader."""
    found = definition(facts.qualify(name) or name.id, facts)
    if found is None or not isinstance(found[0], ast.ClassDef):
        return False
    cls, where = found
    if module_imports_any(where, orm.SA_MODULES):
        return True
    for base in cls.bases:
        if isinstance(base, ast.Attribute) and base.attr == orm.FLASK_MODEL_BASE \
                and _is_flask_sqlalchemy(base.value, where):
            return True
        if isinstance(base, ast.Name) and hops < _MAX_BASE_HOPS and _mapped_class(base, where, hops + 1):
            return True
    return False


def _is_sa_session(receiver: ast.AST, facts: ModuleFacts) -> bool:
    handle = ProjectHandles.of_module(facts).of(receiver)
    return handle is not None and handle.library == "sqlalchemy"


def sa_source(expr: ast.AST, facts: ModuleFacts, many: bool) -> Optional[Loaded]:
    """An SQLAlchemy expression that loads one instance (``many=False``) or rows of instances (``many=True``)."""
    expr = unwrap(expr)
    head, links = chain(expr)
    if not links:
        return None
    terminals = orm.SA_MANY if many else orm.SA_ONE
    executed = _executed_result(head, links, expr, facts)
    if executed is not None:
        # ``result = await session.execute(select(M))`` then ``result.scalar_one_or_none()``: one load in two
        # statements, read as the chain it would be in one
        executed_head, executed_links = chain(executed)
        head, links = executed_head, executed_links + links
    # db.get_or_404(Model, pk): the extension loads through the session the app commits
    if not many and len(links) == 1 and links[0][0] in orm.FLASK_SA_GET and isinstance(expr, ast.Call):
        if len(expr.args) >= 2 and _is_flask_sqlalchemy(expr.func.value, facts):
            return Loaded("sqlalchemy", dotted(expr.args[0]) or "Model", expr, False, FLASK_SESSION)
        return None
    # session.get(Model, pk), also on a session reached through an attribute (``db.session.get(...)``)
    if not many and links[-1][0] in orm.SA_SESSION_GET and isinstance(expr, ast.Call) \
            and all(call is None for _, call in links[:-1]):
        # The receiver is a session by its handle, or by what it is asked for: a class SQLAlchemy maps.
        if len(expr.args) >= 2 and (_is_sa_session(expr.func.value, facts) or (
                isinstance(expr.args[0], ast.Name) and _mapped_class(expr.args[0], facts))):
            locked = any(k.arg == orm.SA_ROW_LOCK_KEYWORD and not _falsy(k.value) for k in expr.keywords)
            return Loaded("sqlalchemy", dotted(expr.args[0]) or "Model", expr, locked, dotted(expr.func.value))
        if len(links) == 1:
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
            and _ends_with(links[1:], terminals, many, orm.SA_QUERY_METHODS)
            and (module_imports_any(facts, orm.SA_MODULES) or _mapped_class(head, facts))):
        return Loaded("sqlalchemy", head.id, expr, any(n == orm.SA_ROW_LOCK for n, _ in links), FLASK_SESSION)
    return None


def _executed_result(head: ast.AST, links: Links, expr: ast.AST, facts: ModuleFacts) -> Optional[ast.AST]:
    """The statement execution a result name holds, when ``expr`` reads rows off it (``result.scalars().all()``):
    the name's one binding in the function, before ``expr``, to ``<session>.execute(...)`` (awaited or not)."""
    if not isinstance(head, ast.Name) or links[0][1] is None \
            or links[0][0] not in orm.SA_ONE | orm.SA_MANY | {"scalars"}:
        return None
    function = facts.enclosing_function(expr)
    if function is None:
        return None
    bound = [node.value for node in function_nodes(function, facts)
             if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
             and any(isinstance(t, ast.Name) and t.id == head.id
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    if len(bound) != 1 or not later(expr, bound[0]):
        return None
    value = unwrap(bound[0])
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "execute" \
            and value.args:
        return value
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


#: Module names that hold test helpers (Django's ``tests.py``, a package's ``test.py`` of fixtures).
_TEST_MODULES = frozenset({"test.py", "tests.py", "testing.py"})


def _single_process(facts: ModuleFacts) -> bool:
    """Tests, data migrations and operator commands (``manage.py …``, scripts) run in one process, once:
    nothing interleaves with them."""
    context = facts.context
    return (context.is_test or context.is_migration or context.is_operator_entrypoint
            or context.filename in _TEST_MODULES)


def _operator_only(line: int, facts: ModuleFacts) -> bool:
    """The function holding ``line`` runs only when an operator runs it: every caller the project shows is a
    command or a script (the start-up reach's answer, across modules on the command line). One process,
    nothing interleaves with it, as in ``_single_process``; a function with no caller in view is not."""
    from ...project.reach import runs_function
    from ...project.unasked_tasks import holding_function

    function = holding_function(line, facts)
    if function is None:
        return False
    return facts.cached(f"operator-only:{id(function)}", lambda _facts: runs_function(function, facts).operator)


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
                  or _session_get(node.value, facts) or _row_locking_load(node.value))
        if loaded is not None:
            table.setdefault(name, []).append((node, loaded))
    for node in function_nodes(function, facts):
        # ``for msg in Outbox.objects.select_for_update(skip_locked=True).filter(...)``: each row comes locked
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            rows = node.iter
            if isinstance(rows, ast.Name):  # ``batch = ....select_for_update()...`` then ``for msg in batch``
                bound = [x.value for x in function_nodes(function, facts) if isinstance(x, ast.Assign)
                         and len(x.targets) == 1 and isinstance(x.targets[0], ast.Name) and x.targets[0].id == rows.id]
                rows = bound[0] if len(bound) == 1 else rows
            loaded = _row_locking_load(rows)
            if loaded is not None:
                table.setdefault(node.target.id, []).append((node, loaded))
    return table


def _row_locking_load(expr: ast.AST) -> Optional[Loaded]:
    """A load whose chain takes a row lock, in any ORM (``await Night.filter(...).select_for_update().first()``,
    peewee's ``.for_update()``): the row stays locked until the transaction that read it ends, so no other
    writer can read it in between."""
    head, links = chain(expr)
    if any(call is not None and name in orm.ROW_LOCK_KEYWORDS for name, call in links):
        return Loaded("other", dotted(head) or "Model", expr, True)
    return None


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
            owner, _, column = spelled.rpartition(".")
            if spelled == model:
                found[id(node)] = None
            elif owner == model or owner in (f"{model}.c", f"{model}.columns"):
                found[id(node)] = column  # ``Card.balance``, or a Core table's ``cards.c.balance``
    return found


def _names_compared(links: Links) -> Set[str]:
    """Columns the UPDATE's WHERE mentions (``.where(M.version == v)``, ``.filter_by(meta=old)``): a
    compare-and-set on the value written."""
    names: Set[str] = set()
    for name, call in links:
        if name in orm.PICKUP_FILTER_METHODS and isinstance(call, ast.Call):
            names.update(k.arg for k in call.keywords if k.arg)
            names.update(n.attr for a in call.args for n in walk(a) if isinstance(n, ast.Attribute))
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
            if (spelled.rsplit(".", 1)[-1] in _COLUMN_CALLS or qualified.rsplit(".", 1)[-1] in _COLUMN_CALLS
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


def _session_get(expr: ast.AST, facts: ModuleFacts) -> Optional[Loaded]:
    """``await session.get(User, user_id)`` on a session whose origin is a project helper
    (``async with get_db() as session``): in a module that imports SQLAlchemy, a mapped class and a key
    are enough; the later ``session.commit()`` on the same name is the write."""
    expr = unwrap(expr)
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in orm.SA_SESSION_GET and len(expr.args) >= 2):
        return None
    model = dotted(expr.args[0]) or ""
    if not model.rsplit(".", 1)[-1][:1].isupper() and not _kept_model_class(expr.args[0], facts):
        return None
    if not module_imports_any(facts, orm.SA_MODULES):
        return None
    locked = any(k.arg == orm.SA_ROW_LOCK_KEYWORD and not _falsy(k.value) for k in expr.keywords)
    return Loaded("sqlalchemy", model, expr, locked, dotted(expr.func.value))


def _kept_model_class(expr: ast.AST, facts: ModuleFacts) -> bool:
    """``self.model`` in a method of a class whose body declares ``model`` a class (``model: type[ModelT]``, or
    ``model = Wallet``): a repository generic over the model each subclass names, loading that model's row."""
    if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("self", "cls")):
        return False
    cls = facts.enclosing_class(expr)
    for statement in cls.body if cls is not None else ():
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == expr.attr:
            head = statement.annotation.value if isinstance(statement.annotation, ast.Subscript) else None
            if (dotted(head) or "").rsplit(".", 1)[-1] in ("type", "Type"):
                return True
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.attr
                                                     for t in statement.targets):
            return (dotted(statement.value) or "").rsplit(".", 1)[-1][:1].isupper()
    return False


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


#: Bindings followed back from an instance to the query it came from (``target = by_id.get(k)`` <- ``by_id = {...
#: for c in locked}`` <- ``locked = list(Case.objects.select_for_update()...)``).
_LOCK_TRACE_DEPTH = 4


def derived_from_locked_rows(instance: str, node: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``instance`` was picked, before ``node``, out of rows a query of this function locked
    (``select_for_update()``, ``with_for_update()``): through the names its binding reads, a comprehension over
    them, a ``dict``'s ``.get``."""
    bindings: Dict[str, List[ast.AST]] = {}
    for statement in function_nodes(function, facts):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None \
                and later(node, statement):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    bindings.setdefault(name, []).append(statement.value)
        elif isinstance(statement, (ast.For, ast.AsyncFor)) and later(node, statement):
            for name in (n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)):
                bindings.setdefault(name, []).append(statement.iter)
    seen: Set[str] = set()
    pending = [(instance, 0)]
    while pending:
        name, depth = pending.pop()
        if name in seen or depth > _LOCK_TRACE_DEPTH:
            continue
        seen.add(name)
        values = bindings.get(name, [])
        if len(values) != 1:
            continue  # bound more than once (or not here): not one query's rows
        for inner in ast.walk(values[0]):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in orm.ROW_LOCKS:
                return True
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                pending.append((inner.id, depth + 1))
    return False


def _class_seen(model: Optional[str], facts: ModuleFacts,
                cls: Optional[ast.ClassDef]) -> Optional[Tuple[ast.ClassDef, ModuleFacts]]:
    """The model class as given, or found by the name a loader used (with the module that defines it)."""
    if cls is not None:
        return cls, facts
    return _model_class(model, facts) if model else None


def _declared_in(statement: ast.stmt, field: str) -> bool:
    """``statement`` of a class body binds ``field`` (``field = Column(...)``, ``field: Mapped[int]``)."""
    targets = statement.targets if isinstance(statement, ast.Assign) else (
        [statement.target] if isinstance(statement, ast.AnnAssign) else [])
    return any(isinstance(t, ast.Name) and t.id == field for t in targets)


def instance_attribute(model: Optional[str], field: str, facts: ModuleFacts,
                       cls: Optional[ast.ClassDef] = None) -> bool:
    """The model class (seen), which declares its columns in its body, sets ``self.<field>`` in ``__init__``
    (``self.console = Console(path)``) and declares no class attribute of that name: state of the Python
    object, not a column its save writes back.  (A class that declares no columns, a record it serialises
    whole, may persist any attribute.)"""
    found = _class_seen(model, facts, cls)
    if found is None or not _model_columns(*found):
        return False
    cls = found[0]
    if any(_declared_in(statement, field) for statement in cls.body):
        return False
    for method in cls.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name == "__init__":
            for node in walk_no_nested_functions(method):
                if isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Attribute) and t.attr == field and isinstance(t.value, ast.Name)
                        and t.value.id == "self" for t in node.targets):
                    return True
    return False


def column_type(model: Optional[str], field: str, facts: ModuleFacts,
                cls: Optional[ast.ClassDef] = None) -> Optional[str]:
    """"number", "text" or "json" for a column a model class declares (``models.TextField()``,
    ``Column(JSONB)``, ``Mapped[dict]``); None when the class or the column is not seen."""
    found = _class_seen(model, facts, cls)
    if found is None:
        return None
    cls, where = found
    for statement in cls.body:
        if not _declared_in(statement, field):
            continue
        names = []
        if isinstance(statement, ast.AnnAssign):
            names.extend(_type_names(statement.annotation, where))
        if statement.value is not None and isinstance(unwrap(statement.value), ast.Call):
            call = unwrap(statement.value)
            names.append((dotted(call.func) or "").rsplit(".", 1)[-1])
            names.append((where.callee(call) or "").rsplit(".", 1)[-1])
            names.extend(n for a in call.args for n in _type_names(a, where))
            names.extend(n for k in call.keywords if k.arg in ("type_", "sa_type") for n in _type_names(k.value, where))
        for name in names:
            if name in orm.JSON_COLUMN_TYPES:
                return "json"
            if name in orm.TEXT_COLUMN_TYPES:
                return "text"
            if name in orm.NUMBER_COLUMN_TYPES:
                return "number"
        return None
    return None


def _type_names(node: ast.AST, facts: Optional[ModuleFacts] = None) -> List[str]:
    """``Mapped[Optional[dict]]`` -> ["Mapped", "Optional", "dict"]; ``String(50)`` -> ["String"] (and, with
    ``facts``, the imported names an alias stands for: ``Text_alias`` -> "Text")."""
    found = []
    for n in walk(node):
        if isinstance(n, (ast.Name, ast.Attribute)):
            found.append((dotted(n) or "").rsplit(".", 1)[-1])
            if facts is not None:
                found.append((facts.qualify(n) or "").rsplit(".", 1)[-1])
    return found


def _model_class(model: str, facts: ModuleFacts):
    head, _, rest = model.partition(".")
    if not rest:
        for cls in facts.classes:
            if cls.name == model and facts.enclosing_class(cls) is None:
                return cls, facts
    qualified = facts.imports.aliases.get(head)
    if qualified is None or qualified.startswith("."):
        return None
    qualified = f"{qualified}.{rest}" if rest else qualified
    return project.find_class(qualified, facts.config, project.roots_for(facts))
