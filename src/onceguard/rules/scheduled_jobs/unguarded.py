"""OG201 unguarded-scheduled-job and OG204 unguarded-idempotent-sweep: a job that needs a claim and has none."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ...project.through_helpers import through_helpers
from ...project.claims import HELPER_GUARD, HELPER_RESULT, SET_NX, Bindings, ClaimAnalyzer, Lead
from ...project.claim_kinds import CACHE_ADD, LOCK_ACQUIRE, OWNER_SCRIPT, QUEUED_ONCE, TRY_LOCK
from ...project import index as project
from ...analysis.facts import (PARENT, FunctionNode, ModuleFacts, ancestors, call_name, walk,
                               walk_no_nested_functions)
from ..fix_plans import JobClaim, job_claim, offer_claim
from ...knowledge import redis_clients as redis_known
from ...knowledge import schedulers as known
from ...model import Diagnostic, Related
from ...analysis.handed import handed_callable
from ...analysis.names import dotted
from ..registry import register
from ...noqa import ALL, line_codes
from ...project.registries import registering_words
from ...project.startup import imported_by_program, is_per_replica_program
from ...project.redis_clients import redis_call
from ...project.row_claims import takes_claimed_rows
from ...project.shared_takes import handed_taken_items, takes_its_items
from ...project.state_answers import answer_dropped
from ...project.summaries import Evidence, resolve, summaries_for
from ..base import Rule
from ..row_pickup.moved_rows import moves_picked_rows, picks_rows
from ...project.scheduled.discovery import Scheduled, _resolver, scheduled_in


# ------------------------------------------------------------------------------------------------
# OG201
# ------------------------------------------------------------------------------------------------
#: Why a family's jobs run in every replica: the first sentence of OG201's help.
_FAMILY_NOTES = {
    known.CRON: "Every replica's container starts its own cron, and each cron runs every line of the crontab.",
    known.HUEY: "Every huey consumer started without -n runs the periodic scheduler.",
    known.PERIODIQ: "Every periodiq process enqueues the periodic actors on its own clock.",
    known.APS3: "APScheduler 3 has no coordination between processes.",
    known.APS4: "Without a shared data store each APScheduler 4 scheduler keeps its own schedules.",
    known.FLASK_APS: "Flask-APScheduler starts a scheduler in every process that calls start().",
    known.SCHEDULE: "The schedule library runs in-process.",
    known.ARQ: "With cron(..., unique=False) every arq worker enqueues its own run.",
    known.REPEAT_EVERY: "Each process that starts the app runs its own repeat_every loop.",
    known.AIOCRON: "Each process runs aiocron's schedules on its own event loop.",
    known.ROCKETRY: "Rocketry runs in-process.",
    known.TIMER: "The timer re-arms itself in each process.",
    known.WORKER_LOOP: "Every replica runs this program, and each repeats its loop.",
    known.REGISTRY_LOOP: "Every replica runs the loop, and each calls everything registered with it.",
    known.CELERY_BEAT: "Beat is run per replica here (single-scheduler = false).",
    known.RQ_SCHEDULER: "Each replica runs its own rq-scheduler here (single-scheduler = false).",
    known.DJANGO_CELERY_BEAT: "Beat is run per replica here (single-scheduler = false).",
}

_FAMILY_ALTERNATIVES = {
    known.CRON: " Or run the command from one scheduler instead of cron in every container (a Kubernetes CronJob, "
                "a one-replica scheduler service).",
    known.HUEY: " Or run exactly one consumer with periodic tasks (start the others with -n).",
    known.PERIODIQ: " Or run exactly one periodiq process (a service of its own with one replica).",
    known.APS4: " Or give the scheduler a shared data store (SQLAlchemyDataStore) so replicas share schedules.",
    known.ARQ: " Or drop unique=False: arq's default unique=True enqueues each run once.",
    known.CELERY_BEAT: " Or run exactly one beat process.",
    known.DJANGO_CELERY_BEAT: " Or run exactly one beat process.",
    known.RQ_SCHEDULER: " Or run exactly one rqscheduler daemon.",
}

_ROW_SOURCES = frozenset({"filter", "all", "fetch", "fetchall", "scalars", "execute", "iterator", "exclude",
                          "query", "select", "where", "fetchmany"})
_ROW_WRITES = frozenset({"save", "update", "execute", "commit", "bulk_update", "executemany"})
_LONG_CALLS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                         "subprocess.Popen", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"})


def _situation(scheduled: Scheduled) -> str:
    target = scheduled.target
    function, facts = target.function, target.facts
    if function is not None and facts is not None:
        for node in walk_no_nested_functions(function):
            if isinstance(node, (ast.For, ast.AsyncFor)) and _iterates_rows(node, facts) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _ROW_WRITES
                    for b in node.body for n in walk(b)):
                return "rows"
            if isinstance(node, ast.Call) and (facts.callee(node) or "") in _LONG_CALLS:
                return "long"
    if scheduled.long_hint:
        return "long"
    if scheduled.wall_clock:
        return "period"
    return "sweep"


def _iterates_rows(loop: ast.AST, facts: ModuleFacts) -> bool:
    source = loop.iter
    if isinstance(source, ast.Name):
        origin = Bindings.of_module(facts).origin(source)
        source = origin if origin is not None else source
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _ROW_SOURCES
               for n in walk(source))


def _why(scheduled: Scheduled) -> str:
    """Why the job runs in every replica, as the help's first sentence: what the scheduler does per process."""
    family = scheduled.family
    if family in (known.ASYNCIO_TICKER, known.THREAD_TICKER):
        started = f"`{scheduled.how}`, start-up: {scheduled.detail}" if scheduled.detail else f"`{scheduled.how}`"
        return f"Every replica starts this {family} ({started})."
    if family in known.BEAT_FAMILIES and scheduled.detail and scheduled.beat_replicas:
        return f"Beat runs in each of {scheduled.beat_replicas} replicas ({scheduled.detail}), and each sends every task."
    if family in known.BEAT_FAMILIES and scheduled.detail:
        return f"Beat runs inside every Celery worker ({scheduled.detail})."
    return _FAMILY_NOTES.get(family, "")


