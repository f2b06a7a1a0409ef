"""OG608 for one value: a module-level variable that remembers the work was done, read to decide whether to do it.

``_last_digest_day = None`` at module level, and a function that declares it ``global``, tests it (``if
_last_digest_day == today: return False``), does the work and sets it (``_last_digest_day = today``): the
variable is the module's memory of having done the work.  Each worker process of each replica has its own
copy, and a restart forgets it, so every process that runs the function does the work again.  It matters when
the work leaves the process (an e-mail, a charge, a call to another service) and the function runs in request
or job code; a value that only gates the process's own upkeep (a refresh of its cache) is what it is for.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Set

from ..analysis.facts import FunctionNode, ModuleFacts, walk, walk_no_nested_functions
from ..project import process_state as state
from ..project.claims import ClaimAnalyzer
from ..project.scheduled.discovery import _resolver as claim_resolver
from ..project.summaries import summaries_for


@dataclass
class ScalarMarker:
    binding: state.Binding
    function: FunctionNode  # tests it, works, and sets it
    decision: ast.AST  # the ``if`` that reads it
    write: ast.AST  # the assignment that records the work


#: Triggers: a module-level name a function rebinds (``global``), and a test of it.
TRIGGERS = ((b"global ", b"if "),)


def scalar_markers(facts: ModuleFacts) -> Iterator[ScalarMarker]:
    """Module-level values a function rebinds around work that leaves the process and decides that work from."""
    bound = _module_scalars(facts)
    if not bound:
        return
    for function in facts.functions:
        declared = {name for node in walk_no_nested_functions(function) if isinstance(node, ast.Global)
                    for name in node.names} & bound.keys()
        for name in sorted(declared):
            marker = _marker_in(function, name, bound[name], facts)
            if marker is not None:
                yield marker


def _module_scalars(facts: ModuleFacts) -> dict:
    """name -> binding, for module-level names bound to a plain value (``None``, a number, a string, a flag):
    upper-case names are constants by convention and left out."""
    found = {}
    for statement in facts.tree.body:
        if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
            continue
        value = statement.value
        if not (isinstance(value, ast.Constant) or isinstance(value, ast.UnaryOp)
                and isinstance(value.operand, ast.Constant)):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            if isinstance(target, ast.Name) and not target.id.isupper():
                found[target.id] = state.Binding(value, statement, facts, state.MODULE, target.id)
    return found


def _marker_in(function: FunctionNode, name: str, binding: state.Binding,
               facts: ModuleFacts) -> Optional[ScalarMarker]:
    writes = [node for node in walk_no_nested_functions(function)
              if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
              and any(isinstance(t, ast.Name) and t.id == name for t in _targets(node))]
    if not writes:
        return None
    for node in walk_no_nested_functions(function):
        if not (isinstance(node, (ast.If, ast.While)) and _reads(node.test, name)):
            continue
        work = state.decided_work(node, answers_exit=True)
        if not work:
            continue
        covered = {id(part) for statement in work for part in walk(statement)}
        recorded = [write for write in writes if id(write) in covered]
        if not recorded:
            continue  # the value is set elsewhere: this test only reads it
        if _memoises(function, name, recorded, work):
            return None  # a value computed once and handed back: a cache of this process's own
        if all(isinstance(getattr(write, "value", None), ast.Constant) for write in recorded):
            return None  # a flag set once (``_fonts_registered = True``): this process's own set-up, done once
        # (a watermark is set to the time or the period it did the work for, and lets the work run again later)
        skip: Set[int] = {id(part) for write in recorded for part in walk(write)}
        # Work only the winner of a claim does is done once whatever the value says (the value is a fast path),
        # and the claim itself is how the replicas agree.
        analyzer = ClaimAnalyzer.of_module(facts, claim_resolver if facts.context.cross_file else None)
        skip.update(id(part) for statement in work for part in walk(statement)
                    if isinstance(part, ast.Call) and id(part) not in skip
                    and (analyzer.dominating_claim(part) is not None or analyzer.call_claim(part) is not None))
        if summaries_for(facts).effects_of(work, function, facts, skip=skip).process_only:
            continue  # what it gates stays in this process
        return ScalarMarker(binding, function, node, recorded[0])
    return None


def _memoises(function: FunctionNode, name: str, recorded: List[ast.AST], work: List[ast.AST]) -> bool:
    """The value is what the work computed, kept to be handed back (``return _source_key``, or set from names
    the work itself binds): memoisation, each process computing it once, not a record that work was done."""
    if any(isinstance(node, ast.Return) and node.value is not None and _reads(node.value, name)
           for node in walk_no_nested_functions(function)):
        return True
    made = {n.id for statement in work for n in walk(statement) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store) and n.id != name}
    return any(isinstance(n, ast.Name) and n.id in made for write in recorded
               for n in walk(write.value) if getattr(write, "value", None) is not None)


def _targets(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, ast.Assign):
        return [n for target in node.targets for n in walk(target)]
    return [node.target]  # type: ignore[attr-defined]


def _reads(test: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(test))

