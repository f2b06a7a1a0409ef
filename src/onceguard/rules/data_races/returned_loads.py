"""Rows a project function loads and hands back: ``wallet = repository.wallet_for_user(uid)``.

The caller changes a column of the row from its own value and commits its session (or saves the row); the
load that makes the value stale is in the function it called, often in another module (a repository, a
service object, a helper of the same module).  Read at the call, that function's every ``return`` is a
loader (``Model.query.filter_by(...).first()``, ``session.get(Model, pk)``, ``session.scalars(select(...))
.first()``, ``Model.objects.get(...)``, or a local bound to one): the call is that load, unlocked unless every
one of them locks the row.  The session it loads through is spelled as the caller spells it: the argument
the caller hands in for a session parameter, the caller's own import of a module-level session, or any
``<db>.session`` for Flask-SQLAlchemy's ``Model.query``.

Asked only of a change that passed the local tests and has no loader in view; the call is resolved as the
project shows it (this module, an import, a method of a module-level instance), never by a name search,
and followed through at most ``MAX_DEPTH`` functions.
"""
from __future__ import annotations

import ast
import os
from dataclasses import replace
from typing import List, Optional, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts
from ...analysis.handed import argument_for, parameter_names
from ...analysis.names import dotted
from ...model import Related
from ...project import declared_types as declared
from ...project.definitions import definition_facts
from ...project.summaries import instance_class, resolve, resolve_reference
from .loads import (
    FLASK_SESSION, Loaded, _instance_bindings, _loader_before, _session_get, django_instance_loader, function_nodes,
    later, sa_source, unwrap)
from .model_loaders import model_class_loader

#: Project functions followed from the call to the load (``wallets.for_user()`` -> ``self._one(...)``).
MAX_DEPTH = 2
#: Defs one call may run (a method on a union of declared classes): more and the load is not judged.
_MAX_TARGETS = 3


def returned_row(instance: str, before: ast.AST, function: FunctionNode,
                 facts: ModuleFacts) -> Optional[Tuple[ast.stmt, Loaded]]:
    """(the assignment, the load as the caller sees it) when ``instance`` was last bound, before ``before``,
    to the result of a project call whose every return is a row an ORM loaded."""
    return _returned_binding(instance, before, function, facts, 0)


def _returned_binding(instance: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts,
                      depth: int) -> Optional[Tuple[ast.stmt, Loaded]]:
    assignment = _last_binding(instance, before, function, facts)
    if assignment is None:
        return None
    call = unwrap(assignment.value)
    if not isinstance(call, ast.Call):
        return None
    if depth:
        loaded = _returned_by(call, function, facts, depth)
    else:
        loaded = facts.cached(f"returned_row:{id(call)}", lambda _f: _returned_by(call, function, facts, 0))
    return (assignment, loaded) if loaded is not None else None


def _last_binding(name: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.stmt]:
    found = None
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.stmt) and later(before, node)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = node
            elif any(name in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in targets):
                found = None  # unpacked from something else: not this call's row
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)) and _binds(node, name):
            found = None
    return found


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    else:
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _returned_by(call: ast.Call, function: FunctionNode, facts: ModuleFacts, depth: int) -> Optional[Loaded]:
    if _loader(call, facts) is not None:
        return None  # a load in view: the caller's own bindings read it
    targets = resolve(call, facts, function, by_name=False) or _instance_method_elsewhere(call, facts)
    if not targets or len(targets) > _MAX_TARGETS:
        return None
    found: List[Loaded] = []
    for target, target_facts in targets:
        loaded = _loaded_by_returns(target, target_facts, depth)
        if loaded is None:
            return None
        found.append(_as_seen_by(loaded, call, target, target_facts, function, facts))
    first = found[0]
    return replace(first, call=call, locked=all(f.locked for f in found))


def _instance_method_elsewhere(call: ast.Call, facts: ModuleFacts) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """``repository.wallets.for_user(uid)``: a method of an object another module of the project binds at its
    top level (``wallets = WalletRepo()``), reached through that module."""
    func = call.func
    if not (facts.context.cross_file and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)):
        return []
    spelled = dotted(func.value)
    if not spelled or not facts.imports.is_imported(spelled.partition(".")[0]):
        return []
    located = definition_facts(facts.imports.qualify_dotted(spelled), facts)
    if located is None or located[0] is facts:
        return []
    where, name = located
    found = resolve_reference(ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr=func.attr, ctx=ast.Load()),
                              where)
    return [(found[0], found[1])] if found is not None else []


def _loader(value: ast.AST, facts: ModuleFacts) -> Optional[Loaded]:
    return (django_instance_loader(value, facts) or sa_source(value, facts, many=False) or _session_get(value, facts)
            or model_class_loader(value, facts))


