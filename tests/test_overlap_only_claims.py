"""OG203: a lost claim is every replica's routine only where every replica runs the code on its own schedule.
A queued task or a request runs once per ask, on one worker or replica: its claim is lost only when two asks
overlap (a duplicate dispatch, a double click), a fault its warning is right to report."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUARD = """\
    import redis

    store = redis.Redis(host="redis")


    def hold(name):
        return store.set(f"hold:{name}", "1", nx=True, ex=600)
"""

EXPORT = """\
    import logging

    from billing.guard import hold
    from billing.ledger import push_invoices

    log = logging.getLogger(__name__)


    def export_invoices(batch):
        if not hold(f"export:{batch}"):
            log.warning("export of %s is already running", batch)
            return
        push_invoices(batch)
"""

LEDGER = """\
    import httpx


    def push_invoices(batch):
        httpx.post("https://ledger.example.com/batches", json={"batch": batch}, timeout=10)
"""

QUEUED = """\
    from celery import shared_task

    from billing.export import export_invoices


    @shared_task
    def export_batch(batch):
        export_invoices(batch)
"""

ROUTE = """\
    from fastapi import APIRouter

    from billing.export import export_invoices

    router = APIRouter()


    @router.post("/batches/{batch}/export")
    def export_now(batch: str):
        export_invoices(batch)
        return {"ok": True}
"""

TICKER = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from billing.export import export_invoices

    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(export_invoices, "interval", minutes=10, args=["daily"])
    scheduler.start()
"""


def _project(tmp_path, caller_name, caller):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'billing'\n", "billing/__init__.py": "",
                     "billing/guard.py": GUARD, "billing/export.py": EXPORT, "billing/ledger.py": LEDGER,
                     f"billing/{caller_name}.py": caller})


def test_a_queued_tasks_lost_claim_is_an_overlap(tmp_path):
    _project(tmp_path, "tasks", QUEUED)
    assert findings(tmp_path, "billing/export.py", codes=("OG203",)) == []


def test_a_requests_lost_claim_is_an_overlap(tmp_path):
    _project(tmp_path, "api", ROUTE)
    assert findings(tmp_path, "billing/export.py", codes=("OG203",)) == []


def test_every_replicas_scheduler_makes_the_lost_claim_routine(tmp_path):
    _project(tmp_path, "schedule", TICKER)
    assert findings(tmp_path, "billing/export.py", codes=("OG203",)) == [(11, "OG203")]


def test_a_task_every_replica_also_schedules_is_routine(tmp_path):
    _project(tmp_path, "tasks", QUEUED)
    write(tmp_path, {"billing/schedule.py": TICKER})
    assert findings(tmp_path, "billing/export.py", codes=("OG203",)) == [(11, "OG203")]


FINISHING = """\
    import logging
    import time

    import redis
    from apscheduler.schedulers.background import BackgroundScheduler

    from billing.ledger import push_invoices

    log = logging.getLogger(__name__)
    r = redis.Redis(host="redis")


    def nightly_export():
        {start}
        push_invoices("nightly")
        if not r.set("export:nightly:done", "1", nx=True, ex=86400):
            log.warning("nightly export was already marked done")


    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(nightly_export, "interval", hours=24)
    scheduler.start()
"""


@pytest.mark.parametrize("start, expected", [
    ("pass", []),
    ('if not r.set("export:nightly", "1", nx=True, ex=3600):\n'
     '            log.warning("nightly export taken by another replica")\n'
     '            return', [(15, "OG203")]),
])
def test_a_claims_answer_after_the_work_guards_nothing(tmp_path, start, expected):
    """The marker set after the work is done skips nothing: its loud log reports a lost claim, not a skip."""
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'billing'\n", "billing/__init__.py": "",
                     "billing/ledger.py": LEDGER, "billing/export.py": FINISHING.format(start=start)})
    assert findings(tmp_path, "billing/export.py", codes=("OG203",)) == expected
