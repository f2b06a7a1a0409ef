"""A context manager of the project that answers whether it got a claim.

``@contextmanager`` (or ``@asynccontextmanager``) over a generator hands the ``with`` block what the generator
yields, as a plain helper hands its caller what it returns.  So a context manager that takes a claim and yields
its answer is a claim helper like one that returns it: the name ``with exclusive(key) as acquired:`` binds holds
the answer while the claim is held, and ``if not acquired: return`` at the top of the block (or the work inside
``if acquired:``) leads the job with a claim, as ``if not try_exclusive(key): return`` does.

The answer is what ``ClaimAnalyzer.answer_names`` reads for returns too: a try-lock's result, or a value read
or computed from it (``bool(row and row[0])``, ``cur.fetchone()[0]``, ``res.scalar()``), a Redis ``SET NX``
with an expiry, a lock's ``acquire(blocking=False)``, another claim helper's answer, and here also the name
another claiming context manager binds (a lock nested in a lock).  Every value the generator yields must be
that answer: the answer itself (or read off it), or a constant yielded where the answer decided the way
(``if not got: yield False; return`` then ``yield True``).  A context manager that yields anything else
(``yield conn``, a ``yield True`` no claim decides) hands the job nothing that says whether another replica has
the work, and a blocking lock (``pg_advisory_xact_lock``) is no claim at all: the replicas queue on it and each
runs the work in turn.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Optional, Set

from ..analysis.applied_decorators import decorators
from ..analysis.facts import FunctionNode, ModuleFacts, ancestors, walk_no_nested_functions
from ..knowledge import claims as known
from .claim_kinds import ANSWER_KINDS
from .claim_syntax import _fetch_from, mentions

if TYPE_CHECKING:  # (claims.py imports this module)
    from .claims import ClaimAnalyzer

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def is_context_factory(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``function`` is made a context manager by ``contextlib`` (``@contextmanager``, ``@asynccontextmanager``,
    or ``name = contextmanager(name)`` after it)."""
    return any((facts.qualify(decorator) or "") in known.CONTEXT_MANAGER_DECORATORS
               for decorator in decorators(function, facts))


def yields_claim(analyzer: "ClaimAnalyzer", function: FunctionNode, depth: int) -> bool:
    """Whether every value the generator ``function`` yields is the answer of a claim it takes."""
    yields = [node for node in walk_no_nested_functions(function) if isinstance(node, ast.Yield)]
    if not yields:
        return False
    executed: Dict[str, object] = {}
    answers = analyzer.answer_names(function, depth, contexts=True, executed=executed)
    if all(_is_answer(analyzer, node, answers, executed, depth) for node in yields):
        return True
    # ``if not granted: yield None; return`` ... ``yield conn``: the lost way yields nothing, the won way the
    # connection the claim holds; the caller's ``if conn is None: return`` tests the answer.
    lost = [node for node in yields if isinstance(node.value, ast.Constant) and not node.value.value
            and _decided(analyzer, node, answers, depth)]
    return bool(lost) and all(_is_answer(analyzer, node, answers, executed, depth)
                              or (node.value is not None and _decided(analyzer, node, answers, depth))
                              for node in yields)


def yields_claim_element(analyzer: "ClaimAnalyzer", function: FunctionNode, index: int, depth: int) -> bool:
    """Whether every value the generator ``function`` yields is a tuple whose ``index``-th element is the answer
    of a claim it takes (``yield conn, acquired``, bound by ``async with job_lock(pool, KEY) as (conn, got):``)."""
    yields = [node for node in walk_no_nested_functions(function) if isinstance(node, ast.Yield)]
    if not yields:
        return False
    executed: Dict[str, object] = {}
    answers = analyzer.answer_names(function, depth, contexts=True, executed=executed)
    for node in yields:
        value = node.value
        if not (isinstance(value, ast.Tuple) and index < len(value.elts)):
            return False
        element = value.elts[index]
        if not (_depends(analyzer, element, answers, depth) or _fetch_from(element, executed) is not None):
            return False
    return True


