"""Where a claim must have been won: the claim a name holds, the branch an ``if`` takes when the claim it tests
was lost, and the claim that dominates a statement (``ClaimBranches``, read by ``ClaimAnalyzer``)."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from ..analysis.facts import ancestors, walk, walk_no_nested_functions
from ..analysis.names import plain_name
from .bindings import _module_level
from .claim_kinds import CONDITIONAL_UPDATE, HELPER_GUARD, NEEDS_TEST, TRY_LOCK, UNIQUE_INSERT, ClaimHit
from .claim_syntax import _fetch_from, _leaves, _target_attributes, _target_names, failed_side

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SQL_SENDERS = frozenset({"execute", "exec_driver_sql", "executemany"})


class ClaimBranches:
    """The branch reading of ``ClaimAnalyzer`` (its ``facts``, ``claim_in`` and ``_bound_claims``)."""

    # -- OG203: the branch taken when a claim fails --------------------------------------------
    def bound_claim(self, scope: ast.AST, name: str, before: Optional[ast.AST] = None) -> Optional[ClaimHit]:
        """The claim whose result ``name`` holds in ``scope`` (a function or the module), or None.

        ``acquired = r.set(..., nx=True, ex=...)``; ``(got,) = cur.fetchone()`` after
        ``cur.execute("SELECT pg_try_advisory_xact_lock(...)")``; ``cur`` itself after that execute;
        ``self.is_leader = await self.lease.try_acquire()`` for ``self.is_leader``.  With ``before``, only what
        is written ahead of it can be what a test there reads: a claim bound further down (the other arm of
        ``if self.is_leader: ... renew ... else: ... try_acquire``) is not the one tested.
        """
        limit = (before.end_lineno, before.end_col_offset) if before is not None else None
        key = (id(scope), name, limit)
        if key in self._bound_claims:
            return self._bound_claims[key]
        found: Optional[ClaimHit] = None
        executed: Dict[str, ClaimHit] = {}
        nodes = walk_no_nested_functions(scope) if scope is not self.facts.tree else _module_level(scope)
        for node in nodes:
            if limit is not None and (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) >= limit:
                continue
            if isinstance(node, ast.Expr):
                value = node.value.value if isinstance(node.value, ast.Await) else node.value
                if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                        and value.func.attr in _SQL_SENDERS):
                    receiver = plain_name(value.func.value)
                    if receiver:
                        hit = self.claim_in(value)
                        if hit is not None and hit.kind in (TRY_LOCK, CONDITIONAL_UPDATE, UNIQUE_INSERT):
                            executed[receiver] = hit
                            if receiver.split(".", 1)[0] == name:
                                found = hit
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value.value if isinstance(node.value, ast.Await) else node.value
                if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                        and value.func.attr in _SQL_SENDERS):
                    # ``result = await session.execute(text("SELECT pg_try_advisory_lock(...)"))``: what is
                    # later fetched from ``result`` is the claim's answer.
                    hit = self.claim_in(value)
                    if hit is not None and hit.kind in (TRY_LOCK, CONDITIONAL_UPDATE, UNIQUE_INSERT):
                        for target in _target_names(node):
                            executed[target] = hit
                if name in (_target_names(node) if "." not in name else _target_attributes(node)):
                    hit = self.claim_in(node.value)
                    if hit is None and executed:
                        hit = _fetch_from(node.value, executed)
                    if hit is not None and hit.kind in NEEDS_TEST:
                        found = hit
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name) and node.target.id == name:
                hit = self.claim_in(node.value)
                if hit is not None and hit.kind in NEEDS_TEST:
                    found = hit
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                # ``with exclusive(key) as got:``: a project context manager that yields its claim's answer;
                # ``as (conn, got)``: one that yields it with the connection the claim holds.
                for item in node.items:
                    bound = item.optional_vars
                    if isinstance(bound, ast.Name) and bound.id == name:
                        hit = self.context_claim(item.context_expr)
                        if hit is not None:
                            found = hit
                    elif isinstance(bound, (ast.Tuple, ast.List)):
                        index = next((i for i, e in enumerate(bound.elts) if isinstance(e, ast.Name) and e.id == name),
                                     None)
                        hit = self.context_claim_element(item.context_expr, index) if index is not None else None
                        if hit is not None:
                            found = hit
        self._bound_claims[key] = found
        return found

    def failed_branch(self, node: ast.If) -> Optional[Tuple[List[ast.stmt], ClaimHit]]:
        """The statements an ``if`` runs when the claim it tests was not obtained, and that claim."""
        split = failed_side(node)
        if split is None:
            return None
        branch, test = split
        hit = self._tested_claim(test, node)
        if hit is None:
            return None
        return branch, hit

    def dominating_claim(self, node: ast.AST) -> Optional[ClaimHit]:
        """The claim that must have been won for the code at ``node`` to run, or None: ``node`` sits in the
        branch of an ``if`` taken when a claim succeeded, or after an ``if`` of the same function whose
        failed branch leaves (``if not acquired: return False``), also one nested in an earlier statement
        (the lock taken only on the database that has one).  What only the winner reaches -- a job added to
        a scheduler, a scheduler started -- happens on one replica."""
        child = node
        for above in ancestors(node):
            if isinstance(above, (ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(above, ast.IfExp) and child is not above.test:
                # ``sent = settle() if locked else 0``: the side the won claim takes, as an ``if`` statement's
                test = above.test
                negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                if (child is above.body) != negated:
                    hit = self._tested_claim(test.operand if negated else test, node)
                    if hit is not None:
                        return hit
            for name in ("body", "orelse", "finalbody"):
                block = getattr(above, name, None)
                if not isinstance(block, list) or not any(s is child for s in block):
                    continue
                if isinstance(above, (ast.With, ast.AsyncWith)) and name == "body":
                    # ``with exclusive(engine, key): run()``: a context manager that enters only for the winner
                    # (it raises, or leaves, when the claim fails)
                    for item in above.items:
                        hit = self.claim_in(item.context_expr)
                        if hit is None and isinstance(item.context_expr, ast.Call):
                            hit = self.context_claim(item.context_expr)  # (an ``__enter__`` that raises unless won)
                        if hit is not None and not hit.needs_test:
                            return hit
                if isinstance(above, ast.If):
                    side = failed_side(above)  # (the test is resolved only when ``node`` is on its won side)
                    found = self.failed_branch(above) if side is not None and side[0] is not block else None
                    if found is not None and found[0] is not block:
                        return found[1]
                index = next(i for i, s in enumerate(block) if s is child)
                for statement in block[:index]:
                    hit = self._leaving_claim(statement, top=True)
                    if hit is not None:
                        return hit
            if isinstance(above, _FUNCTION_TYPES):
                return None  # the function's own body was the last block: its callers are not asked
            child = above
        return None

    def _leaving_claim(self, statement: ast.stmt, top: bool) -> Optional[ClaimHit]:
        """The claim of an ``if`` in ``statement`` whose failed branch leaves the function (at the top of
        the block ``continue``/``break`` leave too: they skip what follows in the loop)."""
        for node in [statement, *walk_no_nested_functions(statement)]:
            if not isinstance(node, ast.If):
                continue
            side = failed_side(node)
            if side is None or not _leaves(side[0]):
                continue  # (its failed branch does not leave: what the test reads need not be resolved)
            found = self.failed_branch(node)
            if found is None or not _leaves(found[0]):
                continue
            if node is statement and top:
                return found[1]
            if isinstance(found[0][-1], (ast.Return, ast.Raise)):
                return found[1]
        return None

    def _flag_set_by_claims(self, test: ast.Attribute, node: ast.AST) -> Optional[ClaimHit]:
        """``if elector.is_leader:`` where ``elector`` is declared (or made) as a project class whose methods set
        ``self.is_leader`` only to a claim's answer (``await self._acquire()``, or a renewal of it: ``await
        (self._renew() if held else self._acquire())``) or to ``False``: the flag says this replica won the
        claim, and what the branch runs, only the winner runs."""
        from .declared_types import classes, type_of
        from .claims import ClaimAnalyzer

        function = self.facts.enclosing_function(node)
        made = classes(type_of(test.value, self.facts, function))
        if len(made) != 1:
            return None
        cls, where = made[0]
        analyzer = self if where is self.facts else ClaimAnalyzer.of_module(where, self.resolver)
        read = _property_reads(cls, test.attr)
        if read is None:
            return _set_only_by_claims(analyzer, cls, test.attr)
        # ``if lease.is_leader:`` on a property computed from the instance's state (``return time.monotonic() <
        # self._valid_until``): it says the claim was won when every attribute it reads is set so
        hits = [_set_only_by_claims(analyzer, cls, attribute) for attribute in sorted(read)]
        return hits[0] if hits and all(hit is not None for hit in hits) else None

    def _tested_claim(self, test: ast.AST, node: ast.AST) -> Optional[ClaimHit]:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            # true only when every part is: a part that reads the answer (as itself, or as ``is not None``)
            for part in test.values:
                if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.IsNot) \
                        and isinstance(part.comparators[0], ast.Constant) and part.comparators[0].value is None:
                    part = part.left
                if isinstance(part, (ast.Name, ast.Attribute, ast.Call, ast.Await, ast.NamedExpr)):
                    hit = self._tested_claim(part, node)
                    if hit is not None:
                        return hit
            return None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            # ``if lease.held or lease.try_acquire():`` is true when one part is: each part must be the claim's
            # answer, or the state of the object that claims (it holds what an earlier pass of the loop won)
            hits = [self._tested_claim(part, node) for part in test.values]
            claimers = {_receiver_text(hit.node) for hit in hits if hit is not None} - {""}
            if any(hit is not None for hit in hits) and all(
                    hit is not None or _receiver_text(part) in claimers for part, hit in zip(test.values, hits)):
                return next(hit for hit in hits if hit is not None)
            return None
        if isinstance(test, ast.Await):
            test = test.value
        if isinstance(test, ast.NamedExpr):
            test = test.value
        root = test
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name):
            scope = self.facts.enclosing_function(node) or self.facts.tree
            # ``self.is_leader`` is one attribute of the instance, not every name written on ``self``
            held = plain_name(test) if root.id in ("self", "cls") and isinstance(test, ast.Attribute) else root.id
            hit = self.bound_claim(scope, held or root.id, before=test)
            if hit is not None and hit.read_by(root):
                return hit
        if isinstance(test, ast.Attribute) and isinstance(root, ast.Name) and root.id not in ("self", "cls"):
            hit = self._flag_set_by_claims(test, node)
            if hit is not None:
                return hit
        hit = self.claim_in(test)
        if hit is not None and hit.kind == HELPER_GUARD and hit.node is test:
            # ``if lease.try_acquire():`` on a helper that leads with its claim: what it hands back, tested here,
            # is that claim's answer (it returns before, or without, saying yes when the claim fails)
            return hit
        return hit if hit is not None and hit.kind in NEEDS_TEST else None


def _set_only_by_claims(analyzer, cls: ast.ClassDef, attr: str) -> Optional[ClaimHit]:
    """The claim whose answer every value the class gives ``self.<attr>`` is, or None: a claim's result, a value
    chosen only when one was won (``deadline if held else 0.0``, ``held`` a claim's answer), or a false constant
    (not yet won, or given up)."""
    hits = []
    for value in _flag_assignments(cls, attr):
        inner = value.value if isinstance(value, ast.Await) else value
        if isinstance(inner, ast.Constant) and not inner.value:
            continue  # (given up, or not yet won)
        if isinstance(inner, ast.IfExp) and isinstance(inner.orelse, ast.Constant) and not inner.orelse.value:
            hit = analyzer._tested_claim(inner.test, inner)
        else:
            hit = analyzer.claim_in(value)
        if hit is None:
            return None
        hits.append(hit)
    return hits[0] if hits else None


def _property_reads(cls: ast.ClassDef, attr: str) -> Optional[Set[str]]:
    """The attributes of ``self`` the class's property ``attr`` reads, when every ``return`` of it reads one;
    None when ``attr`` is no such property (a plain attribute)."""
    method = next((s for s in cls.body if isinstance(s, _FUNCTION_TYPES) and s.name == attr
                   and any(isinstance(d, ast.Name) and d.id == "property" for d in s.decorator_list)), None)
    if method is None:
        return None
    own = method.args.args[0].arg if method.args.args else "self"
    read: Set[str] = set()
    for node in walk_no_nested_functions(method):
        if isinstance(node, ast.Return):
            found = {n.attr for n in walk(node.value) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == own} if node.value is not None else set()
            if not found:
                return set()
            read |= found
    return read


def _flag_assignments(cls: ast.ClassDef, attr: str) -> List[ast.AST]:
    """The values the class assigns to ``self.<attr>`` (from the class's table of attribute writes)."""
    from .declared_types import attribute_writes

    return [node.value for node in attribute_writes(cls).get(attr, ())
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
            and any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]


def _receiver_text(node: ast.AST) -> str:
    """``lease`` for ``lease.held`` and ``lease.try_acquire()``: the object a test asks, as spelled."""
    node = node.value if isinstance(node, ast.Await) else node
    node = node.func if isinstance(node, ast.Call) else node
    return (plain_name(node.value) or "") if isinstance(node, ast.Attribute) else ""
