"""Who else can write a row: a lost update needs two writers.

A row changed from its own value is lost only when another request, task or replica can load the same row
and write it back in between.  None can when the row was created in this function (or returned fresh by the
call just before), when every caller in the project hands over a row it created or locked, when nothing in
the project calls the code at all, or when the object is no row (a value of a library that is not an ORM).
Each answer is a reason, so a silence can say why; anything not shown is a possible second writer.
"""
from __future__ import annotations

import ast
import os
import re
from typing import List, Optional, Tuple

from ...analysis.context import FileContext
from ...analysis.facts import FunctionNode, ModuleFacts, walk
from ...analysis.names import dotted
from ...knowledge import orm
from ...project import index as project
from ...project.row_claims import takes_claimed_rows
from ...project.summaries import callers, resolve
from .changes import _dominates
from .loads import (
    _relocked_before, chain, django_instance_loader, django_queryset, function_nodes, later, sa_source, unwrap)

#: Callers looked at for one def: more than this and the row is taken to have many writers.
MAX_CALLERS = 16
#: Calls followed from a row to where it was made (a helper returning a row it created, its callers' callers).
MAX_DEPTH = 2
#: Django manager methods that insert the row they return.
_CREATES = frozenset({"create", "acreate"})
#: Library modules whose calls copy an object rather than make a new kind of one: ``copy.copy(row)`` is a row.
_COPYING_MODULES = frozenset({"copy"})

#: What a name is bound to before a statement: the value assigned, or this marker for a loop or ``with``
#: target (a row of many, an object a context manager made).
_ITERATED = ast.Pass()


def _binding(name: str, before: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
    """What ``name`` holds at ``before``: its one binding, or ``_ITERATED`` when it has several that do not
    all agree (``row = load(); if not row: row = Model()`` may hold a loaded row)."""
    bound = _bindings(name, before, function, facts)
    if not bound:
        return None
    if len(bound) == 1 or _dominates(bound[-1][0], before):
        return bound[-1][1]  # the last binding always runs before: it is what the name holds
    found = [value for _, value in bound]
    if all(not isinstance(v, _Managed) and v is not _ITERATED and fresh(v, function, facts) for v in found):
        return found[-1]
    if all(not isinstance(v, _Managed) and v is not _ITERATED and not_a_row(v, facts) for v in found):
        return found[-1]
    return _ITERATED


def _bindings(name: str, before: ast.AST, function: FunctionNode,
              facts: ModuleFacts) -> List[Tuple[ast.stmt, ast.AST]]:
    found: List[Tuple[ast.stmt, ast.AST]] = []
    for node in function_nodes(function, facts):
        if not isinstance(node, ast.stmt) or not later(before, node):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append((node, unwrap(node.value)))
                elif (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)
                      and target.elts[0].id == name):
                    found.append((node, _ITERATED))  # ``obj, created = get_or_create(...)``: may be an existing row
        elif isinstance(node, (ast.For, ast.AsyncFor)) and _binds(node.target, name):
            found.append((node, _ITERATED))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None and _binds(item.optional_vars, name):
                    found.append((node, _Managed(unwrap(item.context_expr))))
    return found


class _Managed:
    """A ``with`` target: the object a context manager made, judged by the call that made it."""

    def __init__(self, made: ast.AST) -> None:
        self.made = made


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(target))


def _parameters(function: FunctionNode) -> List[str]:
    arguments = function.args
    return [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]