def _suggestion(scheduled: Scheduled, claim: JobClaim) -> str:
    """The why, then the claim OG201's fix writes (the same call, period and zone), then what else works."""
    situation = _situation(scheduled)
    call = claim.call()
    imported = f"(`from onceguard.guards import {'aclaim_period' if claim.asynchronous else 'claim_period'}`)"
    begin = f"Begin the job with `{claim.statement()}` {imported}"
    if scheduled.family in (known.ASYNCIO_TICKER, known.THREAD_TICKER) and not scheduled.repeater:
        begin = f"Begin each iteration of its loop with `if not {call}: continue` {imported}"  # a return ends it
    elif scheduled.family == known.TIMER:
        begin = f"Guard the work of each run (not its re-arming) with `if {call}:` {imported}"
    if situation == "rows":
        text = (f"{begin}, and claim its rows atomically: "
                "`select_for_update(skip_locked=True)` / `with_for_update(skip_locked=True)` or "
                "`UPDATE ... WHERE id = :id AND status = 'pending'`, acting only on the rows you changed.")
    elif situation == "long":
        guard = "arun_exclusive" if claim.asynchronous else "run_exclusive"
        text = (f"{begin}; for a run that may outlast its period, hold an exclusive lease instead: "
                f"`{claim.exclusive_call()}` (`from onceguard.guards import {guard}`) runs `work(lease)` while an "
                "owner-token lease is renewed every ttl/3 and stops it when the lease is lost.")
    elif situation == "period":
        text = (f"{begin}: the claim holds for the whole period, so a late or restarted replica cannot repeat "
                f"it; to let a failed run be retried, use `{claim.call('run_once', work=True)}` instead.")
    else:
        text = f"{begin}: the first replica to ask in a period runs it, every other one skips."
    why = _why(scheduled)
    text = f"{why} {text}" if why else text
    if scheduled.family in known.BEAT_FAMILIES and scheduled.detail and scheduled.beat_replicas:
        return text + " Or run exactly one beat replica (and replace it, not roll it, on deploys)."
    if scheduled.family in known.BEAT_FAMILIES and scheduled.detail:
        return text + " Or start the workers without -B/--beat and run exactly one beat process."
    return text + _FAMILY_ALTERNATIVES.get(scheduled.family, "")


