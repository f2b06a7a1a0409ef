"""OG302: rows picked by status and updated without claiming them."""

import ast
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, ancestors
from ...analysis.names import dotted
from ...project.through_helpers import through_helpers
from ...project.unasked_tasks import holding_function, never_asked
from ...knowledge import orm
from ...model import Diagnostic
from ..registry import register
from ...analysis.sql import parse_statements
from ..base import Rule
from ..data_races import (
    _operator_only, _session_matches, _single_process, _sql_by_function, django_queryset, function_nodes,
    later, names_in, unwrap)
from ..redis_leases import result_tested, short
from .selection import (
    MODEL_CLASS, Pickup, _django_status_filter, _loop_rows, _only_writes_rows, _pickups, _reread_locked, _row_walk,
    _sa_status_condition, _sa_update, _sql_result_checked, _sql_status_column, holds_row, may_pick_by_state,
    moves_whatever_its_state, sql_pickup)
from .handed_rows import handed_row_write
from .taken_rows import TakenRow, taken_by_caller
from ..data_races.changes import holds_session, session_committed_by_block
from ...project.prefilter_words import loader_words, sql_constant_words
from .moved_rows import (aggregates_only, calls_taking_rows, core_update_behind, hands_back, helper_writes,
                         picked_and_written_after)
from .callers import _locked_before, _resolver, runs_claimed
from ...project.claims import ClaimAnalyzer, won_claim_reaches
from ...project.held_locks import held_by_lock_helper
from ...project.queue_handoffs import queue_put
from ...project.scheduled.discovery import scheduled_once
from ...project.summaries import summaries_for
from ...model import Related
from .check_then_act import (
    StateRead, StateWrite, _SENT_WORDS, _effects, _function_locks_rows, _guard_matches_write, _persist_call,
    _after_an_insert_claim, _insert_claims, _reaches, _region, _root, _rows_source, _source_locks, _state_reads, _state_writes, _words)
from .consumes import _deleting_call, _matching_guard, _returns_success, serves_delete_requests
from .store_markers import STORE_MARKER_TRIGGERS, checks_then_sets


#: Prefilter words for a state test followed by a write of that state: the field word, then how the write is
#: persisted (``save(``, a commit, a store method ``.update_x(``/``.save_x(``, a flag set to True, a ``begin()``
#: block that commits on exit).
_STATE_TRIGGER_WORDS = (b"status", b"state", b"sent", b"notified", b"alerted", b"mailed", b"reminded", b"processed",
                        b"published", b"delivered", b"redeemed", b"consumed", b"used")
_STATE_WRITE_WORDS = (b"save(", b"commit(", b".update_", b".save_", b".put_", b".store_", b"= True", b".begin()")
# A state field is an attribute or a key named by the word, alone or joined with ``_`` (``.used``,
# ``.is_used``, ``.used_at``, ``"notified_at"``): the word after a dot, an underscore or a quote, not in
# prose or in ``unused``.
CHECK_THEN_ACT_TRIGGERS = tuple((b"if ", joiner + word, write) for word in _STATE_TRIGGER_WORDS
                                for joiner in (b".", b"_", b'"', b"'") for write in _STATE_WRITE_WORDS)
#: Prefilter words for rows picked elsewhere and moved out of their state here: a state field set, and how
#: it is persisted.
SET_STATE_TRIGGERS = tuple((b"." + word + b" = ", write) for word in _STATE_TRIGGER_WORDS for write in _STATE_WRITE_WORDS)
#: Prefilter: an equality test, a return, and the word of the consuming call (also under an alias).
CONSUME_TRIGGERS = tuple((b"==", b"return", word) for word in (b"delete", b"remove", b"consume", b"invalidate"))


def _read_again_by_key(node: ast.AST, row_names) -> Optional[Tuple[str, str]]:
    """(name, session) for ``row = session.get(Model, picked.id)``: a picked row read again through a session by its
    key, to be changed there -- the same row."""
    value = unwrap(node.value) if isinstance(node, ast.Assign) else None
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and len(value.args) == 2 and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None
    session = dotted(value.func.value)
    return (node.targets[0].id, session) if session and row_names(value.args[1]) else None