def _is_answer(analyzer: "ClaimAnalyzer", node: ast.Yield, answers: Set[str], executed: Dict[str, object],
               depth: int) -> bool:
    value = node.value
    if value is None:
        return False
    if _depends(analyzer, value, answers, depth) or _fetch_from(value, executed) is not None:
        return True
    return isinstance(value, ast.Constant) and _decided(analyzer, node, answers, depth)


def _depends(analyzer: "ClaimAnalyzer", expr: ast.AST, answers: Set[str], depth: int) -> bool:
    """``expr`` reads a claim's answer, or takes the claim itself (``yield r.set(key, me, nx=True, ex=60)``)."""
    if answers and mentions(expr, answers):
        return True
    hit = analyzer.claim_in(expr, depth + 1)
    return hit is not None and hit.kind in ANSWER_KINDS


def _decided(analyzer: "ClaimAnalyzer", node: ast.Yield, answers: Set[str], depth: int) -> bool:
    """A constant yielded in a branch the claim's answer chose (``if acquired: yield True``), or after a test of
    it whose other way leaves (``if not acquired: yield False; return`` ... ``yield True``)."""
    child: Optional[ast.AST] = node
    for above in ancestors(node):
        if isinstance(above, ast.If) and child is not above.test and _depends(analyzer, above.test, answers, depth):
            return True
        for name in ("body", "orelse", "finalbody"):
            block = getattr(above, name, None)
            if not isinstance(block, list) or not any(statement is child for statement in block):
                continue
            for earlier in block[:next(i for i, statement in enumerate(block) if statement is child)]:
                if (isinstance(earlier, ast.If) and _depends(analyzer, earlier.test, answers, depth)
                        and (_leaves(earlier.body) or _leaves(earlier.orelse))):
                    return True
        if isinstance(above, _FUNCTION_TYPES):
            return False
        child = above
    return False


def _leaves(body: list) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def won_state(analyzer: "ClaimAnalyzer", cls: ast.ClassDef, enter: FunctionNode) -> Set[str]:
    """Attributes of an object that say whether its ``__enter__`` (``__aenter__``) won a claim, when it returns the
    object itself: what a method it calls on itself (``await self.acquire()``) sets only on the side a claim won
    (``if await redis.set(key, token, nx=True, px=ttl): self._token = token``), and the properties of the class
    that read one of those (``held``: ``return self._token is not None``).  Empty when the object carries no
    such answer."""
    methods = {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    own = enter.args.args[0].arg if enter.args.args else "self"
    won: Set[str] = set()
    for node in walk_no_nested_functions(enter):
        call = node.value if isinstance(node, ast.Await) else node
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id == own \
                and call.func.attr in methods and methods[call.func.attr] is not enter:
            won |= _set_on_won_side(analyzer, methods[call.func.attr])
    if not won:
        return set()
    readers = {name for name, method in methods.items()
               if any(isinstance(d, ast.Name) and d.id == "property" for d in method.decorator_list)
               and _returns_read_of(method, won)}
    return won | readers


def _self_attributes_set(statements) -> Set[str]:
    found: Set[str] = set()
    for statement in statements:
        for node in [statement, *walk_no_nested_functions(statement)]:
            if isinstance(node, ast.Assign):
                found.update(t.attr for t in node.targets if isinstance(t, ast.Attribute)
                             and isinstance(t.value, ast.Name) and t.value.id == "self")
    return found


def _set_on_won_side(analyzer: "ClaimAnalyzer", method: FunctionNode) -> Set[str]:
    """``self.`` attributes the method sets inside ``if <claim>:`` (the branch taken when the claim is won)."""
    found: Set[str] = set()
    for node in walk_no_nested_functions(method):
        if isinstance(node, ast.If) and not (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
            if analyzer._tested_claim(node.test, node) is not None:
                found |= _self_attributes_set(node.body)
    return found


def _returns_read_of(method: FunctionNode, attributes: Set[str]) -> bool:
    """Every ``return`` of the method reads one of ``attributes`` of ``self`` (``return self._token is not None``)."""
    returns = [n for n in walk_no_nested_functions(method) if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(
        any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
            and n.attr in attributes for n in ast.walk(r.value)) for r in returns)
