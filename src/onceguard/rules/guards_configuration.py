"""OG205: the project calls ``onceguard.guards`` but never configures their backend where the service starts.

With no backend configured every claim succeeds: right on a laptop, and in a cluster it means every replica
runs every guarded job, exactly what the guard was written to stop. The guards log one warning the first
time it happens, but a warning in a log nobody reads is not a review comment. ``configure(...)`` must run in
every replica before the first tick: at import of a settings module, in an app factory, a lifespan or
start-up hook, ``AppConfig.ready``. A ``configure`` that only a test or an operator's script runs does not
count. Judged with the whole project (the command line and the editor). Under flake8 one file cannot show
that no other file configures them, so there the rule speaks only of a program that is all in its file (a
``__main__`` block, no import of a module beside it) and never configures the guards.
"""
from __future__ import annotations

import ast
import os
from typing import Iterable, Iterator, List, Optional, Tuple

from ..analysis.facts import ModuleFacts, walk
from ..knowledge import claims as known
from ..model import Diagnostic, Related
from ..project import index as project
from ..project.reach import runs
from ..project.startup import is_main_guard
from .base import Rule
from .registry import register


def _guard_uses(facts: ModuleFacts) -> Iterator[ast.AST]:
    """Calls of a guard, and decorators naming one (``@claimed_period(...)``), in source order."""
    for node in walk(facts.tree):
        if isinstance(node, ast.Call) and (facts.callee(node) or "") in known.GUARD_ENTRY_POINTS:
            yield node


def _configure_calls(facts: ModuleFacts) -> List[ast.Call]:
    return [node for node in walk(facts.tree)
            if isinstance(node, ast.Call) and facts.callee(node) == known.GUARDS_CONFIGURE]


def _counts(call: ast.Call, facts: ModuleFacts, user: ModuleFacts) -> bool:
    """A ``configure`` that runs where the guarded work runs: not in test code, and not in a command only an
    operator runs that has nothing to do with the guarded code. A program that configures the guards and then
    runs the guarded code (the module itself, or one that imports it: a worker's ``__main__``, a management
    command that starts the scheduler) configures its own run."""
    if facts.context.is_test:
        return False
    if facts.context.path == user.context.path:
        return True
    from ..project.bindings import own_module_names

    names = own_module_names(user)
    if any(value == name or value.startswith(name + ".") for value in facts.imports.aliases.values() for name in names):
        return True
    return not runs(call, facts).operator


def _configured(facts: ModuleFacts) -> Tuple[bool, Optional[Related]]:
    """(whether some replica-wide code configures the guards, a configure that does not count, to show)."""
    ignored: Optional[Related] = None
    candidates = [(facts, call) for call in _configure_calls(facts)]
    root = project.roots_for(facts)
    for path in project.files_mentioning("configure", root):
        other = project.module_facts(path, facts.config)
        if other is None or other.context.path == facts.context.path:
            continue
        candidates.extend((other, call) for call in _configure_calls(other))
    for owner, call in candidates:
        if _counts(call, owner, facts):
            return True, None
        if ignored is None:
            why = "test code" if owner.context.is_test else "code only an operator runs"
            ignored = Related(owner.context.path, call.lineno, call.col_offset + 1,
                              f"`configure` is called here, in {why}, not where the service starts")
    return False, ignored


def _self_contained_program(facts: ModuleFacts) -> bool:
    """A program (it has a ``__main__`` block) that imports no module of its own project: what it never
    configures, nothing else configures for it."""
    if not any(isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in facts.tree.body):
        return False
    here = os.path.dirname(os.path.abspath(facts.context.path))
    for node in walk(facts.tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                return False
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if os.path.isdir(os.path.join(here, top)) or os.path.isfile(os.path.join(here, top + ".py")):
                return False
    return True


@register
class GuardsNotConfigured(Rule):
    code = "OG205"
    name = "guards-not-configured"
    summary = "the project calls onceguard.guards but never configures their backend at start-up: every claim succeeds"
    triggers = known.GUARDS_TRIGGERS
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        first = next(iter(sorted(_guard_uses(facts), key=lambda n: (n.lineno, n.col_offset))), None)
        if first is None:
            return
        if facts.context.cross_file:
            configured, ignored = _configured(facts)
        elif _self_contained_program(facts):
            configured, ignored = any(_counts(call, facts, facts) for call in _configure_calls(facts)), None
        else:
            return
        if configured:
            return
        name = (facts.callee(first) or "").rsplit(".", 1)[-1]
        yield self.finding(
            first,
            f"`{name}` claims through the guards, but no start-up code calls `onceguard.guards.configure`, so "
            "every claim succeeds and every replica runs the work.",
            "Without a backend the guards have nowhere to record a claim that other replicas can see. Call "
            "`guards.configure(redis=\"redis://...\")` (or `postgres=...`) once where every replica starts: "
            "a settings module, the app factory, a lifespan or start-up hook, `AppConfig.ready`",
            related=(ignored,) if ignored is not None else (),
        )