def _message(scheduled: Scheduled, name: str) -> str:
    family = scheduled.family
    if family in (known.ASYNCIO_TICKER, known.THREAD_TICKER):
        kind = "an asyncio ticker" if family == known.ASYNCIO_TICKER else "a thread ticker"
        if scheduled.repeater:
            return (f"`{name}` is the work {kind} (`{scheduled.repeater}`) repeats and does not begin with a claim, "
                    "so every replica runs it on every pass.")
        return f"`{name}` is {kind} whose loop does not begin with a claim, so every replica runs each iteration's work."
    if family == known.WORKER_LOOP:
        return (f"`{name}` is called on every pass of a loop that a long-running program repeats and does not "
                "begin with a claim, so every replica that runs the program runs it on every pass.")
    if family == known.REGISTRY_LOOP:
        return (f"`{name}` is registered with `{scheduled.how}` and called on each pass of {scheduled.detail}; it "
                "does not begin with a claim, so every replica running that loop runs it.")
    if family == known.TIMER:
        return (f"`{name}` re-arms itself with `{scheduled.how}` and does not begin with a claim, so every process "
                "that starts it runs it at every interval.")
    return (f"`{name}` is scheduled with {family} (`{scheduled.how}`) and does not begin with a claim, so every "
            "replica runs it on every tick.")


@dataclass
class _Verdict:
    scheduled: Scheduled
    function: FunctionNode
    kind: str  # "job" (OG201), "sweep" (OG204)
    name: str
    evidence: Optional[ast.AST] = None  # the idempotent statement a sweep runs
    #: The call that acts outside the process (the reason a claim is needed), and its file.
    effect: Optional[Evidence] = None


def _effect_place(verdict: _Verdict) -> List[Related]:
    """The call that makes the job more than per-process work, so a reader can judge the finding."""
    if verdict.effect is None:
        return []
    call, where = verdict.effect.call, verdict.effect.path
    shown = dotted(call.func) if isinstance(call, ast.Call) else ""
    shown = f"`{shown}(...)`" if shown else "this call"
    what = "acts outside the process" if verdict.effect.plain else "is not known to stay inside the process"
    return [Related(where, call.lineno, call.col_offset + 1, f"{shown} {what}")]


def _noqa_at_def(function: FunctionNode, facts: ModuleFacts, code: str) -> bool:
    """``# noqa: OG201`` on the job's ``def`` or decorator lines in its own file suppresses a finding reported
    at a registration elsewhere: the def is where the claim goes, so it is where the author answers."""
    lines = [function.lineno] + [d.lineno for d in function.decorator_list]
    for number in lines:
        if 0 < number <= len(facts.lines):
            codes = line_codes(facts.lines[number - 1])
            if codes is not None and (codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)):
                return True
    return False


def _only_claims(calls, facts: ModuleFacts, resolver) -> bool:
    """Every call that acts outside the process is a claim's own step (``SET NX``, a renewal only the holder's
    token passes): the pass contests or keeps a claim, and what the winner does is gated where it is done."""
    for call in calls:
        top = next((above for above in ancestors(call) if isinstance(above, ast.Module)), None)
        if top is None:
            return False
        where = facts if top is facts.tree else None
        if where is None:
            path = project.path_of_tree(top)
            where = project.module_facts(path, facts.config) if path else None
        if where is None or where.tree is not top \
                or ClaimAnalyzer.of_module(where, resolver).call_claim(call) not in _CLAIM_STEPS:
            return False
    return True