def _loaded_by_returns(target: FunctionNode, facts: ModuleFacts, depth: int) -> Optional[Loaded]:
    """The load every ``return`` of ``target`` hands back (``return None`` aside), with where it is; None when
    one of them returns anything else."""
    loads: List[Loaded] = []
    bindings = None
    for node in function_nodes(target, facts):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = unwrap(node.value)
        if isinstance(value, ast.Constant) and value.value is None:
            continue
        loaded = _loader(value, facts)
        if loaded is None and isinstance(value, ast.Name):
            if bindings is None:
                bindings = _instance_bindings(target, facts)
            loaded = _loader_before(bindings.get(value.id, []), node)
            if loaded is None and depth + 1 < MAX_DEPTH:
                inner = _returned_binding(value.id, node, target, facts, depth + 1)
                loaded = inner[1] if inner is not None else None
        elif loaded is None and isinstance(value, ast.Call) and depth + 1 < MAX_DEPTH:
            loaded = _returned_by(value, target, facts, depth + 1)
        if loaded is None:
            return None
        if loaded.where is None:
            loaded = replace(loaded, where=Related(
                facts.context.path, loaded.call.lineno, loaded.call.col_offset + 1,
                f"The row is loaded here{' under a lock' if loaded.locked else ' without a lock'} and returned by "
                f"`{target.name}`"))
        loads.append(loaded)
    if not loads:
        return None
    return replace(loads[0], locked=all(load.locked for load in loads))


def _as_seen_by(loaded: Loaded, call: ast.Call, target: FunctionNode, target_facts: ModuleFacts,
                function: FunctionNode, facts: ModuleFacts) -> Loaded:
    """The load with its model and session spelled as the caller spells them."""
    return replace(loaded, model=_spelled_here(loaded.model, target_facts, facts) or loaded.model.rsplit(".", 1)[-1],
                   session=_session_here(loaded.session, call, target, target_facts, function, facts))


def _session_here(session: Optional[str], call: ast.Call, target: FunctionNode, target_facts: ModuleFacts,
                  function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    if session is None or session == FLASK_SESSION:
        return session
    head, dot, rest = session.partition(".")
    if head in parameter_names(target, receiver=False):
        handed = argument_for(call, target, head)
        spelled = dotted(handed) if handed is not None else None
        return f"{spelled}{dot}{rest}" if spelled else None
    if head == "self" and rest:
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name) and receiver.id == "self" and target_facts is facts \
                and facts.enclosing_class(target) is facts.enclosing_class(function):
            return session  # ``self._card(code)``: a method of the same instance loads through the caller's session
        return instance_session(rest, call, target, target_facts, function, facts)
    return _spelled_here(session, target_facts, facts)


def instance_session(attribute: str, call: ast.Call, target: FunctionNode, target_facts: ModuleFacts,
                      function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """``self.session`` of a repository object the caller made with its own session (``CardStore(session)``,
    ``def __init__(self, session): self.session = session``): the session the caller handed in."""
    name, dot, rest = attribute.partition(".")
    cls = target_facts.enclosing_class(target)
    if cls is None:
        return None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    made = receiver
    made_facts = facts
    own_init = None
    holder = None
    if isinstance(receiver, ast.Name):
        bound = _last_binding(receiver.id, call, function, facts)
        made = unwrap(bound.value) if bound is not None else None
    elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        # ``self._repo.get(...)`` with ``self._repo = ProfileRepository(session)`` in the caller's own ``__init__``
        own_init = _init_of(facts.enclosing_class(function))
        made = _assigned_in(own_init, f"self.{receiver.attr}") if own_init is not None else None
    elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name):
        # ``uow.accounts.get(...)``: a repository a unit of work makes with the session it holds
        # (``self.accounts = AccountRepository(self._session)`` in its ``__enter__``)
        owner = instance_class(receiver.value, facts, function)
        made = _assigned_in_class(owner[0], f"self.{receiver.attr}") if owner is not None else None
        made_facts = owner[1] if owner is not None else facts
        holder = receiver.value.id
    if not isinstance(made, ast.Call):
        return None
    init = _init_run_by(made, made_facts, cls)
    if init is None:
        return None
    kept = [n.value.id for n in ast.walk(init) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and dotted(n.targets[0]) == f"self.{name}" and isinstance(n.value, ast.Name)
            and n.value.id in parameter_names(init, receiver=False)]
    if len(kept) != 1:
        return None
    handed = argument_for(made, init, kept[0])
    if holder is not None:
        spelled = dotted(handed) if handed is not None else None
        if not spelled or not spelled.startswith("self.") or spelled.count(".") != 1:
            return None
        return f"{holder}.{spelled[len('self.'):]}{dot}{rest}"
    if own_init is not None and isinstance(handed, ast.Name):
        # the session the caller's ``__init__`` handed the repository, as the caller keeps it (``self._session``)
        handed = next((t for n in ast.walk(own_init) if isinstance(n, ast.Assign) and len(n.targets) == 1
                       and isinstance(n.value, ast.Name) and n.value.id == handed.id
                       for t in n.targets if (dotted(t) or "").startswith("self.")), None)
    spelled = dotted(handed) if handed is not None else None
    return f"{spelled}{dot}{rest}" if spelled else None


