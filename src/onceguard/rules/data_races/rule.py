"""OG301: a value read, changed in Python and written back."""
from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ...analysis.facts import FunctionNode, ModuleFacts, parent, walk_no_nested_functions
from ..fix_plans import orm_update_fix
from ...knowledge import orm
from ...model import Diagnostic
from ...project import index as project
from ...project.claims import one_runner_reaches
from ...project.once_run_jobs import once_run_job_reaches
from ...project.definitions import definition
from ...analysis.names import dotted
from ..registry import register
from .. import next_numbers
from ..base import Rule
from ..redis_leases import short
from ...project.through_helpers import through_helpers
from .stores import StoreChecks
from .keyed_stores import KeyedStoreChecks
from .sql_reads import SqlChecks
from .loads import (
    FLASK_SESSION, Loaded, _instance_bindings, chain, column_type, instance_attribute, _loader_before, _model_columns,
    _model_method,
    _operator_only, _relocked_before, _single_process, derived_from_locked_rows, django_instance_loader,
    function_nodes, later,
    module_imports_any, sa_source, unwrap)
from .flow import Flow, _first_arithmetic, _keyed, plain_name
from .writers import sole_writer
from .field_writers import written_elsewhere
from .handed_sessions import changed_for_callers, changed_rows_handed_in
from .returned_loads import locked_by_its_loader, returned_row
from ...project.held_locks import held_by_lock_helper
from .view_objects import locked_view_object
from .changes import Change, _fresh_object, _functions_writing_instances, _written_back, instance_changes


_GETTER, _SETTER = "get_", "set_"


def _accessor_write(read: ast.Call, receiver: str, name: str, function: FunctionNode,
                    facts: ModuleFacts) -> Optional[ast.Call]:
    for node in function_nodes(function, facts):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and later(node, read)
                and plain_name(node.func.value) == receiver):
            continue
        if node.func.attr == _SETTER + name and node.args:
            return node
        if any(isinstance(a, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == name for k in a.keys)
               for a in node.args):
            return node
    return None


