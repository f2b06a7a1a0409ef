"""Lock keys the same for every call: a job-wide mutex (constants, digests of constants, upper-case names, a time
written down to a period) rather than one per row or user.

A key may be built by a function of the project from what it is handed (``def lock_name(task, *parts): name =
f"app:lock:{task}"; if parts: name += ...; return name``).  Called with fixed values, such a function returns a
fixed value when what it returns is made of its parameters, constants and conversions that give every process
the same answer (text methods, digests, ``int.from_bytes``): the call is followed into its def with those
parameters known to hold fixed values (``Given``), a few defs deep.  A name bound more than once counts every
binding (``name += suffix`` too).  A key read in a forwarded call (``forwarding``) is judged in the module each
of its parts was written in.
"""
from __future__ import annotations

import ast
import re
from typing import FrozenSet, List, Optional, Set, Tuple

from ..analysis.executed_sql import bound_value
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, is_generator, walk_no_nested_functions
from ..analysis.handed import argument_for, parameter_defaults, parameter_names, positional_parameters
from ..analysis.names import dotted, plain_name
from ..knowledge import advisory_locks as known
from ..knowledge.schedulers import BOUND_TASK_FIXED_FIELDS, CELERY_TASK_DECORATORS
from .forwarding import copied_from
from .process_values import _returned as returned_values

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)

#: The defs followed, each with the parameters known to hold a value fixed for every call.
Given = Tuple[Tuple[FunctionNode, FrozenSet[str]], ...]

#: Names followed to their values, and defs followed into, along one path.
_DEPTH = 3


def is_fixed_key(nodes: List[ast.AST], facts: ModuleFacts, given: Given = ()) -> bool:
    """True when the key is the same for every call (a job-wide mutex), not a per-row or per-user key."""
    return all(_fixed(node, facts, _DEPTH, given) for node in nodes)


def fixed_when_called(nodes: List[ast.AST], function: FunctionNode, facts: ModuleFacts, call: ast.Call,
                      caller: ModuleFacts) -> bool:
    """The key ``nodes`` (written in ``function`` of ``facts``) is the same for every run of ``call`` (in
    ``caller``): built from the parameters that call hands fixed values."""
    fixed = fixed_parameters(call, function, facts, caller, _DEPTH, ())
    return fixed is not None and is_fixed_key(nodes, facts, ((function, fixed),))


def parameter_names_around(node: ast.AST, facts: ModuleFacts) -> Set[str]:
    """The parameters of the def ``node`` is written in."""
    function = facts.enclosing_function(node)
    if function is None:
        return set()
    args = function.args
    return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}


def _fixed(node: ast.AST, facts: ModuleFacts, depth: int, given: Given) -> bool:
    if depth < 0:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_fixed(e, facts, depth, given) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_fixed(v, facts, depth, given) for v in node.values)
    if isinstance(node, (ast.UnaryOp, ast.Starred)):
        return _fixed(node.operand if isinstance(node, ast.UnaryOp) else node.value, facts, depth, given)
    if isinstance(node, ast.BinOp):
        return _fixed(node.left, facts, depth, given) and _fixed(node.right, facts, depth, given)
    if isinstance(node, ast.BoolOp):
        return all(_fixed(v, facts, depth, given) for v in node.values)
    if isinstance(node, ast.Subscript):  # ``digest[:8]``
        return _fixed(node.value, facts, depth, given) and _fixed(node.slice, facts, depth, given)
    if isinstance(node, ast.Slice):
        return all(part is None or _fixed(part, facts, depth, given) for part in (node.lower, node.upper, node.step))
    if isinstance(node, ast.JoinedStr):  # f"lock:{JOB}": fixed when every part is
        return all(_fixed(v, facts, depth, given) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        if _names_a_period(node, copied_from(node) or facts):
            return True
        return _fixed(node.value, facts, depth, given) and (
            node.format_spec is None or _fixed(node.format_spec, facts, depth, given))
    if isinstance(node, _COMPREHENSIONS):  # ``":".join(str(p) for p in parts)``: drawn from fixed values
        made = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        drawn = [generator.iter for generator in node.generators] + [i for g in node.generators for i in g.ifs]
        return all(_fixed(part, facts, depth, given) for part in drawn + made)
    if isinstance(node, ast.Name):
        return _fixed_name(node, facts, depth, given)
    if isinstance(node, ast.Attribute):
        home = copied_from(node) or facts
        # settings.NIGHTLY_LOCK_KEY, LockKeys.NIGHTLY; a def's own name; a bound Celery task's registered name
        return node.attr.isupper() or _names_a_def(node, home) or _bound_task_field(node, home)
    if isinstance(node, ast.Call):
        return _fixed_call(node, facts, depth, given)
    return False


def _fixed_name(node: ast.Name, facts: ModuleFacts, depth: int, given: Given) -> bool:
    copied = copied_from(node)
    home = copied or facts
    source = _comprehension_source(node)
    if source is not None:
        return _fixed(source, facts, depth, given)
    from .summaries import _name_bindings

    function = None if copied else home.enclosing_function(node)
    augmented = _augmented(node.id, function) if function is not None else []
    if any(not _fixed(v, home, depth - 1, given) for v in augmented):
        return False  # ``name += f":{account_id}"``
    if function is not None and node.id in _parameters(function) and node.id not in _name_bindings(function):
        # a parameter it never rebinds: fixed when the call being followed hands it a fixed value
        return any(f is function and node.id in names for f, names in given)
    # (a name copied from a forwarding helper's text is one of its module's: its top-level binding)
    value = _module_value(node.id, home) if copied else bound_value(node, home)
    if value is not None:
        return _fixed(value, home, depth - 1, given)
    # An upper-case name bound elsewhere (``from .locks import NIGHTLY_KEY``) is a constant by convention.
    return node.id.isupper()


def _parameters(function: FunctionNode) -> Set[str]:
    arguments = function.args
    return {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]}