def sole_writer(instance: str, at: ast.AST, function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """Why no second writer can hold ``instance`` where it is changed (``at``), or None when one may."""
    head = instance.split(".", 1)[0]
    value = _binding(head, at, function, facts)
    if isinstance(value, _Managed):
        made = value.made
        return f"`{head}` is opened by `{dotted(made.func)}`, not an ORM" if not_a_row(made, facts) else None
    if value is not None:
        if value is _ITERATED:
            return None
        if not_a_row(value, facts):
            return f"`{head}` is made by `{dotted(value.func) if isinstance(value, ast.Call) else '?'}`, not an ORM"
        if head == instance and fresh(value, function, facts):
            return f"`{instance}` is a row created in this function"
        return None
    if instance == "self" or instance in _parameters(function):
        if unreferenced(function, facts):
            return f"nothing in the project calls `{function.name}`"
        return callers_hold_alone(function, facts, instance)
    return None


def not_a_row(value: ast.AST, facts: ModuleFacts) -> bool:
    """A value made by a library that is neither an ORM nor the project (``Pdf.new()``, ``Image.open(...)``):
    its attributes and its ``save()`` are that library's, not a database row's."""
    if not isinstance(value, ast.Call):
        return False
    spelled = dotted(value.func)
    target = facts.imports.aliases.get(spelled.split(".", 1)[0]) if spelled else None
    if not target or target.startswith("."):
        return False  # defined here, a builtin, or the module's own package: not shown to be a library
    head = target.split(".", 1)[0]
    if head in _COPYING_MODULES or head in orm.ORM_MODULES:
        return False
    return not _in_project(head, facts)


def _in_project(package: str, facts: ModuleFacts) -> bool:
    if project.module_path(package, project.roots_for(facts)) is not None:
        return True
    for root in filter(None, project.roots_for(facts).split(os.pathsep)):
        for base in (root, os.path.join(root, "src")):
            if os.path.isdir(os.path.join(base, package)) or os.path.isfile(os.path.join(base, package + ".py")):
                return True
    return False


def fresh(value: ast.AST, function: FunctionNode, facts: ModuleFacts, depth: int = 0) -> bool:
    """``Model(...)``, ``Model.objects.create(...)``, or a project call whose every return is such a row."""
    value = unwrap(value)
    if not isinstance(value, ast.Call):
        return False
    head, links = chain(value)
    if links and links[-1][0] in _CREATES and any(name in orm.DJANGO_MANAGERS for name, _ in links):
        return True
    last = (dotted(value.func) or "").rsplit(".", 1)[-1]
    if last[:1].isupper() and django_instance_loader(value, facts) is None and sa_source(value, facts, False) is None:
        return True  # a class called: a new object, not yet in any table
    if depth >= MAX_DEPTH or not facts.context.cross_file:
        return False
    targets = resolve(value, facts, function)
    return bool(targets) and len(targets) <= 4 and all(_returns_fresh(t, f, depth + 1) for t, f in targets)


def _returns_fresh(function: FunctionNode, facts: ModuleFacts, depth: int) -> bool:
    returns = [n for n in function_nodes(function, facts) if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return False
    for statement in returns:
        value = unwrap(statement.value)
        if isinstance(value, ast.Name):
            value = _binding(value.id, statement, function, facts)
            if value is None or value is _ITERATED or isinstance(value, _Managed):
                return False
        if not fresh(value, function, facts, depth):
            return False
    return True


# -- callers ------------------------------------------------------------------------------------------------


def _calls_of(function: FunctionNode, facts: ModuleFacts) -> Optional[List[Tuple[ast.Call, ModuleFacts]]]:
    """Every call of ``function`` in the project's own (non-test) code, or None when there are too many to
    judge.  A method is found by name (its receivers' types are seldom written down)."""
    if facts.enclosing_class(function) is None:
        found = callers(function, facts, limit=MAX_CALLERS + 1)
        return found if len(found) <= MAX_CALLERS else None
    name = function.name
    found: List[Tuple[ast.Call, ModuleFacts]] = []
    for path in project.files_mentioning(f"{name}(", project.search_root(facts)):
        if os.path.abspath(path) == os.path.abspath(facts.context.path or ""):
            other: Optional[ModuleFacts] = facts
        elif FileContext(path, facts.config, cross_file=True).is_test:
            continue
        else:
            other = project.module_facts(path, facts.config)
        if other is None or other.context.is_test:
            continue
        for call in other.calls_by_name.get(name, ()):
            if isinstance(call.func, ast.Attribute):
                found.append((call, other))
        if len(found) > MAX_CALLERS:
            return None
    return found


def callers_hold_alone(function: FunctionNode, facts: ModuleFacts, instance: str, depth: int = 0) -> Optional[str]:
    """Why every caller of ``function`` hands over a row no one else writes at that moment (one it created,
    or loaded or re-read under a row lock), or None.  The whole project must be known (not under flake8)."""
    if not facts.context.cross_file:
        return None
    calls = _calls_of(function, facts)
    if not calls:
        return None  # no call seen is not proof: a framework may call it (see ``unreferenced``)
    position = None if instance == "self" else _parameters(function).index(instance)
    is_method = facts.enclosing_class(function) is not None
    if position is not None and is_method and function.args.args and function.args.args[0].arg in ("self", "cls"):
        position -= 1
    kinds = set()
    for call, where in calls:
        caller = where.enclosing_function(call)
        passed = call.func.value if position is None else _argument(call, position, instance)
        name = dotted(passed) if passed is not None else None
        if caller is None or name is None or "." in name:
            return None
        if position is None and _another_class(name, call, caller, where, function, facts):
            continue  # a same-named method of another model: its receiver's class is written down
        kind = _handed_over(name, call, caller, where, depth)
        if kind is None:
            return None
        kinds.add(kind)
    what = " or ".join(sorted(kinds))
    return f"every caller of `{function.name}` passes a row it {what}"


def _receiver_model(name: str, call: ast.Call, caller: FunctionNode, facts: ModuleFacts) -> Optional[str]:
    """The model class a receiver is visibly an instance of: loaded, created or iterated from ``Model.objects``
    (or a SQLAlchemy select of it), or constructed."""
    value: Optional[ast.AST] = None
    for node in function_nodes(caller, facts):
        if not isinstance(node, ast.stmt) or not later(call, node):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and any(
                isinstance(t, ast.Name) and t.id == name
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            value = unwrap(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) and node.target.id == name:
            value = unwrap(node.iter)
    if value is None:
        return None
    queryset = django_queryset(value)
    if queryset is not None:
        return queryset[0]
    loaded = sa_source(value, facts, False) or sa_source(value, facts, True)
    if loaded is not None:
        return loaded.model
    if isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1][:1].isupper():
        return dotted(value.func)
    return None


def _another_class(name: str, call: ast.Call, caller: FunctionNode, where: ModuleFacts, function: FunctionNode,
                   facts: ModuleFacts) -> bool:
    """The receiver is visibly an instance of a class other than the method's own (nor a subclass of it)."""
    own = facts.enclosing_class(function)
    model = _receiver_model(name, call, caller, where)
    if own is None or model is None:
        return False
    seen, pending = set(), [(model, where)]
    while pending and len(seen) < 8:
        spelled, module = pending.pop()
        last = spelled.rsplit(".", 1)[-1]
        if last == own.name:
            return False
        if last in seen:
            continue
        seen.add(last)
        found = _class_named(spelled, module)
        if found is None:
            if len(seen) == 1:
                return False  # the receiver's own class is not seen: it may be ours
            continue  # a base outside the project (``models.Model``)
        cls, cls_facts = found
        pending.extend((dotted(base) or "?", cls_facts) for base in cls.bases)
    return True


def _class_named(spelled: str, facts: ModuleFacts):
    if "." not in spelled:
        for cls in facts.classes:
            if cls.name == spelled and facts.enclosing_class(cls) is None:
                return cls, facts
    qualified = facts.qualify(ast.parse(spelled, mode="eval").body) if spelled.replace(".", "").isidentifier() else None
    return project.find_class(qualified, facts.config, project.roots_for(facts)) if qualified else None


def _argument(call: ast.Call, position: int, name: str) -> Optional[ast.AST]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return None


def _handed_over(name: str, call: ast.Call, caller: FunctionNode, facts: ModuleFacts, depth: int) -> Optional[str]:
    if _relocked_before(name, call, caller, facts):
        return "locked"
    value = _binding(name, call, caller, facts)
    if value is not None:
        if value is _ITERATED:
            # a row of rows taken with a claim (``FOR UPDATE SKIP LOCKED``, moved out of the state that selected
            # them) here or by a project function that hands them back: no other runner gets it
            return "claimed" if takes_claimed_rows(call, facts) else None
        if isinstance(value, _Managed):
            return None
        loaded = django_instance_loader(value, facts) or sa_source(value, facts, False)
        if loaded is not None:
            return "locked" if loaded.locked else None
        return "created" if fresh(value, caller, facts) else None
    if (name == "self" or name in _parameters(caller)) and depth < MAX_DEPTH:
        if unreferenced(caller, facts):
            return "created"  # the caller itself is never called
        reason = callers_hold_alone(caller, facts, name, depth + 1)
        if reason is not None:
            return next((kind for kind in ("locked", "claimed") if reason.endswith(kind)), "created")
    return None


# -- dead code ----------------------------------------------------------------------------------------------


def unreferenced(function: FunctionNode, facts: ModuleFacts) -> bool:
    """Nothing in the project's own code names ``function`` but its ``def`` (tests aside), and nothing outside
    the project is known to call it: a module function, or a method of a model class that is no ORM hook.
    Only when the whole project is known."""
    if not facts.context.cross_file or function.decorator_list or function.name.startswith("__"):
        return False
    cls = facts.enclosing_class(function)
    if cls is not None and (facts.enclosing_class(cls) is not None or function.name in orm.MODEL_HOOKS
                            or not _is_model_class(cls, facts)):
        return False
    if cls is None and facts.enclosing_function(function) is not None:
        return False
    word = re.compile(rb"\b" + re.escape(function.name.encode()) + rb"\b")
    mentions = 0
    for path in project.files_mentioning(function.name, project.search_root(facts)):
        if FileContext(path, facts.config, cross_file=True).is_test:
            continue
        mentions += len(word.findall(project.read_bytes(path)))
        if mentions > 1:
            return False
    return mentions == 1 and _module_named_elsewhere(facts)


def _module_named_elsewhere(facts: ModuleFacts) -> bool:
    """Another file of the project names the module (an import, a dotted path): it is loaded by the project,
    so a function no file names is dead.  A module no file names is loaded some other way (a framework's
    discovery by convention, an entry point): who calls its functions is not known."""
    path = facts.context.path
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    word = re.compile(rb"\b" + re.escape(stem.encode()) + rb"\b")
    own = os.path.realpath(path)
    return any(os.path.realpath(other) != own and word.search(project.read_bytes(other))
               for other in project.files_mentioning(stem, project.search_root(facts)))


def _is_model_class(cls: ast.ClassDef, facts: ModuleFacts) -> bool:
    from .loads import _model_columns

    return bool(_model_columns(cls, facts)) or any(
        (dotted(base) or "").rsplit(".", 1)[-1] in orm.MODEL_BASES for base in cls.bases)
