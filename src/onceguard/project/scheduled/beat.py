"""Celery beat entries and django-celery-beat rows (judged only where beat runs per replica)."""
from __future__ import annotations

import ast
import os
from typing import Optional

from ...analysis.applied_decorators import decorators
from ...analysis.facts import FunctionNode, ModuleFacts
from ...project import index as project
from ...project.bindings import own_module_names
from ...knowledge import schedulers as known
from ...analysis.names import dotted
from .jobs import Scheduled, Target, _const, _keywords


#: Modules read for a task a beat entry names by its registered name.
_MAX_TASK_MODULES = 8


def _task_named(name: str, facts: ModuleFacts, explicit_only: bool = False) -> Optional[FunctionNode]:
    """The Celery task of the module registered as ``name``: by ``@app.task(name=...)``, or (unless
    ``explicit_only``) by its own name or its module's dotted name and its own."""
    own = own_module_names(facts)
    for function in facts.functions:
        for decorator in decorators(function, facts):
            call = decorator if isinstance(decorator, ast.Call) else None
            func = call.func if call else decorator
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if last not in known.CELERY_TASK_DECORATORS:
                continue
            explicit = _const(_keywords(call).get("name")) if call else None
            if explicit == name or (not explicit_only and explicit is None and (name == function.name or any(
                    name == f"{m}.{function.name}" for m in own))):
                return function
    return None


class BeatRegistrations:
    """Mixin of the collector: Celery beat schedules and django-celery-beat rows."""

    # -- Celery beat and django-celery-beat (single-scheduler = false) -----------------------------
    def _celery_beat(self) -> None:
        facts = self.facts
        for assign in facts.assigns:
            if isinstance(assign, ast.AugAssign) or assign.value is None:
                continue
            targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
            if any((dotted(t) or "").rsplit(".", 1)[-1] in known.CELERY_BEAT_SCHEDULE_NAMES for t in targets):
                self._beat_dict(assign.value, dotted(targets[0]) or "beat_schedule")
            # one entry added by key (``CELERY_BEAT_SCHEDULE["throttle"] = {"task": ..., "schedule": ...}``,
            # often under a setting's ``if``)
            for target in targets:
                if isinstance(target, ast.Subscript) and (dotted(target.value) or "").rsplit(".", 1)[-1] in \
                        known.CELERY_BEAT_SCHEDULE_NAMES:
                    self._beat_dict(ast.Dict(keys=[target.slice], values=[assign.value]),
                                    dotted(target.value) or "beat_schedule")
        for call in facts.calls_by_name.get("update", ()):
            for keyword in call.keywords:
                if keyword.arg in known.CELERY_BEAT_SCHEDULE_NAMES:
                    self._beat_dict(keyword.value, keyword.arg)
            # ``CELERY_BEAT_SCHEDULE.update({...})``, ``app.conf.beat_schedule.update({...})``: entries added
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            if receiver is not None and (dotted(receiver) or "").rsplit(".", 1)[-1] in \
                    known.CELERY_BEAT_SCHEDULE_NAMES and call.args:
                self._beat_dict(call.args[0], dotted(receiver) or "beat_schedule")

    def _beat_dict(self, value: ast.AST, how: str) -> None:
        if not isinstance(value, ast.Dict):
            return
        for entry in value.values:
            if not isinstance(entry, ast.Dict):
                continue
            fields = {(_const(k) if k is not None else None): v for k, v in zip(entry.keys, entry.values)}
            task = fields.get("task")
            if not isinstance(_const(task), str):
                continue
            target = self._celery_task(task.value, task)
            if target is None:
                continue
            scheduled = Scheduled(known.CELERY_BEAT, how, task, target, None, None, fields.get("schedule"))
            self._classify_trigger(scheduled)
            self.add(scheduled)

    def _celery_task(self, name: str, node: ast.AST) -> Optional[Target]:
        """A Celery task by its registered name: ``@app.task(name=...)`` here, else ``module.function``, else a
        task another module of the project registers under that name (``@app.task(name="billing.renew")``)."""
        facts = self.facts
        function = _task_named(name, facts)
        if function is not None:
            return self._local(function)
        found = self.resolve_string(name, node)
        if found is not None or not self.cross_file:
            return found
        own = os.path.abspath(facts.context.path or "")
        for path in project.files_mentioning(f'"{name}"', project.search_root(facts))[:_MAX_TASK_MODULES]:
            other = project.module_facts(path, facts.config) if os.path.abspath(path) != own else None
            function = _task_named(name, other, explicit_only=True) if other is not None else None
            if function is not None and not other.context.is_test:
                return Target(function, other, True, False, name)
        return None

    def _django_celery_beat(self) -> None:
        facts = self.facts
        for method in known.DJANGO_ROW_METHODS:
            for call in facts.calls_by_name.get(method, ()):
                func = call.func
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                        and func.value.attr == "objects"):
                    continue
                if (facts.qualify(func.value.value) or "") not in known.DJANGO_CELERY_BEAT_MODELS:
                    continue
                keywords = _keywords(call)
                task = keywords.get("task")
                defaults = keywords.get("defaults")
                if task is None and isinstance(defaults, ast.Dict):
                    task = next((v for k, v in zip(defaults.keys, defaults.values) if _const(k) == "task"), None)
                if not isinstance(_const(task), str):
                    continue
                target = self._celery_task(task.value, task)
                if target is None:
                    continue
                self.add(Scheduled(known.DJANGO_CELERY_BEAT, f"PeriodicTask.objects.{method}", call, target, call))

    # -- triggers -----------------------------------------------------------------------------------