#: The kinds of one call that contest or keep a claim.  (An enqueue under a job id the queue keeps once is both the
#: claim and the hand-over: the one job it leaves queued runs on one worker.)
_CLAIM_STEPS = frozenset({SET_NX, OWNER_SCRIPT, TRY_LOCK, CACHE_ADD, LOCK_ACQUIRE, QUEUED_ONCE})


def _skipped_calls(function: FunctionNode, scheduled: Scheduled) -> set:
    """The calls of the loop machinery itself (a ticker's sleep, a timer re-arming): not the job's work."""
    if scheduled.skip is None:
        return set()
    skipped = set()
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.stmt) and scheduled.skip(node):
            skipped.update(id(n) for n in walk(node) if isinstance(n, ast.Call))
    return skipped


#: Claims that a ``finally:`` can hand back (a lock manager's acquire/release, a Redis key deleted after).
_RELEASABLE_CLAIMS = frozenset({HELPER_RESULT, HELPER_GUARD, SET_NX})


def _released_after_work(function: FunctionNode) -> bool:
    """A ``finally:`` that calls a method of an object the function called another method of before it:
    ``lock.acquire_lock(...)`` ... ``finally: lock.release_lock(...)``."""
    earlier: Dict[str, set] = {}
    for node in walk_no_nested_functions(function):
        if isinstance(node, ast.Try) and node.finalbody:
            for statement in node.finalbody:
                for call in walk(statement):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                        receiver = dotted(call.func.value)
                        methods = earlier.get(receiver or "", set())
                        if receiver and methods - {call.func.attr}:
                            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = dotted(node.func.value)
            if receiver:
                earlier.setdefault(receiver, set()).add(node.func.attr)
    return False


def _verdicts(facts: ModuleFacts) -> List[_Verdict]:
    facts = through_helpers(facts)

    def build(_facts: ModuleFacts) -> List[_Verdict]:
        found: List[_Verdict] = []
        if facts.context.is_test:
            return found
        reported = set()
        resolver = _resolver if facts.context.cross_file else None
        summaries = summaries_for(facts)
        for scheduled in scheduled_in(facts):
            target = scheduled.target
            if not scheduled.periodic or scheduled.coordinated or target.claimed or scheduled.gated:
                continue
            function = target.function
            # A def here is reported once at the def; a def elsewhere at each registration.
            key = (id(scheduled.registration), id(function)) if target.foreign else id(function)
            if function is None or target.facts is None or key in reported:
                continue
            if scheduled.family == known.WORKER_LOOP and takes_claimed_rows(scheduled.registration, facts,
                                                                            picks_rows):
                # The pass hands it a row it took: a consumer's work on that row, not a job every replica repeats
                # (each takes other rows; rows picked without a claim are OG302's, at the pickup).
                continue
            if scheduled.family == known.WORKER_LOOP and handed_taken_items(scheduled.registration, facts):
                continue  # the pass works on what it took out of a shared store in one step: a consumer's work
            analyzer = ClaimAnalyzer.of_module(target.facts, resolver)
            analyzer.by_name = bool(resolver)
            lead = analyzer.lead(function, skip=scheduled.skip)
            if lead.claimed and lead.kind in _RELEASABLE_CLAIMS and not scheduled.wall_clock \
                    and _released_after_work(function) \
                    and not _moves_rows(function, target.facts, _handed_work(scheduled, function, facts)):
                # Taken and given back around the work: it stops two runs overlapping, but a replica whose
                # interval fires after the release runs the same period again (unless the work marks what it
                # did in the rows it picks: then the next run finds nothing left).
                lead = Lead(False, None, function)
            if lead.claimed or _hands_claimed_work(function, lead, analyzer):
                continue
            if lead.first_work is None:
                # Nothing before the end reads as work to the claim scan (``sent = send_due()``, assignments are
                # read as set-up): whether the job acts is the effects' question, asked of the whole body.
                lead = Lead(False, None, function)
            if lead.first_work is not function and analyzer.guarded_later(function) is not None:
                continue  # the claim comes after reading config or metrics, or in a helper called first
            effects = summaries.effects(function, target.facts, skip=_skipped_calls(function, scheduled),
                                        self_class=target.self_class)
            reported.add(key)
            if effects.drain is not None:
                continue  # flushes what this process buffered: every replica must run it
            if takes_its_items(function, target.facts):
                continue  # takes its items out of a shared store in one step: each replica works on others
            if scheduled.value_kept and not (effects.first_other is not None and effects.first_other.plain) \
                    and not any(answer_dropped(call) for call in effects.other):
                continue  # a value the pass computes: nothing it does is seen acting, or called for its effect
            if effects.other and _only_claims(effects.other, target.facts, resolver):
                continue  # it only takes or keeps a claim (an election every replica takes part in): no work
            if effects.other:
                kind = "job"
            elif effects.idempotent:
                kind = "sweep"
            else:
                continue  # touches only the process itself: per-replica by design
            if target.foreign and _noqa_at_def(function, target.facts, "OG201" if kind == "job" else "OG204"):
                continue
            name = target.label or function.name
            found.append(_Verdict(scheduled, function, kind, name, effects.idempotent[0] if effects.idempotent else None,
                                  effects.first_other))
        return found

    return facts.cached("scheduled-jobs:verdicts", build)