def _init_run_by(made: ast.Call, facts: ModuleFacts, cls: ast.ClassDef) -> Optional[FunctionNode]:
    """The ``__init__`` that ``made`` (a constructor call) runs, when it makes an instance of ``cls`` or of a
    subclass of it (``WalletRepository(session)`` running the ``__init__`` of the generic repository it extends,
    whose method loads the row)."""
    if (dotted(made.func) or "").rsplit(".", 1)[-1] == cls.name and _init_of(cls) is not None:
        return _init_of(cls)
    built = instance_class(made, facts, facts.enclosing_function(made))
    if built is None:
        return None
    lineage, pending = [], [built]
    for _ in range(_MAX_BASE_STEPS):
        lineage.extend(pending)
        pending = [base for klass, where in pending for base in declared.base_classes(klass, where)]
    if not any(klass is cls for klass, _where in lineage):
        return None
    # the nearest class of the lineage that writes its own ``__init__``
    return next((init for init in (_init_of(klass) for klass, _where in lineage) if init is not None), None)


#: Steps up a class's bases to the class whose method loads the row.
_MAX_BASE_STEPS = 3


def _init_of(cls: Optional[ast.ClassDef]) -> Optional[FunctionNode]:
    if cls is None:
        return None
    return next((s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and s.name == "__init__"), None)


def _assigned_in_class(cls: ast.ClassDef, target: str) -> Optional[ast.AST]:
    """The one value a method of ``cls`` assigns to ``target`` (``self.accounts``)."""
    values = [unwrap(n.value) for n in ast.walk(cls) if isinstance(n, ast.Assign) and len(n.targets) == 1
              and dotted(n.targets[0]) == target]
    return values[0] if len(values) == 1 else None


def _assigned_in(function: FunctionNode, target: str) -> Optional[ast.AST]:
    values = [unwrap(n.value) for n in ast.walk(function) if isinstance(n, ast.Assign) and len(n.targets) == 1
              and dotted(n.targets[0]) == target]
    return values[0] if len(values) == 1 else None


def _spelled_here(name: str, where: ModuleFacts, facts: ModuleFacts) -> Optional[str]:
    """How this module names what ``name`` names in module ``where``: the same spelling in the same module,
    else through one of this module's imports of it (or of the module or object that holds it)."""
    if where is facts:
        return name
    head = name.partition(".")[0]
    if where.imports.is_imported(head):
        qualified = where.imports.qualify_dotted(name)
    else:
        module = _module_name(where)
        if module is None:
            return None
        qualified = f"{module}.{name}"
    for local, target in facts.imports.aliases.items():
        if qualified == target or qualified.startswith(target + "."):
            return local + qualified[len(target):]
    return None


def _module_name(facts: ModuleFacts) -> Optional[str]:
    path = facts.context.path or ""
    stem = os.path.splitext(os.path.basename(path))[0]
    package = facts.imports.package
    if stem == "__init__":
        return package or None
    return f"{package}.{stem}" if package else stem


#: Keywords that lock the row a load reads (``session.get(M, pk, with_for_update=True)``).
_LOCK_KEYWORDS = frozenset({"with_for_update"})
#: Query methods that lock the rows they read.
_LOCK_METHODS = frozenset({"with_for_update", "select_for_update"})


def locked_by_its_loader(instance: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """``instance`` was last bound to a call of a project function whose load locks the row, for this call:
    ``.with_for_update()`` / ``select_for_update()`` there, or ``with_for_update=<its parameter>`` that this call
    hands ``True`` (``load_account(session, pk, lock=True)``), whatever copy of the row it hands back (a DTO)."""
    assignment = _last_binding(instance, before, function, facts)
    call = unwrap(assignment.value) if assignment is not None else None
    if not isinstance(call, ast.Call):
        return False
    for target, _where in resolve(call, facts, function, by_name=False)[:_MAX_TARGETS]:
        for node in ast.walk(target):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr in _LOCK_METHODS:
                return True
            for keyword in node.keywords:
                if keyword.arg not in _LOCK_KEYWORDS:
                    continue
                value = keyword.value
                if isinstance(value, ast.Name) and value.id in parameter_names(target):
                    value = argument_for(call, target, value.id)
                if isinstance(value, ast.Constant) and value.value is True:
                    return True
    return False
