"""OG203 loud-skip-log: "another replica has it" is normal, not a warning."""
from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional, Tuple

from ...project.through_helpers import through_helpers
from ...project.prefilter_words import claim_helper_words
from ...project.claims import (CLAIM_FUNCTION, CACHE_ADD, HELPER_CONTEXT, HELPER_RESULT, LOCK_ACQUIRE, SET_NX, TRY_LOCK,
                               ClaimAnalyzer, failed_lock_handlers)
from ...project.claim_syntax import failed_side, is_log_call
from ...analysis.facts import ModuleFacts, ancestors
from ...knowledge import claims as claim_data
from ...model import Diagnostic, Fix
from ..registry import register
from ..base import Rule
from ...project.reach import runs
from ...project.scheduled.discovery import _resolver, scheduled_by_all
from ...project.scheduled.jobs import _const


# ------------------------------------------------------------------------------------------------
# OG203
# ------------------------------------------------------------------------------------------------
_LOUD_CLAIM_KINDS = frozenset({CLAIM_FUNCTION, TRY_LOCK, SET_NX, LOCK_ACQUIRE, CACHE_ADD, HELPER_RESULT,
                               HELPER_CONTEXT})


def _loud_level(call: ast.Call, facts: ModuleFacts) -> Optional[str]:
    """The loud level a log call uses (``warning``...), or None."""
    if not is_log_call(call) or not isinstance(call.func, ast.Attribute):
        return None
    method = call.func.attr
    if method in claim_data.LOUD_LOG_METHODS:
        return method
    if method == "log" and call.args:
        level = call.args[0]
        name = (facts.qualify(level) or "") if isinstance(level, (ast.Name, ast.Attribute)) else ""
        if name.rsplit(".", 1)[-1] in claim_data.LOUD_LEVEL_NAMES:
            return name.rsplit(".", 1)[-1].lower()
        if isinstance(_const(level), int) and level.value >= 30:
            return "warning"
    return None


def _loud_calls(facts: ModuleFacts) -> List[Tuple[ast.Call, str]]:
    loud = []
    for method in claim_data.LOUD_LOG_METHODS | {"log"}:
        for call in facts.calls_by_name.get(method, ()):
            level = _loud_level(call, facts)
            if level is not None:
                loud.append((call, level))
    return loud


def _skips_work(test: ast.If, failed: List[ast.stmt]) -> bool:
    """The failed branch is a skip: it leaves before the work that follows (``if not got: ...; return``), or it
    is the ``else`` of an ``if`` whose body is the work.  A log after a claim's answer that guards nothing (``if
    not finish(job): log.warning(...)``, the work already done) reports a lost claim, not a skip."""
    if failed is test.orelse:
        return any(not _is_log_statement(statement) for statement in test.body)
    return any(isinstance(node, (ast.Return, ast.Continue, ast.Break, ast.Raise))
               for statement in failed for node in ast.walk(statement)) or _followed(test)


def _followed(node: ast.stmt) -> bool:
    """Statements follow ``node`` in its function before the function (or the pass of a loop) ends: work the
    claim's answer may still guard (``if self.primary: r.incr(...)`` after the branch that logs)."""
    for above in ancestors(node):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(above, field, None)
            if isinstance(block, list) and any(statement is node for statement in block):
                if block[-1] is not node:
                    return True
                break
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)):
            return False
        node = above
    return False


def _is_log_statement(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                                               and is_log_call(statement.value))


@register
class LoudSkipLog(Rule):
    code = "OG203"
    name = "loud-skip-log"
    summary = "\"another replica has it\" logged at warning or above"
    # Every finding is a loud log call written as a method call.
    triggers = claim_data.LOUD_SKIP_TRIGGERS
    skips_tests = True

    @staticmethod
    def config_triggers(config) -> tuple:
        """Claim functions named in the config may be called anything."""
        names = {name.rsplit(".", 1)[-1].encode() for name in config.claim_functions}
        return tuple((name, log) for name in sorted(names) for log in claim_data.LOUD_LOG_CALL_WORDS)

    @staticmethod
    def project_triggers(config) -> tuple:
        """A job that claims through the project's own helper names the helper, not the claim."""
        return claim_helper_words(config, claim_data.LOUD_LOG_CALL_WORDS)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if facts.context.is_test:
            return
        if not _loud_calls(facts):
            return  # asked of the module as written first: reading it through its helpers costs parses
        facts = through_helpers(facts)  # as ``scheduled_in`` reads it
        loud = _loud_calls(facts)
        if not loud:
            return
        analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
        branch_cache: Dict[int, Optional[List[ast.stmt]]] = {}
        lock_handlers: Optional[set] = None
        loud.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        for call, level in loud:
            if not self._in_failed_branch(call, facts, analyzer, branch_cache):
                if lock_handlers is None:
                    lock_handlers = {id(h) for h in failed_lock_handlers(facts, analyzer)}
                if not lock_handlers or not self._in_handler(call, lock_handlers):
                    continue
            if self._lost_only_to_an_overlap(call, facts):
                continue
            fix = None
            if isinstance(call.func, ast.Attribute) and call.func.attr in claim_data.FIXABLE_LOG_METHODS:
                fix = Fix(kind="log-level-debug", description="log the skip at debug", applicability="safe")
            yield self.finding(
                call,
                f"The skip taken when another replica holds the claim is logged at {level}: it is the "
                "normal case on every replica but one, so each run raises a false alarm.",
                "Log the skip at debug (`log.debug(...)`), or claim with `onceguard.guards` (`claim_period`, "
                "`run_exclusive`), which logs a lost claim at debug itself; keep warning and error for failures "
                "of the job itself.",
                fix,
            )

    @staticmethod
    def _lost_only_to_an_overlap(call: ast.Call, facts: ModuleFacts) -> bool:
        """The claim's code runs once per ask (a queued task, a request: on the one worker or replica handed
        it) and no replica's own scheduler runs it: its claim is lost only when two asks overlap, a fault the
        warning is right to report, not the skip every replica but one takes on every run."""
        function = facts.enclosing_function(call)
        if function is None:
            return False
        answer = runs(call, facts)
        return answer.every_replica and answer.per_ask and not scheduled_by_all(function, facts)

    @staticmethod
    def _in_failed_branch(call: ast.Call, facts: ModuleFacts, analyzer: ClaimAnalyzer,
                          cache: Dict[int, Optional[List[ast.stmt]]]) -> bool:
        child: ast.AST = call
        for above in ancestors(call):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return False
            if isinstance(above, ast.If) and child is not above.test:
                side = failed_side(above)
                if side is None or not any(child is statement for statement in side[0]):
                    child = above  # (not in the branch taken when the test is false: no claim to resolve)
                    continue
                key = id(above)
                if key not in cache:
                    found = analyzer.failed_branch(above)
                    branch = None
                    if found is not None and found[1].kind in _LOUD_CLAIM_KINDS:
                        branch = found[0]
                    cache[key] = branch
                branch = cache[key]
                if branch and any(child is statement for statement in branch) and _skips_work(above, branch):
                    return True
            child = above
        return False

    @staticmethod
    def _in_handler(call: ast.Call, handlers: set) -> bool:
        for above in ancestors(call):
            if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return False
            if id(above) in handlers:
                return True
        return False