def _moves_rows(function: FunctionNode, facts: ModuleFacts,
                handed: Sequence[Tuple[FunctionNode, ModuleFacts]] = ()) -> bool:
    """The job, or a project function it calls (``sweep()``, ``self._pay_due()``, ``runner.sweep()`` on an
    instance of a class of another module) or is handed to run, marks what it did in the rows it picks
    (:func:`moves_picked_rows`), or takes each member it walks out of the shared collection it walks
    (:func:`_drains_walked_members`)."""
    if moves_picked_rows(function, facts) or _drains_walked_members(function, facts):
        return True
    if any(moves_picked_rows(work, where) for work, where in handed):
        return True
    seen, level = {id(function), *(id(work) for work, _ in handed)}, [(function, facts), *handed]
    for _ in range(_WORK_DEPTH):
        following = []
        for caller, caller_facts in level:
            for callee, where in _callees(caller, caller_facts):
                if id(callee) not in seen:
                    seen.add(id(callee))
                    following.append((callee, where))
        if any(moves_picked_rows(callee, where) for callee, where in following):
            return True
        level = following
    return False


def _handed_work(scheduled: Scheduled, job: FunctionNode, facts: ModuleFacts) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """The project functions the registration hands the job to run besides the job itself (``.do(run_leased,
    "digest", ttl, send_digests)``: ``run_leased`` calls what it is handed, directly or through a helper)."""
    call = scheduled.call
    if not isinstance(call, ast.Call):
        return []
    found: List[Tuple[FunctionNode, ModuleFacts]] = []
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if not isinstance(value, (ast.Name, ast.Attribute)):
            continue
        probe = ast.copy_location(ast.Call(func=value, args=[], keywords=[]), value)
        setattr(probe, PARENT, call)  # (asked where the registration names it)
        for work, where in resolve(probe, facts, facts.enclosing_function(call), by_name=False):
            if work is not job and all(work is not seen for seen, _ in found):
                found.append((work, where))
    return found


#: How many calls deep the work of a released lease's job is read for the rows it moves (``service.run()``
#: handing on to a function of its module).
_WORK_DEPTH = 2