def _module_value(name: str, facts: ModuleFacts) -> Optional[ast.AST]:
    from .process_state import module_binding

    found = module_binding(name, facts)
    return found[0] if found is not None else None


def _augmented(name: str, function: FunctionNode) -> List[ast.AST]:
    """The values ``name += value`` adds in ``function``'s own body."""
    return [node.value for node in walk_no_nested_functions(function)
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name]


def _comprehension_source(node: ast.Name) -> Optional[ast.AST]:
    """The iterable a comprehension around ``node`` draws it from (``p`` in ``str(p) for p in parts``)."""
    for above in ancestors(node):
        if isinstance(above, _FUNCTION_TYPES + (ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(above, _COMPREHENSIONS):
            for generator in above.generators:
                if any(isinstance(n, ast.Name) and n.id == node.id for n in ast.walk(generator.target)):
                    return generator.iter if not any(n is node for n in ast.walk(generator.iter)) else None
    return None


def _fixed_call(node: ast.Call, facts: ModuleFacts, depth: int, given: Given) -> bool:
    home = copied_from(node) or facts
    if _names_a_period(node, home):
        return True
    arguments = list(node.args) + [k.value for k in node.keywords]
    func = node.func
    # (by name only for a plain chain: ``hashlib.sha256(name).digest()`` is the digest of what it was given)
    callee = (home.callee(node) or "") if plain_name(func) is not None else ""
    if callee in known.KEY_CONVERSIONS or callee.startswith(known.KEY_CONVERSION_PREFIXES):
        return all(_fixed(a, facts, depth, given) for a in arguments)
    if isinstance(func, ast.Attribute) and func.attr in known.KEY_CONVERSION_METHODS:
        return _fixed(func.value, facts, depth, given) and all(_fixed(a, facts, depth, given) for a in arguments)
    if isinstance(func, ast.Name) and func.id == "hash":
        return all(_fixed(a, facts, depth, given) for a in node.args)
    return _returns_fixed(node, facts, depth, given)


def _returns_fixed(call: ast.Call, facts: ModuleFacts, depth: int, given: Given) -> bool:
    """``lock_name(TASK)`` runs a def of the project that returns a value made of its parameters and constants,
    and every parameter it reads is handed a fixed value."""
    from .summaries import resolve

    if depth <= 0 or not isinstance(call.func, (ast.Name, ast.Attribute)):
        return False
    home = copied_from(call) or facts
    targets = resolve(call, home, None if copied_from(call) else home.enclosing_function(call), by_name=False)
    if len(targets) != 1:
        return False
    target, target_facts = targets[0]
    if not isinstance(target, _FUNCTION_TYPES) or target.decorator_list or is_generator(target) \
            or any(f is target for f, _ in given):
        return False
    fixed = fixed_parameters(call, target, target_facts, facts, depth, given)
    returned = returned_values(target)
    return fixed is not None and bool(returned) and all(
        _fixed(value, target_facts, depth - 1, given + ((target, fixed),)) for value in returned)


def fixed_parameters(call: ast.Call, function: FunctionNode, facts: ModuleFacts, caller: ModuleFacts, depth: int,
                     given: Given) -> Optional[FrozenSet[str]]:
    """The parameters of ``function`` (of ``facts``) that ``call`` (in ``caller``) hands a fixed value, by argument
    or default; a ``*parts`` when every extra positional argument is fixed.  None when a spread argument hides
    which parameter gets what."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    defaults = parameter_defaults(function)
    fixed: Set[str] = set()
    for parameter in parameter_names(function, receiver=False):
        argument = argument_for(call, function, parameter)
        if argument is not None:
            if _fixed(argument, caller, depth - 1, given):
                fixed.add(parameter)
        elif parameter in defaults and _fixed(defaults[parameter], facts, depth - 1, given):
            fixed.add(parameter)
    vararg = function.args.vararg
    if vararg is not None and all(_fixed(a, caller, depth - 1, given)
                                  for a in call.args[len(positional_parameters(function)):]):
        fixed.add(vararg.arg)
    return frozenset(fixed)


def _names_a_def(node: ast.Attribute, facts: ModuleFacts) -> bool:
    """``post_daily_revenue.__name__``: the name of a def (or class) of the module, or imported from the project,
    is written in the source: the same in every process."""
    from . import index as project

    if node.attr not in ("__name__", "__qualname__") or not isinstance(node.value, ast.Name):
        return False
    name = node.value.id
    function = facts.enclosing_function(node)
    if function is not None and (name in parameter_names_around(node, facts) or bound_value(node.value, facts)):
        return False  # a parameter or a local: whatever the call hands it
    if any(facts.enclosing_function(f) is None and facts.enclosing_class(f) is None
           for f in facts.functions_by_name.get(name, ())) or any(c.name == name for c in facts.tree.body
                                                                  if isinstance(c, ast.ClassDef)):
        return True
    qualified = facts.qualify(node.value) or ""
    return bool(facts.context.cross_file and facts.imports.is_imported(name) and "." in qualified
                and project.find_function(qualified, facts.config, project.roots_for(facts)) is not None)


def _bound_task_field(node: ast.Attribute, facts: ModuleFacts) -> bool:
    """``self.name`` in ``@app.task(bind=True) def sync(self)``: the task object's registered name."""
    if node.attr not in BOUND_TASK_FIXED_FIELDS or not isinstance(node.value, ast.Name):
        return False
    function = facts.enclosing_function(node)
    if function is None:
        return False
    arguments = function.args.posonlyargs + function.args.args
    if not arguments or arguments[0].arg != node.value.id:
        return False
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        last = (dotted(decorator.func) or "").rsplit(".", 1)[-1]
        if last in CELERY_TASK_DECORATORS and any(
                k.arg == "bind" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in decorator.keywords):
            return True
    return False


# -- a time written down to a period -------------------------------------------------------------------------

#: strftime directives finer than a minute: a key carrying one differs from one run to the next.
_INSTANT_DIRECTIVES = re.compile(r"%[SfsXcT]")
_DIRECTIVE = re.compile(r"%[a-zA-Z]")
#: Calls that read today's date (the day every replica shares), not an instant.
_TODAY_CALLS = frozenset({"datetime.date.today", "date.today", "django.utils.timezone.localdate"})


def _names_a_period(node: ast.AST, facts: ModuleFacts) -> bool:
    """A time written down to a period (``f"runsheets:{day:%Y%m%d}"``, ``slot.strftime("%Y%m%d%H")``,
    ``date.today()``): every replica running in that day or hour computes the same key, so it is one key for
    the period's run, not one per row.  The time is a name or the clock itself, not a field of some record
    (``invoice.due:%Y%m%d`` is the invoice's)."""
    if isinstance(node, ast.FormattedValue):
        spec = node.format_spec
        text = "".join(v.value for v in spec.values if isinstance(v, ast.Constant) and isinstance(v.value, str)) \
            if isinstance(spec, ast.JoinedStr) else ""
        return _period_format(text) and _a_time(node.value, facts)
    if not isinstance(node, ast.Call):
        return False
    if (facts.callee(node) or "") in _TODAY_CALLS:
        return True
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "strftime" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return _period_format(node.args[0].value) and _a_time(func.value, facts)
    if isinstance(func, ast.Attribute) and func.attr in ("date", "isoformat") and not node.args:
        inner = func.value
        return isinstance(inner, ast.Call) and (func.attr == "date" or _names_a_period(inner, facts)) \
            and _a_time(inner, facts)
    return False


def _period_format(text: str) -> bool:
    return bool(_DIRECTIVE.search(text)) and not _INSTANT_DIRECTIVES.search(text)


def _a_time(node: ast.AST, facts: ModuleFacts) -> bool:
    """A name holding a time, or a reading of the clock (``datetime.now(tz)``, ``timezone.now()``)."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Call):
        callee = facts.callee(node) or dotted(node.func) or ""
        return callee.rsplit(".", 1)[-1] in ("now", "utcnow", "today", "localdate", "localtime")
    return False

