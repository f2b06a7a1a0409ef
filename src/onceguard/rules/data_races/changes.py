"""Fields of instances changed from their own value in one function, and the call that writes them
back."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors, parent
from ...knowledge import orm
from ...project.prefilter_words import row_savers_for
from ...analysis.names import dotted
from ..redis_leases import short
from .advanced_positions import advanced_past_fetch
from .loads import (
    Loaded, _ARITHMETIC, _OPERATOR, _loader_before, _session_matches, django_instance_loader, function_nodes, later,
    target_names, unwrap)
from .flow import (
    _IN_PLACE, _LIST_GROWTH, _UPDATE_FIELDS, _arithmetic_on, _copied_field, _database_expression, _field_of,
    _is_field, _is_name, _local_value_before, _merged, _reads, _reads_name, _subscript_root, _text, _tuple_branches,
    plain_name)


@dataclass
class Change:
    statement: ast.AST  # where it is reported: the arithmetic, or the value put back
    instance: str
    field: str
    kind: str  # "arithmetic" | "merge" | "in place" | "advanced" (a position moved past the items fetched after it)
    back: ast.AST  # the statement after which the instance holds the new value
    op: str = "+"
    amount: str = "k"
    #: The variable naming the field when the code reaches it by name (``setattr(obj, name, getattr(obj, name) +
    #: 1)``): ``field`` is then that variable's name, not a column's.
    named_by: Optional[str] = None


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


def _a_list(value: ast.AST, at: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """A list display or comprehension, or a local last bound to one."""
    value = unwrap(value)
    if isinstance(value, ast.Name):
        bound = _local_value_before(value, at, function, facts)
        value = unwrap(bound) if bound is not None else value
    return isinstance(value, (ast.List, ast.ListComp))


#: ``dict.update(other)``: a mapping merged into the one stored in the field.
_DICT_MERGE = "update"


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

    def set_through_a_setter(statement: ast.Expr) -> None:
        for instance, field, binop in _set_through_a_setter(statement, function, facts):
            other = binop.right if _reads(binop.left, instance, field) else binop.left
            add(statement, instance, field, "arithmetic", statement, _OPERATOR[type(binop.op)], short(other, 30))

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
                    elif advanced_past_fetch(value, node, instance, field, function, facts):
                        add(node, instance, field, "advanced", node)
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
                if isinstance(node.op, ast.Add) and _a_list(node.value, node, function, facts):
                    # ``obj.tags += [x]``: a list grown, like ``extend`` (on SQLAlchemy a relationship collection
                    # gaining link rows, which is why "in place" is reported only with a Django save).
                    add(node, *field_of, "in place", node)
                elif isinstance(node.op, _ARITHMETIC) and not _text(node.value):
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
            elif (method.attr == _DICT_MERGE and receiver is method.value and len(unwrap(node.value).args) == 1
                  and not unwrap(node.value).keywords and (field_of := _field_of(receiver)) is not None):
                # ``obj.meta.update(extra)``: a JSON column merged in place.  One positional mapping only: a
                # related manager's ``obj.items.update(flag=True)`` takes keywords and is one UPDATE.
                add(node, *field_of, "in place", node)
            else:
                set_through_a_setter(node)
        elif isinstance(node, ast.Expr) and (by_name := _set_by_name(node, function, facts)) is not None:
            instance, field, binop, amount, named_by = by_name
            add(node, instance, field, "arithmetic", node, _OPERATOR[type(binop.op)], short(amount, 30))
            if named_by is not None and changes and changes[-1].statement is node:
                changes[-1].named_by = named_by
        elif isinstance(node, ast.Expr) and isinstance(unwrap(node.value), ast.Call):
            set_through_a_setter(node)
    return changes


def _set_by_name(statement: ast.Expr, function: FunctionNode,
                 facts: ModuleFacts) -> Optional[Tuple[str, str, ast.BinOp, ast.AST, Optional[str]]]:
    """``setattr(obj, name, getattr(obj, name) + amount)``: the attribute ``name`` holds, changed from its own
    value as ``obj.<name> += amount`` would (the value may be a local computed so first).  (instance, field,
    the arithmetic, its other operand, the variable naming the field or None for a literal name)."""
    call = unwrap(statement.value)
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "setattr"
            and len(call.args) == 3 and not call.keywords):
        return None
    held, name, value = call.args
    instance = plain_name(held)
    if instance is None or not (isinstance(name, ast.Name) or isinstance(name, ast.Constant)
                                and isinstance(name.value, str)):
        return None
    spelled = ast.dump(name)

    def reads_it(node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) in (2, 3) and plain_name(node.args[0]) == instance
                and ast.dump(node.args[1]) == spelled)

    if isinstance(unwrap(value), ast.Name):
        bound = _local_value_before(unwrap(value), statement, function, facts)
        value = bound if bound is not None else value
    binop = _arithmetic_on(value, reads_it)
    if binop is None:
        return None
    amount = binop.left if reads_it(binop.right) and not reads_it(binop.left) else binop.right
    if isinstance(name, ast.Constant):
        return instance, name.value, binop, amount, None
    return instance, name.id, binop, amount, name.id


def _set_through_a_setter(statement: ast.Expr, function: FunctionNode,
                          facts: ModuleFacts) -> List[Tuple[str, str, ast.BinOp]]:
    """``tiers.set_remaining(tier, tier.remaining - n)``: a call handing an instance and a value computed from one
    of its fields to a project def that sets that field of the one parameter to the other (``tier.remaining =
    remaining``) -- the field changed from its own value, as if the assignment were written here."""
    call = unwrap(statement.value)
    arguments = [*call.args, *(k.value for k in call.keywords)]
    names = {a.id for a in arguments if isinstance(a, ast.Name)}
    # The call must hand a name and arithmetic on a field of that name before any def is looked up.
    computed = [(a, n.value.id, n.attr) for a in arguments if isinstance(a, ast.BinOp)
                for n in ast.walk(a) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id in names]
    if not computed or not facts.context.cross_file:
        return []
    from ...analysis.handed import argument_for
    from ...project.summaries import resolve

    found: List[Tuple[str, str, ast.BinOp]] = []
    targets = resolve(call, facts, function, by_name=False)
    if len(targets) != 1:
        return []
    setter, _ = targets[0]
    for node in ast.walk(setter):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name)):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            continue
        held, value = argument_for(call, setter, target.value.id), argument_for(call, setter, node.value.id)
        for expression, instance, field in computed:
            if value is expression and isinstance(held, ast.Name) and held.id == instance and target.attr == field:
                binop = _arithmetic_on(expression, lambda n, i=instance, f=field: _is_field(n, i, f))
                if binop is not None:
                    found.append((instance, field, binop))
    return found


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
        if name == "merge" and len(node.args) == 1 and later(node, change.back) and _built_from(node.args[0], instance):
            return node  # ``session.merge(Account(**dto.model_dump()))``: a row made of the changed copy, written
        if name in ("add", "merge") and len(node.args) == 1 and plain_name(node.args[0]) == instance:
            spelled = dotted(receiver)
            if name == "merge" and later(node, change.back):
                return node
            if spelled is not None:
                added_to.add(spelled)
            continue
        if name in orm.SA_ADD_ALL and len(node.args) == 1 and _holds_instance(node.args[0], instance, node, function,
                                                                              facts):
            spelled = dotted(receiver)
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
            if loaded is not None and loaded.framework == "sqlalchemy" and (
                    _session_matches(loaded.session, receiver) or holds_session(loaded.session, receiver)):
                return node
        elif loaded is not None and loaded.framework == "sqlalchemy" and later(node, change.back) \
                and _commits_on_self(node, loaded, function, facts):
            return node
        elif name in orm.DJANGO_BULK_SAVE and node.args and _holds_instance(node.args[0], instance, node, function,
                                                                            facts):
            fields = _bulk_fields(node)
            if fields is None or field in fields:
                return node  # ``Post.objects.bulk_update(posts, ["views"])``: the list the changed instance is in
        elif name in ("update", "aupdate", "values") and any(
                keyword.arg == field and _reads(keyword.value, instance, field) for keyword in node.keywords):
            return node
        elif loaded is not None and _stores_the_handed_row(node, instance, function, facts):
            return node  # ``self.users.save(user)``: a repository method that adds and commits what it is handed
    return committed_by_block(change.back, loaded)


def _built_from(value: ast.AST, instance: str) -> bool:
    """A model made from ``instance``'s fields: ``Account(**dto.model_dump())``, ``Account(**vars(dto))``,
    ``Account(id=dto.id, credits_used=dto.credits_used)``."""
    if not isinstance(value, ast.Call):
        return False
    for keyword in value.keywords:
        root = keyword.value
        while isinstance(root, (ast.Call, ast.Attribute)):
            if isinstance(root, ast.Call):
                if keyword.arg is None and isinstance(root.func, ast.Name) and root.args:
                    root = root.args[0]  # ``**vars(dto)``
                    continue
                root = root.func
            else:
                root = root.value
        if isinstance(root, ast.Name) and root.id == instance:
            return True
    return False


def _holds_instance(collection: ast.AST, instance: str, at: ast.AST, function: FunctionNode,
                    facts: ModuleFacts) -> bool:
    """``collection`` (a local name) holds ``instance`` when ``at`` runs: the function loops over it with the
    instance as its target (``for post in posts:``) or appends the instance to it (``changed.append(post)``)."""
    held = plain_name(collection)
    if held is None:
        return False
    for node in function_nodes(function, facts):
        if isinstance(node, (ast.For, ast.AsyncFor)) and plain_name(node.target) == instance \
                and plain_name(node.iter) == held and later(at, node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                and plain_name(node.func.value) == held and len(node.args) == 1 \
                and plain_name(node.args[0]) == instance and later(at, node):
            return True
    return False


def _bulk_fields(call: ast.Call) -> Optional[Set[str]]:
    """The fields ``bulk_update(objs, fields)`` writes; None when they are not written out literally."""
    value = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "fields"), None)
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return {e.value for e in value.elts}
    return None


def _stores_the_handed_row(call: ast.Call, instance: str, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``call`` hands ``instance`` to a project def that writes its parameter back: adds (or merges) it to a
    session and commits or flushes, or saves it."""
    if not any(isinstance(a, ast.Name) and a.id == instance for a in call.args):
        return False
    from ...analysis.handed import parameter_names
    from ...project.summaries import resolve

    index = next(i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == instance)
    for target, _where in resolve(call, facts, function, by_name=False):
        parameters = [p for p in parameter_names(target) if p not in ("self", "cls")]
        if index >= len(parameters):
            continue
        handed = parameters[index]
        calls = [n for n in ast.walk(target) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        added = any(n.func.attr in ("add", "merge") and n.args and isinstance(n.args[0], ast.Name)
                    and n.args[0].id == handed for n in calls)
        committed = any(n.func.attr in orm.SA_FLUSH and not n.args for n in calls)
        saved = any(n.func.attr in orm.DJANGO_SAVE and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == handed for n in calls)
        if (added and committed) or saved:
            return True
    return False


def _committing_methods(cls: ast.ClassDef) -> Dict[str, List[ast.Call]]:
    """method name -> its own ``commit()``/``flush()`` calls, for the methods of ``cls`` that make one."""
    found: Dict[str, List[ast.Call]] = {}
    for method in cls.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            commits = [node for node in ast.walk(method) if isinstance(node, ast.Call)
                       and isinstance(node.func, ast.Attribute) and node.func.attr in orm.SA_FLUSH and not node.args]
            if commits:
                found[method.name] = commits
    return found


def _committing_methods_of(cls: ast.ClassDef, facts: ModuleFacts) -> Dict[str, List[ast.Call]]:
    return facts.cached(f"committing-methods:{id(cls)}", lambda _facts: _committing_methods(cls))


def _commits_on_self(call: ast.Call, loaded: Loaded, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``await self._commit()``: a method of the same class whose body commits (or flushes) the session the row
    was loaded through, spelled alike since ``self`` is the same object (``self.session.commit()``)."""
    func = call.func
    cls = facts.enclosing_class(function)
    if cls is None or not (isinstance(func.value, ast.Name) and func.value.id == "self") or call.args:
        return False
    commits = _committing_methods_of(cls, facts)
    return any(_session_matches(loaded.session, commit.func.value) or holds_session(loaded.session, commit.func.value)
               for commit in commits.get(func.attr, ()))


def holds_session(session: Optional[str], receiver: ast.AST) -> bool:
    """``uow.commit()`` for rows loaded through ``uow._session``: a unit of work's own commit commits the session
    it holds (its repositories load through it)."""
    spelled = dotted(receiver)
    if not session or not spelled or not session.startswith(spelled + "."):
        return False
    return "." not in session[len(spelled) + 1:]


def committed_by_block(node: ast.AST, loaded) -> Optional[ast.Call]:
    """``with session.begin():`` (or ``with factory.begin() as session:``) around ``node``, a change, on the
    session the row was loaded through: the block's end commits the changed value."""
    if loaded is None or loaded.framework != "sqlalchemy":
        return None
    return session_committed_by_block(loaded.session, node)


def session_committed_by_block(session: Optional[str], node: ast.AST) -> Optional[ast.Call]:
    """The ``begin()`` of the ``with`` block around ``node`` that commits ``session`` when it ends: ``with
    <session>.begin():`` or ``with factory.begin() as <session>:``."""
    if not session:
        return None
    for above in ancestors(node):
        if not isinstance(above, (ast.With, ast.AsyncWith)):
            continue
        for item in above.items:
            opened = item.context_expr
            if not (isinstance(opened, ast.Call) and isinstance(opened.func, ast.Attribute)
                    and opened.func.attr == "begin" and not opened.args):
                continue
            receiver = item.optional_vars if isinstance(item.optional_vars, ast.Name) else opened.func.value
            if _session_matches(session, receiver):
                return opened
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


def _hands_on_a_changed_local(function: FunctionNode, facts: ModuleFacts) -> bool:
    """An attribute of a local set in ``function`` (``member.points = ...``, ``+=``), and that local handed as a
    positional argument to a call of a method after it."""
    changed: Dict[str, ast.AST] = {}
    for node in function_nodes(function, facts):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                changed.setdefault(target.value.id, node)
    if not changed:
        return False
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and any(
        isinstance(a, ast.Name) and a.id in changed and later(node, changed[a.id]) for a in node.args)
        for node in function_nodes(function, facts))


def _functions_writing_instances(facts: ModuleFacts) -> List[FunctionNode]:
    """Functions that write an instance back (``save``, ``commit``, ``flush``, ``merge``, ``update``): the only
    ones OG301's instance check needs to read."""
    found: Dict[int, FunctionNode] = {}
    for call in facts.calls_named(*orm.DJANGO_SAVE, *orm.DJANGO_BULK_SAVE, *orm.SA_FLUSH, "merge", "update",
                                  "aupdate", "values"):
        function = facts.enclosing_function(call)
        if function is not None:
            found.setdefault(id(function), function)
    for cls in facts.classes:
        # ``await self._commit()``: a method of its class that commits
        helpers = _committing_methods_of(cls, facts) if any(
            facts.enclosing_class(call) is cls for call in facts.calls_named(*orm.SA_FLUSH)) else {}
        for call in facts.calls_named(*helpers):
            function = facts.enclosing_function(call)
            if function is not None and isinstance(call.func, ast.Attribute) and plain_name(call.func.value) == "self":
                found.setdefault(id(function), function)
    for call in facts.calls_named(*row_savers_for(facts)):
        # ``member.points = member.points + n`` then ``self.members.store(member)``: a changed local handed to a
        # def of the project that saves a parameter (``_stores_the_handed_row`` asks which)
        function = facts.enclosing_function(call)
        if function is not None and id(function) not in found and _hands_on_a_changed_local(function, facts):
            found[id(function)] = function
    for call in facts.calls_named("begin"):
        # ``with session.begin():``: the block's end commits what it changed
        above = parent(call)
        if isinstance(above, ast.withitem) and above.context_expr is call and not call.args:
            function = facts.enclosing_function(call)
            if function is not None:
                found.setdefault(id(function), function)
    return list(found.values())