def _drains_walked_members(function: FunctionNode, facts: ModuleFacts) -> bool:
    """``for group in r.smembers(PENDING): ... r.srem(PENDING, group)`` (here or in a function of the module the
    loop calls): what a run has done leaves the Redis collection the runs walk, so a later run finds nothing
    left of it."""
    walked = set()
    for node in walk_no_nested_functions(function):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            read = node.iter.value if isinstance(node.iter, ast.Await) else node.iter
            if isinstance(read, ast.Call) and call_name(read) in redis_known.READ_ALL_COMMANDS and read.args \
                    and redis_call(read, facts) is not None:
                walked.add(ast.dump(read.args[0]))
    if not walked:
        return False
    # (the names the removals spell are read in this module: its own functions only)
    own = [callee for callee, callee_facts in _callees(function, facts) if callee_facts is facts]
    for scope in [function, *own]:
        for node in walk_no_nested_functions(scope):
            if isinstance(node, ast.Call) and call_name(node) in redis_known.MEMBER_REMOVALS and node.args \
                    and ast.dump(node.args[0]) in walked:
                return True
    return False


def _callees(function: FunctionNode, facts: ModuleFacts) -> List[Tuple[FunctionNode, ModuleFacts]]:
    """The project functions ``function`` calls: of its module by name, methods of its class on ``self``, and
    (command line) functions of other modules and methods of the instances it makes (``Sweeper(...)
    .sweep()``); a method is not guessed by its name alone."""
    found: List[Tuple[FunctionNode, ModuleFacts]] = []
    for node in walk_no_nested_functions(function):
        if not isinstance(node, ast.Call):
            continue
        for callee, callee_facts in resolve(node, facts, function, by_name=False):
            if callee is not function and all(callee is not seen for seen, _ in found):
                found.append((callee, callee_facts))
    return found


def _hands_claimed_work(function: FunctionNode, lead: Lead, analyzer: ClaimAnalyzer) -> bool:
    """The job's first work hands a project function to a runner (``threads.deferToThread(fees.charge)``,
    ``asyncio.to_thread(sweep)``): the job's work is that function's, and a claim leading it claims the run."""
    first = lead.first_work
    if first is None or first is function:
        return False
    # up to the first work: ``d = deferToThread(charge)`` reads as set-up, ``d.addCallbacks(...)`` as the work
    leading = []
    for statement in function.body:
        leading.append(statement)
        if statement is first or any(node is first for node in walk(statement)):
            break
    for node in (n for statement in leading for n in [statement, *walk(statement)]):
        if not isinstance(node, ast.Call):
            continue
        handed = handed_callable(node, analyzer.facts)
        if not isinstance(handed, (ast.Name, ast.Attribute)):
            continue
        target = analyzer.helper_of(ast.copy_location(ast.Call(func=handed, args=[], keywords=[]), node))
        if target is not None and target[0] is not function and target[1].lead(target[0]).claimed:
            return True
    return False


def _report(rule: Rule, verdict: _Verdict, message: str, suggestion: str,
            evidence: Sequence[Related] = ()) -> Diagnostic:
    scheduled, function = verdict.scheduled, verdict.function
    target = scheduled.target
    if target.foreign:
        # Reported at the registration; the verdict is the definition's, in the other file.
        defined = Related(target.facts.context.path, function.lineno, function.col_offset + 1,
                          f"`{function.name}` is defined here, without a claim")
        return rule.finding(scheduled.registration, message, suggestion,
                            related=[*scheduled.related, defined, *evidence])
    return rule.at_def(function, message, suggestion, related=[*scheduled.related, *evidence])


