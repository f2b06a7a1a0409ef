"""Single-use entries deleted without reading the row count before success is returned."""

import ast
from typing import List, Optional

from ...project import index as project
from ...project.claim_syntax import is_log_call
from ...project.claims import ClaimAnalyzer
from ...analysis.facts import ModuleFacts, ancestors, call_name, walk, walk_no_nested_functions
from ...knowledge import orm
from ...knowledge import startup as routes
from ..data_races import unwrap
from .selection import _contains, _is_constant
from .callers import _resolver


# -- single-use consumes that ignore the row count -------------------------------------------------------------
#: Library callables that build a DELETE statement (``session.execute(delete(Code).where(...))``).
_SA_DELETE_BUILDERS = frozenset({"sqlalchemy.delete", "sqlalchemy.sql.delete", "sqlalchemy.sql.expression.delete",
                                 "sqlmodel.delete"})


def _matching_guard(statement: ast.stmt) -> Optional[ast.If]:
    """The innermost ``if`` around ``statement`` whose passing branch holds it and whose test compares a
    presented value with a stored one (``tan == hash(otp, salt)``, ``compare_digest(a, b)``)."""
    for above in ancestors(statement):
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if isinstance(above, ast.If) and any(_contains(s, statement) for s in above.body):
            test = above.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and not (
                    _is_constant(test.comparators[0]) or _is_constant(test.left)):
                return above
            if isinstance(test, ast.Call) and call_name(test) in ("compare_digest", "constant_time_compare"):
                return above
            return None
    return None


def _deleting_call(call: ast.Call, facts: ModuleFacts, depth: int = 0) -> bool:
    """The call deletes stored rows: a Django ``.delete()``, ``session.delete(obj)``, ``delete(Model)`` run,
    SQL ``DELETE``, or a project function (a method found through the class's bases too) that does one of
    these and returns nothing."""
    name = call_name(call)
    if name in ("delete", "adelete"):
        return True
    if any(isinstance(n, ast.Call) and facts.callee(n) in _SA_DELETE_BUILDERS for n in walk(call)):
        return True
    if depth >= 2:
        return False
    found = _resolve_method(call, facts)
    if found is None:
        return False
    function, foreign = found
    if any(isinstance(n, ast.Return) and n.value is not None for n in walk_no_nested_functions(function)):
        return False  # it reports something back (a count, a flag): the caller may act on it
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Call) and (foreign.callee(node) in _SA_DELETE_BUILDERS or (
                call_name(node) in ("delete", "adelete") and not node.args)):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lstrip().upper().startswith(
                "DELETE "):
            return True
    return False


def _resolve_method(call: ast.Call, facts: ModuleFacts):
    """The ``def`` a call reaches: a module function, ``self.method`` in the class or (CLI) its bases in the
    project, or an imported function."""
    func = call.func
    analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        cls = facts.enclosing_class(call)
        if cls is None:
            return None
        return _method_in_class(cls, func.attr, facts, 0)
    found = analyzer._helper_target(call)
    return (found[0], found[1].facts) if found is not None else None


def _method_in_class(cls: ast.ClassDef, name: str, facts: ModuleFacts, depth: int):
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            return statement, facts
    if depth >= 4 or not facts.context.cross_file:
        return None
    for base in cls.bases:
        qualified = facts.qualify(base) or ""
        module, _, class_name = qualified.rpartition(".")
        path = project.module_path(module, project.roots_for(facts))
        foreign = project.module_facts(path, facts.config) if path else None
        if foreign is None:
            continue
        for statement in foreign.tree.body:
            if isinstance(statement, ast.ClassDef) and statement.name == class_name:
                found = _method_in_class(statement, name, foreign, depth + 1)
                if found is not None:
                    return found
    return None


def _returns_success(statements: List[ast.stmt]) -> bool:
    """The next statement reports success: ``return True`` / ``return 1`` / ``return <value>``."""
    for statement in statements:
        if isinstance(statement, ast.Expr) and (is_log_call(statement.value) or (
                isinstance(unwrap(statement.value), ast.Call) and call_name(unwrap(statement.value)) in orm.SA_FLUSH)):
            continue  # logging, or the commit that makes the delete stick
        if isinstance(statement, ast.Return) and statement.value is not None:
            value = statement.value
            return not (isinstance(value, ast.Constant) and not value.value)
        return False
    return False


def serves_delete_requests(function: ast.AST) -> bool:
    """``function`` handles only HTTP DELETE requests (``@router.delete(...)``, ``@app.route(..., methods=
    ["DELETE"])``): the entry it deletes is the resource the request names, and a second DELETE of it is the
    same request again by HTTP's own terms, not a single-use code spent twice."""
    for decorator in getattr(function, "decorator_list", ()):
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)):
            continue
        if decorator.func.attr == routes.DELETE_ROUTE_DECORATOR:
            return True
        methods = next((k.value for k in decorator.keywords if k.arg == routes.ROUTE_METHODS_KEYWORD), None)
        if (decorator.func.attr in routes.ROUTE_DECORATORS and isinstance(methods, (ast.List, ast.Tuple, ast.Set))
                and methods.elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                         and e.value.upper() == routes.DELETE_METHOD for e in methods.elts)):
            return True
    return False