def _module_helper(call: ast.Call, function: FunctionNode,
                   facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    """The project function a call runs, with its module's facts: a module-level ``def``, a method reached
    through a module-level instance of the module's class (``service.apply(row)``), or -- across the project
    -- a top-level ``def`` imported from another module (``ops.apply_debit(row)``, ``from ops import ...``)."""
    if isinstance(call.func, ast.Attribute):
        method = facts.module_method(call.func)
        if method is not None and method is not function and not any(
                isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in method.decorator_list):
            return method, facts
        if method is not None:
            return None
    elif isinstance(call.func, ast.Name):
        helpers = [f for f in facts.functions_by_name.get(call.func.id, ())
                   if f is not function and facts.enclosing_function(f) is None and facts.enclosing_class(f) is None]
        if helpers:
            return (helpers[0], facts) if len(helpers) == 1 else None
    else:
        return None
    return _imported_helper(call, facts)


def _imported_helper(call: ast.Call, facts: ModuleFacts) -> Optional[Tuple[FunctionNode, ModuleFacts]]:
    spelled = dotted(call.func)
    if not facts.context.cross_file or not spelled or not facts.imports.is_imported(spelled.split(".", 1)[0]):
        return None  # one file alone: what an import holds is unknown
    found = definition(facts.callee(call) or "", facts)
    if found is None or not isinstance(found[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return found[0], found[1]


#: ORMs whose models are written back with ``save()`` as Django's are, each with queries of its own: the advice
#: and the fix must be written in the instance's own library.
_SAVE_STYLE_ORMS = ("tortoise", "peewee")


def _model_library(change: Change, loaded: Optional[Loaded], function: FunctionNode, facts: ModuleFacts) -> str:
    """The ORM of the changed instance when it is one of ``_SAVE_STYLE_ORMS``, else "": the module imports it, or
    the class the instance was loaded from (``night = await ObservingNight.get_or_none(...)``, or the model a
    repository's loader returns) is defined in a module that does."""
    if loaded is not None and loaded.framework in _SAVE_STYLE_ORMS:
        return loaded.framework
    for library in _SAVE_STYLE_ORMS:
        if module_imports_any(facts, (library,)):
            return library
    if not facts.context.cross_file:
        return ""
    named = [loaded.model] if loaded is not None and loaded.model else []
    for node in walk_no_nested_functions(function):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == change.instance and later(change.statement, node)):
            head, _ = chain(node.value)
            qualified = facts.qualify(head) if isinstance(head, (ast.Name, ast.Attribute)) else None
            if qualified:
                named.append(qualified)
    for qualified in named:
        found = project.find_class(qualified, facts.config, project.search_root(facts))
        if found is not None:
            return next((library for library in _SAVE_STYLE_ORMS if module_imports_any(found[1], (library,))), "")
    return ""


def _names_a_class(node: ast.AST, facts: ModuleFacts) -> bool:
    return isinstance(node, ast.Name) and any(
        isinstance(s, ast.ClassDef) and s.name == node.id for s in facts.tree.body)


#: How a change is said in a finding, by its kind.
_CHANGED = {"arithmetic": "changed in Python", "merge": "merged in Python", "in place": "changed in place in Python",
            "advanced": "moved past the items fetched with it"}


@register
class ReadModifyWrite(StoreChecks, KeyedStoreChecks, SqlChecks, Rule):
    code = "OG301"
    name = "read-modify-write"
    summary = "a value read, changed in Python and written back, so concurrent updates are lost"
    triggers = orm.READ_MODIFY_WRITE_TRIGGERS + orm.NEXT_NUMBER_TRIGGERS
    skips_tests = True
    skips_migration_code = True

    @staticmethod
    def project_triggers(config) -> tuple:
        """A module handing a value it computed to a project def that sends ``UPDATE ... SET`` (``sql_helpers``),
        writing to Redis a value computed from what a project def read there (``stores``), or sending an UPDATE with
        a value another module keeps in memory since a SELECT (``kept_copies``)."""
        from ...project.prefilter_words import column_writer_words, kept_copy_words, row_saver_words, store_reader_words

        return column_writer_words(config) + store_reader_words(config) + row_saver_words(config) + \
            kept_copy_words(config)

    def check(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        if _single_process(facts):
            return
        facts = through_helpers(facts)  # a call behind a helper that only forwards it is that call
        seen = set()
        for finding in self._all(facts):
            place = (finding.line, finding.column)
            if place not in seen:  # one statement, one finding (a cache wrapper is also a keyed store)
                seen.add(place)
                if not _operator_only(finding.line, facts):  # (asked only of a finding: it reads callers)
                    yield finding

    def _all(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        yield from self._orm(facts)
        yield from self._committed_by_callers(facts)
        yield from self._raw_sql(facts)
        yield from self._raw_sql_through_helpers(facts)
        yield from self._kept_copies(facts)
        yield from self._core_updates(facts)
        yield from self._queryset_updates(facts)
        yield from self._model_methods(facts)
        yield from self._accessors(facts)
        yield from self._remote_dicts(facts)
        yield from self._redis(facts)
        yield from self._documents(facts)
        yield from self._whole_documents(facts)
        yield from self._keyed_stores(facts)
        yield from self._next_numbers(facts)
        yield from self._discarded_locks(facts)

    # a row lock whose result is thrown away, then a model method on an instance loaded before it ------------
    def _discarded_locks(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``Summary.objects.select_for_update().filter(pk=s.pk).first()`` as a statement: the row is locked,
        but the code goes on with the instance it loaded before the lock.  A method of that model which
        changes ``self`` from its own values then computes from a stale read, and its save writes it over
        whatever the previous lock holder wrote."""
        lockers = {id(function): function for call in facts.calls_named(*orm.ROW_LOCKS)
                   for function in [facts.enclosing_function(call)] if function is not None}
        for function in lockers.values():
            nodes = function_nodes(function, facts)
            locks = [(node, loaded) for node in nodes if isinstance(node, ast.Expr)
                     for loaded in [django_instance_loader(node.value, facts) or sa_source(node.value, facts, False)]
                     if loaded is not None and loaded.locked]
            for lock, loaded in locks:
                for node in nodes:
                    if not (isinstance(node, ast.Expr) and later(node, lock)):
                        continue
                    call = unwrap(node.value)
                    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                        continue
                    found = _model_method(loaded.model, call.func.attr, facts)
                    if found is None:
                        continue
                    method, method_facts = found
                    change = next((c for c in instance_changes(method, method_facts) if c.instance == "self"), None)
                    if change is None:
                        continue
                    model = loaded.model.rsplit(".", 1)[-1]
                    yield self.finding(
                        node,
                        f"The `{model}` row locked on line {lock.lineno} is thrown away and `{short(call, 50)}` "
                        f"works on a copy loaded before the lock, so each request overwrites the last one's write.",
                        f"The method `{model}.{method.name}()` changes `self.{change.field}` from the stale copy and "
                        f"writes it back. Use the row the lock returns: `locked = {model}.objects.select_for_update().get(pk=...)` "
                        f"then `locked.{method.name}(...)` (or `refresh_from_db()` after taking the lock); better, "
                        f"change the counters in SQL (`F()` expressions, `jsonb_set`).",
                    )
                    break

    # a row changed where it is loaded, written back where its session is committed ---------------------
    def _committed_by_callers(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for found in [*changed_for_callers(facts), *changed_rows_handed_in(facts)]:
            function, change, loaded = found.function, found.change, found.loaded
            if _relocked_before(change.instance, change.statement, function, facts) \
                    or sole_writer(change.instance, change.back, function, facts) is not None:
                continue
            obj, field, model = change.instance, change.field, loaded.model.rsplit(".", 1)[-1]
            what = _CHANGED[change.kind]
            yield self.finding(
                change.statement,
                (f"`{obj}.{field}` is read by `{short(loaded.call, 50)}` in `{found.caller}`, {what} and written back "
                 f"by `{function.name}`, so one of two replicas' updates is lost." if found.by_itself else
                 f"`{obj}.{field}` is read by `{short(loaded.call, 50)}`, {what}, and written back by the caller "
                 f"`{found.caller}`, so one of two replicas' updates is lost."),
                "Two replicas (or requests) start from the same value, and the later write overwrites the other's "
                "change. " + (
                    f"Let the database do the arithmetic: `{model}.objects.filter(pk={obj}.pk).update({field}=F("
                    f"\"{field}\") {change.op} {change.amount})` and check the count (put a limit in the filter); or load "
                    f"the row with `select_for_update()` inside `transaction.atomic()`." if loaded.framework == "django"
                    else f"Let the database do the arithmetic: `session.execute(update({model}).where({model}.id == "
                    f"{obj}.id).values({field}={model}.{field} {change.op} {change.amount}))` and check `rowcount` (put "
                    f"a limit in the `where`); or load the row with `.with_for_update()` so it stays locked until the "
                    f"caller's commit."),
                related=[found.write_back],
            )

    # next-number allocation: the highest value read, one added in Python, stored in a row ---------------
    def _next_numbers(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for allocation in next_numbers.allocations(facts):
            column = f"`{allocation.column}`" if allocation.column else "value"
            hazard = (f"The next number is the highest {column} read by `{short(allocation.read, 50)}` plus one, so "
                      "two replicas reading at once allocate the same number.")
            suggestion = ("Both compute it in Python from the same read, so two rows share the number or one insert "
                          "fails on a unique constraint. Let the database allocate it (a sequence or identity column); or keep a unique "
                          "constraint on the number and retry the insert on `IntegrityError`; or lock the parent "
                          "row first (`select_for_update()` / `.with_for_update()`) so allocations for it run one "
                          "at a time.")
            yield self.finding(allocation.statement, hazard, suggestion)

    # ORM instances --------------------------------------------------------------------------------------
    def _orm(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        for function in _functions_writing_instances(facts):
            changes = instance_changes(function, facts)
            bindings = _instance_bindings(function, facts)
            # One finding per instance and write-back (its first changed field: ``a += 1; b += 1; obj.save()`` is
            # one lost update), and one per place that field is changed (``likes += 1`` in one branch, ``likes -=
            # 1`` in the other); a field another branch writes back on its own (``elif action == "like":``
            # ``likes += 1`` ... ``.update(likes=...)``) is a lost update of its own.
            reported: Dict[str, str] = {}
            written: Dict[str, Set[int]] = {}
            for change in changes:
                other_field = reported.get(change.instance, change.field) != change.field
                if change.kind == "in place" and not module_imports_any(facts, ("django",)):
                    continue  # list columns grown in place: Django ArrayField/JSONField (see _LIST_GROWTH)
                loaded = _loader_before(bindings.get(change.instance, []), change.back)
                if loaded is not None and loaded.locked:
                    continue
                if _relocked_before(change.instance, change.statement, function, facts) \
                        or derived_from_locked_rows(change.instance, change.statement, function, facts):
                    continue  # re-read under a lock, or picked out of rows a query here locked
                if held_by_lock_helper(change.statement, facts):
                    continue  # every caller waits for the lock the helper takes before it hands over the block
                if locked_view_object(change.instance, change.back, function, facts):
                    continue  # a REST view's object its own queryset locks for this action
                if _fresh_object(change.instance, change, function, facts):
                    continue
                seen_by = bindings
                if loaded is None:
                    # No load in view: the row may come from a project function that loads it and returns it.
                    if locked_by_its_loader(change.instance, change.back, function, facts):
                        continue  # (a copy of a row its loader locked for this call)
                    returned = returned_row(change.instance, change.back, function, facts)
                    if returned is not None:
                        if returned[1].locked:
                            continue
                        loaded = returned[1]
                        seen_by = {**bindings, change.instance: [*bindings.get(change.instance, []), returned]}
                write = _written_back(change, function, facts, seen_by)
                if write is None:
                    continue
                if other_field and id(write) in written.get(change.instance, set()):
                    continue  # the same write-back as a field already reported
                if sole_writer(change.instance, change.statement, function, facts) is not None:
                    continue
                if self._object_state(change, loaded, function, facts):
                    continue
                if one_runner_reaches(change.statement, facts):
                    continue  # one replica at a time runs it (asked last: it reads the callers across the project)
                if once_run_job_reaches(change.statement, facts) and not written_elsewhere(
                        change.field, [function], facts):
                    continue  # only a job the deployment runs once changes it, and nothing else writes the field
                reported.setdefault(change.instance, change.field)
                written.setdefault(change.instance, set()).add(id(write))
                yield self._report(change, loaded, write, self._column(change, loaded, function, facts),
                                   library=_model_library(change, loaded, function, facts))
            seen: Set[int] = set()
            for change, at in self._callee_changes(function, facts, bindings):
                if id(at) in seen or _fresh_object(change.instance, change, function, facts):
                    continue
                loaded = _loader_before(bindings.get(change.instance, []), change.back)
                if loaded is not None and loaded.locked:
                    continue
                write = _written_back(change, function, facts, bindings)
                if write is not None and sole_writer(change.instance, change.back, function, facts) is None \
                        and not self._object_state(change, loaded, function, facts):
                    seen.add(id(at))
                    change.statement = at
                    yield self._report(change, loaded, write, self._column(change, loaded, function, facts),
                                       library=_model_library(change, loaded, function, facts))


    @staticmethod
    def _object_state(change: Change, loaded: Optional[Loaded], function: FunctionNode, facts: ModuleFacts) -> bool:
        own = facts.enclosing_class(function) if change.instance == "self" else None
        return instance_attribute(loaded.model if loaded is not None else None, change.field, facts, own)

    @staticmethod
    def _column(change: Change, loaded: Optional[Loaded], function: FunctionNode, facts: ModuleFacts) -> Optional[str]:
        own = facts.enclosing_class(function) if change.instance == "self" else None
        return column_type(loaded.model if loaded is not None else None, change.field, facts, own)

    def _report(self, change: Change, loaded: Optional[Loaded], write: ast.Call,
                column: Optional[str] = None, library: str = "") -> Diagnostic:
        obj, field, op, amount = change.instance, change.field, change.op, change.amount
        origin = f"read by `{short(loaded.call, 50)}`" if loaded is not None else "read when the instance was loaded"
        what = _CHANGED[change.kind]
        spelled = f"getattr({obj}, {change.named_by})" if change.named_by else f"{obj}.{field}"
        hazard = (f"`{spelled}` is {origin}, {what} and written back on line {write.lineno}, so one of two "
                  "replicas' updates is lost.")
        why = (f"Two replicas (or requests) start from the same value, and the later `{short(write, 40)}` "
               "overwrites the other's change. ")
        django = (loaded.framework == "django") if loaded is not None \
            else write.func.attr in orm.DJANGO_SAVE | orm.DJANGO_BULK_SAVE
        # The model as the fix names it: a Django instance whose loader is not in view is its own class.
        model = loaded.model.rsplit(".", 1)[-1] if loaded is not None else (f"type({obj})" if django else "Model")
        if not model[:1].isupper() and not model.startswith("type("):
            model = f"type({obj})"  # (loaded through ``self.model``: the instance's own class)
        wait = "await " if isinstance(parent(write), ast.Await) else ""  # an AsyncSession, as the fix writes it
        tortoise, peewee = library == "tortoise", library == "peewee"
        if peewee and (model == "Model" or model.startswith("type(")):
            model = f"type({obj})"
        if change.kind == "advanced":
            if peewee:
                lock = "`.for_update()` on the select, inside `db.atomic()`"
            elif django:
                lock = ("`select_for_update()` inside `transaction.atomic()`, with the fetch and the copies in that "
                        "transaction")
            else:
                lock = ("`.with_for_update()` (or `session.get(..., with_for_update=True)`) in the transaction that "
                        "copies the items")
            return self.finding(
                change.statement,
                f"`{spelled}` is {origin} without a lock, handed to the fetch of what follows and moved past it: two "
                "runners fetch and copy the same items.",
                "Two replicas (or workers) read the same position, fetch the same items and both copy them in; the "
                f"later write moves the mark over work done twice. Load the row with {lock}, so a second runner waits "
                "and reads the moved position; or give the copies a unique key and skip the ones already there "
                "(`ignore_conflicts=True`, `ON CONFLICT DO NOTHING`).",
                related=[loaded.where] if loaded is not None and loaded.where is not None else [])
        if change.kind != "arithmetic":
            lock = ("`select_for_update()` inside `transaction.atomic()`" if django and not peewee
                    else "`.for_update()` on the select, inside `db.atomic()`" if peewee
                    else "`.with_for_update()` (or `session.get(..., with_for_update=True)`) in the same transaction")
            suggestion = (f"Re-read the row under a lock before merging ({lock}), change only the keys you own in "
                          f"SQL (`jsonb_set`, `||`, `array_append`), or compare-and-set on a version column and retry.")
        elif peewee:
            # Peewee's models update themselves: the row's own UPDATE, the count it returns, a row lock on the select.
            suggestion = (f"Let the database do the arithmetic: `{model}.update({field}={model}.{field} {op} {amount})"
                          f".where({model}.id == {obj}.id).execute()` and check the count it returns (put a limit in "
                          f"the `where`); or load the row with `.for_update()` on the select, inside `db.atomic()`.")
        elif django and tortoise:
            # Tortoise spells Django's queries without a manager, awaited, and locks inside ``in_transaction()``.
            suggestion = (f"Let the database do the arithmetic: `await {model}.filter(pk={obj}.pk).update("
                          f"{field}=F(\"{field}\") {op} {amount})` (`F` from `tortoise.expressions`); for a limit, "
                          f"filter on it and check the returned count; or load the row with `select_for_update()` "
                          f"inside `in_transaction()`.")
        elif django:
            suggestion = (f"Let the database do the arithmetic: `{model}.objects.filter(pk={obj}.pk).update("
                          f"{field}=F(\"{field}\") {op} {amount})`; for a limit, filter on it "
                          f"(`.filter(pk={obj}.pk, {field}__lt=limit)`) and check the returned count; or load the row "
                          f"with `select_for_update()` inside `transaction.atomic()`.")
        else:
            suggestion = (f"Let the database do the arithmetic: `{wait}session.execute(update({model}).where({model}.id == "
                          f"{obj}.id).values({field}={model}.{field} {op} {amount}))` and check `rowcount` (put a "
                          f"limit in the `where`); or load the row with `.with_for_update()` and keep it in that "
                          f"transaction.")
        if change.kind == "arithmetic" and column in ("text", "json"):
            suggestion = _whole_value_suggestion(obj, field, column, django)
        if change.named_by and change.kind == "arithmetic":
            # The field is the one a variable names: the fix names it through that variable too.
            name = change.named_by
            suggestion = (f"Let the database do the arithmetic: `{model}.objects.filter(pk={obj}.pk).update(**{{{name}: "
                          f"F({name}) {op} {amount}}})`, then `refresh_from_db(fields=[{name}])`; or load the row with "
                          f"`select_for_update()` inside `transaction.atomic()`." if django and not library else
                          f"Do the arithmetic in the database: one UPDATE that sets the column {name} names to itself "
                          f"{op} {amount}; or load the row with a row lock and keep it in that transaction.")
        fix = None
        if change.kind == "arithmetic" and column not in ("text", "json") and not library and not change.named_by:
            fix = orm_update_fix(change.statement, obj, field, "django" if django else "sqlalchemy",
                                 loaded.model if loaded is not None else None,
                                 _fix_session(loaded, write), write)
        related = [loaded.where] if loaded is not None and loaded.where is not None else []
        return self.finding(change.statement, hazard, why + suggestion, fix=fix, related=related)

    # changes made by a callee: a model method on ``self``, a helper on its parameter ----------------------------
    def _model_methods(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """``def increase(self): self.n = self.n + 1`` in a mapped model class: every caller that commits or
        saves the instance writes a value computed from a stale read."""
        for cls in facts.classes:
            columns = _model_columns(cls, facts)
            if not columns:
                continue
            for statement in cls.body:
                if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) or statement.name == "__init__":
                    continue
                for change in instance_changes(statement, facts):
                    if (change.instance == "self" and change.kind == "arithmetic" and change.field in columns
                            and not _written_back(change, statement, facts, {})
                            and sole_writer("self", change.statement, statement, facts) is None):
                        column = column_type(None, change.field, facts, cls)
                        suggestion = (
                            _whole_value_suggestion("self", change.field, column, module_imports_any(facts, ("django",)))
                            if column in ("text", "json") else
                            f"Do the arithmetic in SQL (`{cls.name}.{change.field} {change.op} {change.amount}` in an "
                            f"UPDATE, or `F(\"{change.field}\") {change.op} {change.amount}` in Django) and refresh; "
                            f"or have callers load the row with a row lock (`with_for_update()` / "
                            f"`select_for_update()`).")
                        yield self.finding(
                            change.statement,
                            f"`{cls.name}.{statement.name}()` changes `self.{change.field}` from the value loaded "
                            f"with the row, so one of two replicas' updates is lost.",
                            "The caller's commit or save writes the changed value back, and two callers start from "
                            "the same value. " + suggestion,
                        )
                        break

    def _callee_changes(self, function: FunctionNode, facts: ModuleFacts,
                        bindings: Dict[str, List[Tuple[ast.AST, Loaded]]]) -> Iterable[Tuple[Change, ast.AST]]:
        """(change as the caller sees it, where to report) for calls that change an instance the caller
        writes back: ``counter.increase()`` on a loaded row, ``bump_votes(poll)`` then ``poll.save()``."""
        for node in function_nodes(function, facts):
            if not isinstance(node, ast.Expr):
                continue
            call = unwrap(node.value)
            if not isinstance(call, ast.Call):
                continue
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                    and call.func.value.id in bindings and facts.module_method(call.func) is None:
                instance = call.func.value.id
                loaded = _loader_before(bindings.get(instance, []), node)
                if loaded is None or loaded.locked:
                    continue
                found = _model_method(loaded.model, call.func.attr, facts)
                if found is None:
                    continue
                method, method_facts = found
                for change in instance_changes(method, method_facts):
                    if change.instance == "self" and change.kind == "arithmetic":
                        yield Change(node, instance, change.field, "arithmetic", node, change.op, change.amount), node
                        break
            else:
                located = _module_helper(call, function, facts)
                if located is None:
                    continue
                helper, helper_facts = located
                parameters = [a.arg for a in helper.args.posonlyargs + helper.args.args]
                if isinstance(call.func, ast.Attribute) and helper_facts.enclosing_class(helper) is not None \
                        and not _names_a_class(call.func.value, facts):
                    parameters = parameters[1:]  # ``service.method(row)`` on a module-level instance: ``self``
                passed = {parameters[i]: plain_name(a) for i, a in enumerate(call.args) if i < len(parameters)}
                passed.update({k.arg: plain_name(k.value) for k in call.keywords if k.arg})
                for change in instance_changes(helper, helper_facts):
                    argument_name = passed.get(change.instance)
                    if argument_name and change.kind == "arithmetic" and not _written_back(
                            change, helper, helper_facts, {}):
                        # Reported at the helper's change when it is in this module, else at this call.
                        where = change.statement if helper_facts is facts else node
                        yield (Change(node, argument_name, change.field, "arithmetic", node, change.op, change.amount),
                               where)
                        break  # the helper's first change is where it is reported

    # accessor pairs: ``n = obj.get_count(); obj.set_count(n + 1)`` ------------------------------------------
    def _accessors(self, facts: ModuleFacts) -> Iterable[Diagnostic]:
        """A value read through ``get_<name>()`` and written back through ``set_<name>(...)`` (or a write
        whose dict names ``"<name>"``) on the same object, in a module that saves or commits: the accessors
        front a stored value, and the read and the write are two round trips."""
        if not any(facts.calls_named(*orm.DJANGO_SAVE, *orm.SA_FLUSH)):
            return
        getters: Dict[int, List[Tuple[ast.Call, str, str]]] = {}
        for call in facts.calls:
            if not (isinstance(call.func, ast.Attribute) and call.func.attr.startswith(_GETTER)):
                continue
            receiver = plain_name(call.func.value)
            function = facts.enclosing_function(call)
            if receiver is None or function is None:
                continue
            getters.setdefault(id(function), []).append((call, receiver, call.func.attr[len(_GETTER):]))
        for calls in getters.values():
            function = facts.enclosing_function(calls[0][0])
            for read, receiver, name in calls:
                write = _accessor_write(read, receiver, name, function, facts)
                if write is None:
                    continue
                flow = Flow(function, facts, lambda n, r=read: n is r, at=write)
                values = [a for a in write.args] + [k.value for k in write.keywords]
                if not any(flow.arithmetic(_keyed(v, name)) for v in values):
                    continue
                at = _first_arithmetic(flow, read, write, function, facts)
                yield self.finding(
                    at,
                    f"`{receiver}.{_GETTER}{name}()` is read, changed in Python and stored again on line "
                    f"{write.lineno}, so one of two replicas' updates is lost.",
                    f"Two replicas (or requests) read the same value, and the later `{short(write, 50)}` overwrites "
                    "the other's change. Change the stored value in one statement (an UPDATE with the arithmetic in SQL and the limit "
                    "in its WHERE, checking the rows affected), or read it under a row lock in the same "
                    "transaction.",
                )
                break


def _fix_session(loaded: Optional[Loaded], write: ast.Call) -> Optional[str]:
    """The session the fix's UPDATE runs on: the one the row was loaded through, and for Flask-SQLAlchemy's
    ``Model.query`` (which names none) the ``<db>.session`` the function commits."""
    if loaded is None or loaded.session != FLASK_SESSION:
        return loaded.session if loaded is not None else None
    receiver = dotted(write.func.value) if write.func.attr in orm.SA_FLUSH else None
    return receiver if receiver and receiver.endswith("session") else None


def _whole_value_suggestion(obj: str, field: str, column: str, django: bool) -> str:
    """The guard for a text or JSON column: the database cannot add to it, so the write must be conditional,
    serialised, or change only one part in SQL."""
    lock = ("`select_for_update()` inside `transaction.atomic()`" if django
            else "`.with_for_update()` in the same transaction")
    if column == "json":
        part = ("change only the key or element in SQL (`jsonb_set`, `||`, `array_append`"
                + (", Django `Func`/`RawSQL` in an `update()`" if django else "") + ")")
    else:
        part = "append in SQL (`Concat(F(...), ...)` / `||`) if that is what the change is"
    return (f"`{obj}.{field}` is a {column} column, not a number: re-read the row under a lock ({lock}) before "
            f"changing it, or {part}, or write it with a conditional UPDATE that matches the value read (or a "
            f"version column) and check the rows affected.")