@register
class UnguardedScheduledJob(Rule):
    code = "OG201"
    name = "unguarded-scheduled-job"
    summary = "a scheduled function whose first statement is not a claim runs once per replica"
    # A daemon object or a ticker started here may be defined in another module, so starting it is trigger
    # enough: the loop and its sleep are read where they are defined (``async with Daemon(...)`` alone is
    # not yet a trigger: every async session scope would be parsed).  arq is flagged only with unique=False.
    triggers = (
        b"add_job", b"scheduled_job", b"add_schedule", b".task(", b"every(", b"periodic_task",
        (b"cron", b"unique"), b"aiocron", b".cron(", b"repeat_", b"Timer", b"LoopingCall", b"looping_call",
        b"create_task", b"ensure_future", b"start_soon", b"Thread(", b".add_task(", b".add_background_task(",
        (b"spawn", b"gevent"), (b"spawn", b"eventlet"),
        b".start()", b"enter_async_context", b"enter_context",
        b"beat_schedule", b"BEAT_SCHEDULE", b"PeriodicTask", b"interval=", b"periodic=",
        # a program's own loop: ``while True:`` with a sleep (or an Event's timed wait), run from ``__main__``
        (b"__main__", b"while ", b"sleep"), (b"__main__", b"while ", b".wait("),
        # or a Django management command's (``manage.py <name>`` deployed as a process)
        (b"BaseCommand", b"while ", b"sleep"), (b"BaseCommand", b"while ", b".wait("),
        # or a command-line command's (``@app.cli.command("sync")`` run as ``flask --app shop sync``)
        (b".command(", b"while ", b"sleep"), (b".command(", b"while ", b".wait("),
    )
    skips_tests = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module that only decorates its jobs with the project's own registering decorator."""
        return registering_words(config)

    @staticmethod
    def project_files(config, path: str) -> bool:
        """A program the deployment runs in every replica, handing its work to a loop of another module
        (``await run_hourly(submitter.run, 5)``), a module such a program imports (its loop may be written there),
        or a management command a crontab line runs in every replica: its own text need spell no loop or
        scheduler."""
        from ...project.deployment import cron_runs_command_file

        return is_per_replica_program(config, path) or cron_runs_command_file(config, path) \
            or imported_by_program(config, path)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for verdict in _verdicts(facts):
            if verdict.kind != "job":
                continue
            claim = job_claim(verdict.scheduled, verdict.function, verdict.name, facts)
            yield offer_claim(_report(self, verdict, _message(verdict.scheduled, verdict.name),
                                      _suggestion(verdict.scheduled, claim), _effect_place(verdict)),
                              verdict, facts)


#: OG204 is off unless selected by its full code: duplicate sweeps cost load, not correctness.
_SWEEP_CODE = "OG204"


@register
class UnguardedIdempotentSweep(Rule):
    code = _SWEEP_CODE
    name = "unguarded-idempotent-sweep"
    summary = ("a scheduled sweep whose only effects are idempotent set-based statements runs in every replica "
               "(duplicate work and lock contention; off by default)")
    triggers = UnguardedScheduledJob.triggers
    project_triggers = staticmethod(registering_words)
    project_files = staticmethod(is_per_replica_program)
    skips_tests = True

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        config = facts.config
        if not any(code == _SWEEP_CODE for code in config.select + config.extend_select):
            return
        for verdict in _verdicts(facts):
            if verdict.kind != "sweep":
                continue
            statement = ""
            if verdict.evidence is not None:
                statement = f" (`{dotted(verdict.evidence.func) or 'execute'}(...)`, line {verdict.evidence.lineno})"
            message = (f"`{verdict.name}` is scheduled with {verdict.scheduled.family} (`{verdict.scheduled.how}`) "
                       "without a claim, so every replica repeats its idempotent sweep on every tick.")
            claim = job_claim(verdict.scheduled, verdict.function, verdict.name, facts)
            suggestion = (f"It runs only idempotent set-based statements{statement}, so the duplicates cost work "
                          f"and lock contention but give the same result. If that load matters, begin the job with "
                          f"`{claim.statement()}` (`from onceguard.guards import "
                          f"{'aclaim_period' if claim.asynchronous else 'claim_period'}`), or keep it per-replica "
                          "and leave this rule off.")
            yield _report(self, verdict, message, suggestion)