def _written_by_winner(write: ast.AST, function: FunctionNode, facts: ModuleFacts) -> bool:
    """The rows are written here only past a claim this replica won (``if not await claim(session, doc.id):
    continue`` before the work on each row): a row another replica claimed is skipped, not written twice."""
    return any(above is function for above in ancestors(write)) and won_claim_reaches(write, facts)


@register
class UnclaimedRowPickup(Rule):
    code = "OG302"
    name = "unclaimed-row-pickup"
    summary = "a worker selects rows by status and updates them without claiming them first"
    triggers = (orm.ROW_PICKUP_TRIGGERS + CHECK_THEN_ACT_TRIGGERS + SET_STATE_TRIGGERS + CONSUME_TRIGGERS
                + STORE_MARKER_TRIGGERS)
    skips_tests = True
    skips_migration_code = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module that loops over what a loader of the project picked by state, handing the rows on, or that
        sends a query a module of constants keeps."""
        return loader_words(config) + sql_constant_words(config)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if _single_process(facts):
            return
        facts = through_helpers(facts)  # a call behind a helper that only forwards it is that call
        for finding in self._all(facts):
            # (asked only of a finding: it reads callers, and other files for the task's name)
            if not _operator_only(finding.line, facts) and not self._never_asked(finding.line, facts):
                yield finding

    @staticmethod
    def _never_asked(line: int, facts: ModuleFacts) -> bool:
        """The pickup is in a queued task nothing in the project enqueues or schedules: no run of it races."""
        function = holding_function(line, facts)
        while function is not None and facts.enclosing_function(function) is not None:
            function = facts.enclosing_function(function)
        return function is not None and never_asked(function, facts)

    def _all(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        reported: Set[int] = set()
        reported_nodes: Set[int] = set()
        for function in facts.functions:
            for pickup in _pickups(function, facts):
                write = self._orm_write(pickup, function, facts) or handed_row_write(pickup, function, facts)
                if write is None and facts.context.cross_file:
                    taken = taken_by_caller(pickup, function, facts)
                    if taken is not None and pickup.at.lineno not in reported \
                            and not self._taken_claimed(taken, pickup.node, function, facts):
                        reported.add(pickup.at.lineno)
                        yield self._report(pickup, taken.write, taken)
                    continue
                if write is None or self._orm_claimed(pickup, function, facts):
                    continue
                if pickup.at.lineno in reported or any(id(n) in reported_nodes for n in (pickup.at, *ancestors(pickup.at))) \
                        or _only_writes_rows(pickup, function, facts) or runs_claimed(function, facts) \
                        or won_claim_reaches(pickup.node, facts) or _written_by_winner(write, function, facts) \
                        or held_by_lock_helper(pickup.node, facts):
                    continue  # (``(await session.scalars(...)).all()``: the awaited call and the chain are one pickup)
                reported.add(pickup.at.lineno)
                reported_nodes.add(id(pickup.at))
                yield self._report(pickup, write)
        yield from self._raw_sql(facts)
        for finding in [*self._check_then_act(facts), *self._consumes(facts), *self._store_markers(facts)]:
            if finding.line not in reported:
                reported.add(finding.line)
                yield finding

    # a marker in a shared store tested, then set around the work -------------------------------------------
    def _store_markers(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        analyzer = None
        for found in checks_then_sets(facts):
            write, read = found.write.call, found.read.call
            if analyzer is None:
                analyzer = ClaimAnalyzer.of_module(facts, _resolver if facts.context.cross_file else None)
            if analyzer.dominating_claim(found.guard) is not None:
                continue  # tested and set only by the replica that won the claim: one at a time
            yield self.finding(
                write,
                f"`{short(write, 50)}` sets the marker tested on line {read.lineno} around "
                f"`{short(found.effect, 40)}`, so two replicas both see no marker and both do the work.",
                f"Testing the marker (`{short(read, 40)}`) and setting it are two steps with the work between, so "
                "two replicas (or overlapping runs) both pass the test, both do the work and both set it. "
                "Claim the marker atomically before the work and act only when the claim succeeded: "
                "`if cache.add(key, True, timeout):` (Django cache), `if r.set(key, token, nx=True, ex=ttl):` "
                "(redis-py); on failure of the work, delete the marker so a retry can claim it.",
            )

    # single-use consume ------------------------------------------------------------------------------------
    def _consumes(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for guard in facts.ifs:
            for index, statement in enumerate(guard.body):
                if not (isinstance(statement, ast.Expr) and isinstance(unwrap(statement.value), ast.Call)):
                    continue
                call = unwrap(statement.value)
                if not _returns_success(guard.body[index + 1:]) or _matching_guard(statement) is not guard:
                    continue
                function = facts.enclosing_function(guard)
                if function is None or serves_delete_requests(function) or not _deleting_call(call, facts):
                    continue
                if (_function_locks_rows(function, facts, guard.test) or _locked_before(guard.test, function, facts)
                        or runs_claimed(function, facts)):
                    continue
                yield self.finding(
                    call,
                    f"`{short(call, 50)}` consumes a single-use entry without checking that it deleted a row, so "
                    f"two requests with the same code (on two replicas) both succeed.",
                    "Success is returned without reading how many rows the delete removed: both requests match the "
                    "entry, both delete it, and both succeed. Make the delete the check: run it as one conditional statement and succeed only when it "
                    "removed a row (`DELETE ... WHERE id = :id` with `rowcount == 1`, Django "
                    "`filter(pk=...).delete()[0] == 1`), or lock the row (`SELECT ... FOR UPDATE`) before comparing.",
                )

    # check-then-act on one row ----------------------------------------------------------------------------
    def _check_then_act(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        # One finding per row field per function: the write followed by the work it guards, when there is one.
        best: dict = {}
        for guard in facts.ifs:
            reads = _state_reads(guard.test)
            if not reads:
                continue
            function = facts.enclosing_function(guard)
            if function is None:
                continue
            region = _region(guard, function, facts)
            for read in reads:
                key = (id(function), read.path, read.field)
                if key in best and best[key][3]:
                    continue
                for write in _state_writes(read, region, function, facts):
                    if not _guard_matches_write(read, guard, write):
                        continue
                    claims = _insert_claims(function, facts)
                    effects = [e for e in _effects(region, write, read.path, facts)
                               if not _after_an_insert_claim(e, guard, claims) and _repeats_harm(e, function, facts)]
                    stored = _persist_call(write, read.path, region) or write.node
                    # (the work done after the write, also before its commit: one transaction does both, and two
                    # transactions that read the same state both do)
                    after = [e for e in effects if _reaches(write.node, e) and (later(e, stored) or (
                        later(e, write.node) and not _on_the_row(e, read.path)))]
                    before = [e for e in effects if not later(e, write.node)]
                    if not after and not (_words(read.field) & _SENT_WORDS or _rows_source(
                            _root(read.path), guard, function, facts) is not None):
                        # Work done before a status is written (``if status != EXITED: reap(); status = EXITED``)
                        # is the job finishing; only a send-once flag or a row from a shared selection makes
                        # acting first a duplicate.
                        before = []
                    if not (after or before):
                        continue
                    if key not in best or (after and not best[key][3]):
                        best[key] = (guard, read, write, after, before, function)
                    if after:
                        break
        for guard, read, write, after, before, function in best.values():
            if (_function_locks_rows(function, facts, guard.test) or _locked_before(guard.test, function, facts)
                    or runs_claimed(function, facts)):
                continue
            source = _rows_source(_root(read.path), guard, function, facts)
            if source is not None and _source_locks(source, facts):
                continue
            yield self._report_check_then_act(read, write, after or before, bool(after), source)

    def _report_check_then_act(self, read: StateRead, write: StateWrite, effects: List[ast.Call],
                               acts_after: bool, source: Optional[ast.AST]) -> Diagnostic:
        effect = effects[0]
        field = f"{read.path}.{read.field}" if isinstance(read.node, ast.Attribute) else short(read.node, 50)
        if source is not None:
            where = source.value if isinstance(source, ast.Assign) else source
            hazard = (f"The rows selected here are tested on `{field}` and acted on (`{short(effect, 40)}`) with no "
                      "claim, so two replicas both act on the same rows.")
            why = (f"Each row is tested on line {read.node.lineno}, acted on at line {effect.lineno} and marked on "
                   f"line {write.node.lineno}: two replicas running this both pass the test before either marks it.")
        elif acts_after:
            where = write.node
            hazard = (f"`{field}` is tested on line {read.node.lineno} and this write moves the row on without a "
                      "condition, so two replicas both pass the test and both do the work.")
            why = (f"Two replicas (or a retried job) both read the old state and both write the new one, then "
                   f"`{short(effect, 40)}` (line {effect.lineno}) does the work in each.")
        else:
            where = read.node
            hazard = (f"`{field}` is tested here and recorded only on line {write.node.lineno}, after "
                      f"`{short(effect, 40)}` acts, so two replicas both pass the test and both act.")
            why = (f"The work (line {effect.lineno}) runs between the test and the record, so two replicas both "
                   "pass this test before either records.")
        suggestion = (f"{why} Claim the transition before acting: a conditional update that moves `{read.field}` from the "
                      f"old value to the new one and acts only when it changed one row (Django "
                      f"`filter(pk=..., {read.field}=<old>).update({read.field}=<new>) == 1`, SQL `UPDATE ... WHERE "
                      f"id = ... AND {read.field} = <old>` with the row count read), or read the row with "
                      f"`select_for_update()` inside the transaction and test it there.")
        return self.finding(where, hazard, suggestion)

    # ORM ----------------------------------------------------------------------------------------------------
    def _orm_write(self, pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> Optional[ast.AST]:
        loops, rows = _row_walk(pickup, function, facts)
        if not rows:
            return None

        def row_names(node: ast.AST) -> Set[str]:
            return {name for name in names_in(node) if name in rows and holds_row(name, node, pickup, loops)}

        changed = None
        #: a picked row read again by its key (``row = session.get(Payout, payout.id)``) -> the session it came from
        again: Dict[str, str] = {}
        changed_through = None
        for node in function_nodes(function, facts):
            if not (hasattr(node, "lineno") and later(node, pickup.node)):
                continue
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                read_again = _read_again_by_key(node, row_names) if pickup.framework == "sqlalchemy" else None
                if read_again is not None:
                    again[read_again[0]] = read_again[1]
                    continue
                if changed is None:
                    holder = next((t.value.id for t in targets if isinstance(t, ast.Attribute)
                                   and isinstance(t.value, ast.Name) and (row_names(t.value) or t.value.id in again)),
                                  None)
                    if holder is not None:
                        changed, changed_through = node, again.get(holder)
                continue
            if pickup.framework == "sqlalchemy" and isinstance(node, ast.Call) and row_names(node) \
                    and core_update_behind(node, function, facts):
                return node  # a repository function that updates the row it is handed
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method, receiver = node.func.attr, node.func.value
            if pickup.framework == MODEL_CLASS:
                # a model class's rows are written back each by its own ``save()`` (Peewee, Tortoise)
                if method in orm.DJANGO_INSTANCE_WRITES and isinstance(receiver, ast.Name) and row_names(receiver):
                    return node
            elif pickup.framework == "django":
                if method in orm.DJANGO_INSTANCE_WRITES and isinstance(receiver, ast.Name) and row_names(receiver):
                    return node
                if method in orm.DJANGO_QUERYSET_WRITES and row_names(node) and django_queryset(node) is not None:
                    if not _django_status_filter(django_queryset(node)[1]):
                        return node
            else:
                if method in orm.SA_FLUSH and changed is not None and not node.args \
                        and holds_session(pickup.session, receiver):
                    return node  # ``uow.commit()``: a unit of work commits the session its repositories load through
                if not (_session_matches(pickup.session, receiver)
                        or (changed_through is not None and dotted(receiver) == changed_through)):
                    continue
                if method in orm.SA_FLUSH and changed is not None:
                    return node
                if method == orm.SA_DELETE and node.args and row_names(node.args[0]):
                    return node
                if method == "execute" and node.args and row_names(node.args[0]) \
                        and moves_whatever_its_state(node, facts):
                    return node
        if changed is not None and pickup.framework == "sqlalchemy" \
                and session_committed_by_block(changed_through or pickup.session, changed) is not None:
            return changed  # ``with SessionLocal.begin() as db:``: the block's end commits what changed in it
        return None

    def _orm_claimed(self, pickup: Pickup, function: FunctionNode, facts: ModuleFacts) -> bool:
        """A conditional transition whose result is checked:
        ``filter(pk=…, status=…).update(…)`` / ``update(M).where(…, M.status == …)``; or each row read again
        under a row lock before it is written (``o = M.objects.select_for_update().get(pk=o.pk)``)."""
        if _reread_locked(_loop_rows(pickup, function, facts), pickup.node, function, facts):
            return True
        for node in function_nodes(function, facts):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if pickup.framework == "django" and node.func.attr in ("update", "aupdate"):
                queryset = django_queryset(node)
                if queryset is not None and _django_status_filter(queryset[1]) and result_tested(node, facts):
                    return True
            if pickup.framework == "sqlalchemy" and node.func.attr in ("execute", "exec") and node.args:
                links = _sa_update(node.args[0], facts)
                if links is not None and _sa_status_condition(links) and result_tested(node, facts):
                    return True
        return False

    def _taken_claimed(self, taken: TakenRow, selection: ast.AST, loader: FunctionNode, facts: ModuleFacts) -> bool:
        """The row a caller took is claimed after all: by a conditional transition of the caller, or because the
        loader or the caller runs only past a claim (or a lock that makes the replicas take turns)."""
        caller, where, call = taken.caller, taken.facts, taken.pickup.node
        return self._orm_claimed(taken.pickup, caller, where) or runs_claimed(loader, facts) \
            or runs_claimed(caller, where) or won_claim_reaches(selection, facts) or won_claim_reaches(call, where) \
            or held_by_lock_helper(selection, facts) or held_by_lock_helper(call, where) \
            or _locked_before(call, caller, where)

    def _report(self, pickup: Pickup, write: ast.AST, taken: Optional[TakenRow] = None) -> Diagnostic:
        model = pickup.model.rsplit(".", 1)[-1]
        hazard = (f"`{short(pickup.at, 60)}` picks {model} rows by `{pickup.column}` without claiming them, so two "
                  "replicas both process the same rows.")
        run = (f"The statement runs at line {pickup.node.lineno} (`{short(pickup.node, 40)}`). "
               if pickup.statement is not None else "")
        if taken is not None:
            why = (f"{run}`{taken.caller.name}` takes the row and moves it on only afterwards (`{short(write, 40)}`, "
                   f"line {write.lineno}), and nothing stops another replica taking it first. ")
            related = [Related(taken.facts.context.path, write.lineno, write.col_offset + 1,
                               f"`{taken.caller.name}` takes the row here and moves it out of `{pickup.column}`")]
        else:
            why = (f"{run}The rows are updated only afterwards (`{short(write, 40)}`, line {write.lineno}), and "
                   "nothing stops another replica picking them first. ")
            related = [pickup.selected_in] if pickup.selected_in is not None else []
        field = pickup.column.split("__")[0]
        if pickup.framework == "django":
            suggestion = (f"{why}Claim the rows: inside `transaction.atomic()` select them with "
                          f"`{model}.objects.select_for_update(skip_locked=True).filter(...)`, or move each row with a "
                          f"conditional update `{model}.objects.filter(pk=row.pk, {field}=<pending>).update({field}="
                          f"<running>)` and process it only when that returns 1.")
        elif pickup.framework == MODEL_CLASS:
            suggestion = (f"{why}Claim the rows: inside the transaction that updates them, select them with a lock that "
                          f"skips rows another replica holds (Peewee `.for_update(\"FOR UPDATE SKIP LOCKED\")`, Tortoise "
                          f"`.select_for_update(skip_locked=True)`), or move each row with a conditional update of "
                          f"`{field}` and process it only when one row changed.")
        else:
            suggestion = (f"{why}Claim the rows: select them with `.with_for_update(skip_locked=True)` in the transaction "
                          f"that updates them, or move each row with `session.execute(update({model}).where("
                          f"{model}.id == row.id, {model}.{field} == <pending>).values({field}=<running>))` and "
                          f"process it only when `rowcount == 1`.")
        return self.finding(pickup.at, hazard, suggestion, related=related)

    # raw SQL ---------------------------------------------------------------------------------------------
    def _raw_sql(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for executions in _sql_by_function(facts):
            function = facts.enclosing_function(executions[0].call)
            for select in executions:
                if select.sql.statement_types != ("SelectStmt",) or aggregates_only(select):
                    continue
                picked = picked_and_written_after(select, executions, function, facts)
                where, runner = None, function
                if (picked is None and function is not None and may_pick_by_state(select)
                        and hands_back(select, function)):
                    # A loader: the rows go back to its callers, which work through them and write them.
                    picked, where, runner = self._picked_by_callers(select, function, facts)
                if picked is None:
                    continue
                table, column, writes = picked
                runner_facts = facts if where is None else where[1]
                if any(_sql_status_column(parse_statements(w.text)[0].whereClause) and _sql_result_checked(w, runner_facts)
                       for w in writes):
                    continue
                if runner is not None and (runs_claimed(runner, runner_facts) or scheduled_once(runner, runner_facts)):
                    continue  # one replica at a time picks: the run itself is claimed, as for ORM pickups
                if where is not None and _locked_before(where[2], runner, runner_facts):
                    continue  # the caller waits for a lock that serialises its runs before it loads the rows
                reached = (select.call, facts) if where is None else (where[2], runner_facts)
                if won_claim_reaches(*reached):
                    continue  # only the replica that won a claim reaches the SELECT (or the caller's call of it)
                if held_by_lock_helper(select.call, facts) or (
                        where is not None and held_by_lock_helper(where[2], runner_facts)):
                    continue  # inside a project lock section that waits for its lock: the replicas pick in turn
                write = writes[0]
                yield self.finding(
                    select.call,
                    f"The SELECT here picks `{table}` rows by `{column}` without claiming them, so two replicas both "
                    f"process the same rows.",
                    (f"The statement on line {write.call.lineno} updates" if where is None else
                     f"The caller `{runner.name}` updates") + " them only afterwards, and nothing stops "
                    f"another replica picking them first. Claim the rows: add `FOR UPDATE SKIP LOCKED` to the SELECT "
                    f"and update them in the same transaction, or claim with one statement (`UPDATE {table} SET "
                    f"{column} = 'running' WHERE id IN (SELECT id FROM {table} WHERE {column} = 'pending' LIMIT 10 FOR "
                    f"UPDATE SKIP LOCKED) RETURNING id`), or move each row with `UPDATE {table} SET … WHERE id = :id "
                    f"AND {column} = 'pending'` and act only when a row changed.",
                    related=[where[0]] if where is not None else [],
                )

    def _picked_by_callers(self, select, loader: FunctionNode, facts: ModuleFacts):
        """(pickup, (where a caller writes the rows, its module), that caller) for the first caller of a loader
        that writes the table it selected from after the call (its own SQL, or a project function it calls)."""
        for call, other, self_class in calls_taking_rows(loader, facts):
            caller = other.enclosing_function(call)
            if caller is None or other.context.is_test:
                continue
            theirs = [e for group in _sql_by_function(other) for e in group
                      if other.enclosing_function(e.call) is caller and later(e.call, call)]
            picked = sql_pickup(select, theirs + helper_writes(caller, other, call, self_class))
            if picked is not None:
                write = picked[2][0]
                how = ("hands the rows through an in-process queue to the work that updates them"
                       if queue_put(write.call) is not None else "works through the rows and updates them here")
                where = Related(other.context.path, write.call.lineno, write.call.col_offset + 1,
                                f"`{caller.name}` {how}")
                return picked, (where, other, call), caller
        return None, None, None


def _on_the_row(call: ast.AST, path: str) -> bool:
    """``order.set_expires(now)``: a method of the row read, preparing what its save writes."""
    func = getattr(call, "func", None)
    receiver = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return isinstance(receiver, ast.Name) and receiver.id == path.split(".")[0]


def _repeats_harm(call: ast.Call, function: FunctionNode, facts: ModuleFacts) -> bool:
    """The work a passed test guards does harm when two requests both pass it only when it acts outside the
    process and not idempotently: recomputing a value from the rows, re-adding an id to this process's own
    set, or writing the same constant again leaves the same result however many run it.  A call the analysis
    cannot follow, however deep (a hook a plugin registry dispatches to), is work that may be done twice."""
    return bool(summaries_for(facts, strict=True).call_effects(call, function, facts).other)

