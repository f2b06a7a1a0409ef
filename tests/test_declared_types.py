"""What the annotations declare a value to be, and what a job's calls run because of it.

A scheduled job is reported when its work may act outside the process.  A call on a receiver whose class
only an annotation names (a parameter, an attribute declared in its class, an element of a declared
container, one member of a union) runs that class's method: the job is judged by what the method does,
both ways.
"""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from onceguard.analysis.context import FileContext
from onceguard.analysis.facts import ModuleFacts
from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project import declared_types as declared
from onceguard.project import index as project


@pytest.fixture(autouse=True)
def _fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


def write(root: Path, rel: str, source: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")


#: Methods of the same names in more classes than a method is resolved by its name alone: only what the
#: annotations declare can tell which one a call runs.
_SAME_NAMES = "".join(f"""
class Other{index}:
    def put(self, item):
        self.item = item

    def apply(self, session):
        self.session = session
""" for index in range(4))


def findings(root: Path, files: dict, target: str, select=("OG201",)) -> list:
    write(root, "app/same_names.py", _SAME_NAMES)
    for rel, source in files.items():
        write(root, rel, source)
    (root / "app" / "__init__.py").touch()
    full = root / target
    config = from_mapping({"select": list(select)}, root=str(root))
    return sorted((d.line, d.code) for d in check_source(full.read_bytes(), str(full), config, cross_file=True))


def facts_of(root: Path, rel: str) -> ModuleFacts:
    path = root / rel
    source = path.read_text()
    config = from_mapping({}, root=str(root))
    return ModuleFacts(ast.parse(source), FileContext(str(path), config, cross_file=True), source.splitlines())


# -- reading declarations --------------------------------------------------------------------------------
_SHAPES = """
    from typing import Annotated, Callable, Dict, Mapping, Optional, Sequence, Union

    from sqlalchemy.orm import Mapped


    class Mailer:
        def put(self, item): ...


    class Archive:
        def put(self, item): ...


    class Policy:
        rule: Mapped[Annotated[Union[Mailer, Archive], "discriminated"]]
        spare: "Optional[Mailer]"
        factory: Callable[[], Archive]

        def __init__(self, handlers: Mapping[str, Sequence[Mailer]]):
            self.handlers = handlers
            self.by_name: Dict[str, Archive] = {}

        def use(self, key, policies: list[Policy]):
            for handler in self.handlers.get(key, ()):
                handler
            if (first := self.by_name.get(key)) is not None:
                first
            [p.rule for p in policies]
            made = self.factory()
            made
            self.spare
            self.handlers[key][0]
"""


def _expression(facts: ModuleFacts, text: str):
    function = next(f for f in facts.functions if f.name == "use")
    for node in ast.walk(function):
        if isinstance(node, ast.expr) and ast.unparse(node) == text and not isinstance(
                getattr(node, "ctx", None), ast.Store):
            return node, function
    raise AssertionError(text)


@pytest.mark.parametrize("text, expected", [
    ("handler", ["Mailer"]),  # an element of a sequence, the value of a mapping's .get()
    ("first", ["Archive"]),  # a walrus bound to a mapping's .get()
    ("p.rule", ["Mailer", "Archive"]),  # Mapped, Annotated and Union looked through; each member
    ("made", ["Archive"]),  # what calling a declared Callable gives
    ("self.spare", ["Mailer"]),  # a string annotation
    ("self.handlers[key][0]", ["Mailer"]),  # subscripts of a mapping, then of a sequence
])
def test_declared_classes_of_expressions(tmp_path, text, expected):
    write(tmp_path, "app/shapes.py", _SHAPES)
    facts = facts_of(tmp_path, "app/shapes.py")
    node, function = _expression(facts, text)
    found = declared.classes(declared.type_of(node, facts, function))
    assert [cls.name for cls, _ in found] == expected


def test_an_unannotated_value_stays_unknown(tmp_path):
    write(tmp_path, "app/shapes.py", """
        def use(items):
            for item in items:
                item
    """)
    facts = facts_of(tmp_path, "app/shapes.py")
    function = facts.functions[0]
    node = next(n for n in ast.walk(function) if isinstance(n, ast.Expr)).value
    assert declared.type_of(node, facts, function) is None


# -- a job's work through declared receivers --------------------------------------------------------------
_SCHEDULER = """
    from apscheduler.schedulers.background import BackgroundScheduler

    from app.sweeper import Sweeper

    scheduler = BackgroundScheduler()
    sweeper = Sweeper({})
    scheduler.add_job(sweeper.tick, "interval", minutes=5)
    scheduler.start()
"""

_SWEEPER = """
    from typing import Mapping, Sequence

    from app.handlers import Handler


    class Sweeper:
        def __init__(self, handlers: Mapping[str, Sequence[Handler]]):
            self._handlers = handlers

        def tick(self):
            for handler in self._handlers.get("tick", ()):
                handler.put("tick")
"""

_IN_MEMORY_HANDLER = """
    class Handler:
        def __init__(self):
            self._pending = []

        def put(self, event):
            self._pending.append(event)
"""

_POSTING_HANDLER = """
    import requests


    class Handler:
        def put(self, event):
            requests.post("https://hooks.example.com/tick", json={"event": event})
"""


def test_handlers_from_a_declared_mapping_that_only_buffer_make_a_per_process_job(tmp_path):
    files = {"app/main.py": _SCHEDULER, "app/sweeper.py": _SWEEPER, "app/handlers.py": _IN_MEMORY_HANDLER}
    assert findings(tmp_path, files, "app/main.py") == []


def test_handlers_from_a_declared_mapping_that_post_make_a_job_every_replica_repeats(tmp_path):
    files = {"app/main.py": _SCHEDULER, "app/sweeper.py": _SWEEPER, "app/handlers.py": _POSTING_HANDLER}
    assert findings(tmp_path, files, "app/main.py") == [(8, "OG201")]


@pytest.mark.parametrize("annotation", [
    '"Mapping[str, Sequence[Handler]]"',  # a string annotation
    "Optional[Dict[str, List[Handler]]]",  # typing's spellings, optional
    "dict[str, list[Handler]] | None",  # builtin generics and a union with None
])
def test_the_declaration_may_be_spelled_any_way(tmp_path, annotation):
    sweeper = _SWEEPER.replace("Mapping[str, Sequence[Handler]]", annotation).replace(
        "from typing import Mapping, Sequence", "from typing import Dict, List, Mapping, Optional, Sequence")
    for handler, expected in ((_IN_MEMORY_HANDLER, []), (_POSTING_HANDLER, [(8, "OG201")])):
        project.clear_cache()
        root = tmp_path / str(len(expected))
        files = {"app/main.py": _SCHEDULER, "app/sweeper.py": sweeper, "app/handlers.py": handler}
        assert findings(root, files, "app/main.py") == expected


_POLICY_JOB = """
    from apscheduler.schedulers.background import BackgroundScheduler
    from sqlalchemy import select

    from app.db import Session
    from app.models import Policy

    scheduler = BackgroundScheduler()


    def load_policies(session) -> list[Policy]:
        return list(session.scalars(select(Policy)))


    def apply_policies():
        with Session() as session:
            for policy in load_policies(session):
                policy.rule.apply(session)
            session.commit()


    scheduler.add_job(apply_policies, "interval", hours=1)
    scheduler.start()
"""

_POLICY_MODELS = """
    from typing import Union

    from sqlalchemy import delete
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

    from app.mail import send_report


    class Base(DeclarativeBase):
        pass


    class Trace(Base):
        __tablename__ = "traces"


    class MaxAge:
        def apply(self, session):
            session.execute(delete(Trace).where(Trace.age > 30))


    class MaxCount:
        def apply(self, session):
            session.execute(delete(Trace).where(Trace.rank > 1000))


    class Policy(Base):
        __tablename__ = "policies"
        rule: Mapped[Union[MaxAge, MaxCount]] = mapped_column()
"""


def test_each_member_of_a_declared_union_is_judged(tmp_path):
    files = {"app/jobs.py": _POLICY_JOB, "app/models.py": _POLICY_MODELS,
             "app/db.py": "from sqlalchemy.orm import sessionmaker\nSession = sessionmaker()\n",
             "app/mail.py": "import smtplib\n\ndef send_report(text):\n    smtplib.SMTP('mail').sendmail('a', 'b', text)\n"}
    # Both members only delete rows by a condition: a sweep whose repeats change nothing (OG204, off by default).
    assert findings(tmp_path, files, "app/jobs.py") == []
    assert findings(tmp_path, files, "app/jobs.py", select=("OG204",)) == [(15, "OG204")]
    # One member mails a report: every replica mails it.
    project.clear_cache()
    mailing = _POLICY_MODELS.replace(
        "session.execute(delete(Trace).where(Trace.rank > 1000))", "send_report('trimmed')")
    files["app/models.py"] = mailing
    assert findings(tmp_path / "mailing", files, "app/jobs.py") == [(15, "OG201")]


_METRICS = """
    from prometheus_client import Gauge

    LAST_SWEEP = Gauge("last_sweep_seconds", "When the sweep last ran")
"""

_REDIS_STAMP = """
    import redis

    client = redis.Redis()


    class Stamp:
        def set(self, value):
            client.set("last_sweep", value)


    LAST_SWEEP = Stamp()
"""

_METRIC_JOB = """
    import time

    from apscheduler.schedulers.background import BackgroundScheduler

    from app.metrics import LAST_SWEEP

    scheduler = BackgroundScheduler()


    def record_sweep():
        LAST_SWEEP.set(time.time())


    scheduler.add_job(record_sweep, "interval", minutes=1)
    scheduler.start()
"""


def test_a_metric_imported_from_another_module_is_the_process_own(tmp_path):
    files = {"app/jobs.py": _METRIC_JOB, "app/metrics.py": _METRICS}
    assert findings(tmp_path, files, "app/jobs.py") == []


def test_a_project_object_of_the_same_name_that_writes_redis_is_an_effect(tmp_path):
    files = {"app/jobs.py": _METRIC_JOB, "app/metrics.py": _REDIS_STAMP}
    assert findings(tmp_path, files, "app/jobs.py") == [(11, "OG201")]


# -- ``self`` in an inherited method is the subclass's instance -------------------------------------------
_BATCHING = """
    from typing import Callable, Protocol


    class Batch(Protocol):
        def put(self, item) -> None: ...


    class Batched:
        make_batch: Callable[[], Batch]

        def __init__(self):
            self._batch = self.make_batch()

        def put(self, item):
            self._batch.put(item)
"""

_RECORDER = """
    from typing import Callable, cast

    import requests

    from app.batching import Batched


    class MemoryBatch:
        def __init__(self):
            self._items = []

        def put(self, item):
            self._items.append(item)


    class PostingBatch:
        def put(self, item):
            requests.post("https://collector.example.com/items", json=item)


    class Recorder(Batched):
        make_batch = cast(Callable[[], MemoryBatch], MemoryBatch)


    RECORDER = Recorder()
"""

_RECORDING_JOB = """
    from apscheduler.schedulers.background import BackgroundScheduler

    from app.recorder import RECORDER

    scheduler = BackgroundScheduler()


    def record_tick():
        RECORDER.put("tick")


    scheduler.add_job(record_tick, "interval", seconds=30)
    scheduler.start()
"""


def test_an_inherited_method_reads_the_subclass_declarations(tmp_path):
    # The base only declares a protocol; the subclass says what its batches are: kept in memory.
    files = {"app/jobs.py": _RECORDING_JOB, "app/batching.py": _BATCHING, "app/recorder.py": _RECORDER}
    assert findings(tmp_path, files, "app/jobs.py") == []
    # The same subclass with batches that post each item: every replica posts.
    project.clear_cache()
    files["app/recorder.py"] = _RECORDER.replace("Callable[[], MemoryBatch], MemoryBatch",
                                                 "Callable[[], PostingBatch], PostingBatch")
    assert findings(tmp_path / "posting", files, "app/jobs.py") == [(9, "OG201")]


def test_an_inherited_method_calls_the_subclass_override(tmp_path):
    base = """
        class Exporter:
            def run(self):
                for row in self.rows():
                    self.deliver(row)

            def rows(self):
                return []

            def deliver(self, row):
                raise NotImplementedError
    """
    own = """
        import smtplib

        from app.base import Exporter


        class LocalExporter(Exporter):
            def deliver(self, row):
                self.last = row


        class MailExporter(Exporter):
            def deliver(self, row):
                smtplib.SMTP("mail").sendmail("a", "b", str(row))
    """
    job = """
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.exporters import {cls}

        scheduler = BackgroundScheduler()
        scheduler.add_job({cls}().run, "interval", minutes=5)
        scheduler.start()
    """
    for cls, expected in (("LocalExporter", []), ("MailExporter", [(7, "OG201")])):
        project.clear_cache()
        root = tmp_path / cls
        files = {"app/jobs.py": job.format(cls=cls), "app/base.py": base, "app/exporters.py": own}
        assert findings(root, files, "app/jobs.py") == expected
