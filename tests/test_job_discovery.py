"""Jobs found by behaviour and judged by where they run: beat embedded in workers by the deployment files,
claims that dominate a registration, effects that stay in the process."""
from __future__ import annotations

import os
import textwrap

import pytest
from samples import REDIS_LOCK_HELPERS

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project import deployment, index


@pytest.fixture(autouse=True)
def fresh_caches():
    index.clear_cache()
    deployment.clear_cache()
    yield
    index.clear_cache()
    deployment.clear_cache()


def write(root, files: dict) -> None:
    for name, text in files.items():
        full = os.path.join(str(root), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))


def findings(root, path: str, codes=("OG201",), cross_file: bool = True, select=None):
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    settings = {"select": list(select)} if select else {}
    config = from_mapping(settings, root=str(root))
    return sorted((d.line, d.code) for d in check_source(source, full, config, cross_file=cross_file)
                  if d.code in codes)


def launch(words, path="/srv/Dockerfile"):
    return deployment.Launch(tuple(words), path, 1, True, "Dockerfile CMD")


# -- embedded beat as a deployment fact -----------------------------------------------------------------
@pytest.mark.parametrize("words", [
    ["celery", "-A", "app", "worker", "-B"],
    ["celery", "-A", "app", "worker", "--beat", "-l", "info"],
    ["python", "-m", "celery", "-A", "proj.queue", "worker", "-E", "-B"],
    ["/usr/local/bin/celery", "--app=proj", "worker", "--beat=1"],
])
def test_a_worker_started_with_beat_embeds_it(words):
    assert deployment.embeds_beat(launch(words))


@pytest.mark.parametrize("words", [
    ["celery", "-A", "app", "worker", "-l", "info"],
    ["celery", "-A", "app", "beat", "-l", "info"],  # the dedicated scheduler: one process
    ["gunicorn", "app:app", "-b", "0.0.0.0:8000"],
    ["celery", "-A", "app", "inspect", "ping"],
])
def test_other_commands_do_not_embed_beat(words):
    assert not deployment.embeds_beat(launch(words))


def test_a_script_that_gathers_the_worker_options_in_an_array(tmp_path):
    write(tmp_path, {"run_worker.sh": """\
        #!/bin/bash
        OPTIONS=("-A" "proj" "worker" "-Q" "$QUEUES")
        if [[ $WITH_SCHEDULER = yes ]]; then
          OPTIONS+=("--beat")
        fi
        celery "${OPTIONS[@]}"
    """, "plain.sh": """\
        #!/bin/bash
        OPTIONS=("-A" "proj" "worker" "-Q" "$QUEUES")
        celery "${OPTIONS[@]}"
    """})
    with_beat = launch(["celery", "${OPTIONS[@]}"], str(tmp_path / "run_worker.sh"))
    without = launch(["celery", "${OPTIONS[@]}"], str(tmp_path / "plain.sh"))
    assert deployment.embeds_beat(with_beat)
    assert not deployment.embeds_beat(without)


BEAT_APP = """\
    from celery import Celery

    import smtplib

    tasks = Celery("proj")
    tasks.conf.beat_schedule = {
        "weekly-report": {"task": "proj.jobs.mail_weekly_report", "schedule": 604800.0},
    }


    @tasks.task
    def mail_weekly_report():
        with smtplib.SMTP("mail") as server:
            server.sendmail("reports@example.org", ["team@example.org"], "weekly")
"""


def test_beat_entries_are_jobs_where_every_worker_runs_beat(tmp_path):
    write(tmp_path, {
        "proj/jobs.py": BEAT_APP,
        "docker-compose.yml": """\
            services:
              worker:
                image: proj
                command: celery -A proj.jobs worker -B --loglevel=info
                deploy:
                  replicas: 2
        """,
    })
    assert findings(tmp_path, "proj/jobs.py") == [(12, "OG201")]


def test_beat_in_a_dedicated_service_is_one_scheduler(tmp_path):
    write(tmp_path, {
        "proj/jobs.py": BEAT_APP,
        "docker-compose.yml": """\
            services:
              worker:
                image: proj
                command: celery -A proj.jobs worker --loglevel=info
              beat:
                image: proj
                command: celery -A proj.jobs beat --loglevel=info
        """,
    })
    assert findings(tmp_path, "proj/jobs.py") == []


def test_one_file_alone_sees_no_deployment(tmp_path):
    write(tmp_path, {
        "proj/jobs.py": BEAT_APP,
        "Procfile": "worker: celery -A proj.jobs worker -B\n",
    })
    assert findings(tmp_path, "proj/jobs.py", cross_file=False) == []
    assert findings(tmp_path, "proj/jobs.py") == [(12, "OG201")]


# -- a claim that dominates the registration -------------------------------------------------------------
LEADER_HELPER = """\
    import redis

    store = redis.Redis(host="redis")


    def try_lead(me):
        won = store.set("scheduler:leader", me, nx=True, ex=60)
        return bool(won)
"""

LEDGER = """\
    import requests


    def post_interest():
        requests.post("https://ledger.internal/interest", timeout=10)
"""

REGISTRATION = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from pay.leadership import try_lead
    from pay.ledger import post_interest

    scheduler = BackgroundScheduler(timezone="UTC")


    def accrue_interest():
        post_interest()


    def start(me):
        {before}
        scheduler.add_job(accrue_interest, "interval", hours=1)
        scheduler.start()
        {after}
"""


def _registration(before: str, after: str = "") -> str:
    return REGISTRATION.replace("{before}", before).replace("{after}", after)


@pytest.mark.parametrize("before", [
    "if not try_lead(me):\n            return",
    "if try_lead(me) is False:\n            raise SystemExit(0)",
])
def test_a_job_added_only_after_a_leader_claim_in_another_module_is_clean(tmp_path, before):
    write(tmp_path, {"pay/__init__.py": "", "pay/leadership.py": LEADER_HELPER, "pay/ledger.py": LEDGER,
                     "pay/jobs.py": _registration(before)})
    assert findings(tmp_path, "pay/jobs.py") == []


def test_a_claim_tested_only_after_the_registration_does_not_count(tmp_path):
    write(tmp_path, {"pay/__init__.py": "", "pay/leadership.py": LEADER_HELPER, "pay/ledger.py": LEDGER,
                     "pay/jobs.py": _registration("leading = try_lead(me)", "if not leading:\n            return")})
    assert findings(tmp_path, "pay/jobs.py") == [(9, "OG201")]


# -- effects of work handed on, and of a process acting on itself -----------------------------------------
def messages(root, path: str, cross_file: bool = True):
    """Each OG201 finding's message with its related places' (where the effect that decides it is named)."""
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    config = from_mapping({}, root=str(root))
    return [" ".join([d.message, *(place.message for place in d.related)])
            for d in check_source(source, full, config, cross_file=cross_file) if d.code == "OG201"]


HANDED = """\
    import asyncio

    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from shop.{module} import {name}

    scheduler = AsyncIOScheduler(timezone="UTC")


    async def nightly():
        await asyncio.to_thread({name})


    scheduler.add_job(nightly, "cron", hour=2)
"""
MAILER = """\
    import smtplib


    def mail_statements():
        with smtplib.SMTP("mail") as server:
            server.sendmail("shop@example.org", ["all@example.org"], "statement")
"""
TAKER = """\
    import redis
    from sqlalchemy import text

    from shop.db import engine

    store = redis.Redis()


    def fold_counters():
        views = int(store.getdel("views:pending") or 0)
        with engine.begin() as conn:
            conn.execute(text("UPDATE totals SET views = views + :n"), {"n": views})
"""


def test_work_handed_to_a_thread_is_the_jobs_work(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/statements.py": MAILER,
                     "shop/jobs.py": HANDED.format(module="statements", name="mail_statements")})
    found = messages(tmp_path, "shop/jobs.py")
    assert len(found) == 1 and "sendmail" in found[0]


def test_a_take_and_reset_read_is_a_share_of_its_own(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/db.py": "engine = None\n", "shop/counters.py": TAKER,
                     "shop/jobs.py": HANDED.format(module="counters", name="fold_counters")})
    assert messages(tmp_path, "shop/jobs.py") == []


SIGNALLER = """\
    import os
    import signal
    import threading


    def watchdog(pid_file):
        threading.Timer(30.0, watchdog, args=(pid_file,)).start()
        {kill}
"""


def test_a_process_signalling_itself_is_per_process_another_pid_is_not(tmp_path):
    write(tmp_path, {"own.py": SIGNALLER.replace("{kill}", "os.kill(os.getpid(), signal.SIGTERM)"),
                     "other.py": SIGNALLER.replace("{kill}", "os.kill(int(open(pid_file).read()), signal.SIGTERM)")})
    assert findings(tmp_path, "own.py") == []
    assert findings(tmp_path, "other.py") == [(6, "OG201")]


# -- rows claimed by moving them out of their condition; a task's effects through its enqueue ------------
TASKS = """\
    from celery import shared_task
    from django.db import transaction

    from desk.models import Ticket


    @shared_task
    def escalate(ids):
        with transaction.atomic():
            for ticket in Ticket.objects.filter(pk__in=ids, {selected}).select_for_update():
                ticket.page_on_call()
            Ticket.objects.filter(pk__in=ids).update({moved})
"""
ENQUEUER = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from desk import tasks

    scheduler = BackgroundScheduler(timezone="UTC")


    def queue_escalations():
        tasks.escalate.apply_async(([1, 2, 3],), countdown=5)


    scheduler.add_job(queue_escalations, "interval", minutes=2)
"""


@pytest.mark.parametrize("selected, moved, flagged", [
    ("escalated=False", "escalated=True", False),
    ("state='open'", "state='paged'", False),
    ("escalated=False", "touched=True", True),  # the rows still match: a second run pages again
    ("escalated=False", "escalated=False", True),
])
def test_an_enqueued_task_is_judged_by_its_row_claim(tmp_path, selected, moved, flagged):
    write(tmp_path, {"desk/__init__.py": "", "desk/models.py": "class Ticket:\n    pass\n",
                     "desk/tasks.py": TASKS.format(selected=selected, moved=moved), "desk/jobs.py": ENQUEUER})
    assert findings(tmp_path, "desk/jobs.py") == ([(8, "OG201")] if flagged else [])


# -- a ticker defined in one module and started in another -------------------------------------------------
LEASES = """\
    import uuid

    import redis


    class Lease:
        def __init__(self, url, name, ttl):
            self.name = name
            self.token = str(uuid.uuid4())
            self.ttl = ttl
            self.client = redis.Redis.from_url(url)
            self.held = False

        def take(self):
            self.held = self.client.set(self.name, self.token, nx=True, ex=self.ttl)
            return self.held
"""
TICKER = """\
    import asyncio
    import os

    import httpx

    from svc.leases import Lease

    if os.environ.get("REDIS_URL"):
        reminder_lease = Lease(os.environ["REDIS_URL"], "reminders", 90)
        take_reminders = reminder_lease.take
    else:
        take_reminders = lambda: True


    async def remind_forever():
        while True:
            try:
                {claim}
                async with httpx.AsyncClient() as client:
                    await client.post("https://notify.example.org/remind")
                await asyncio.sleep(60)
            except Exception:
                await asyncio.sleep(5)
"""
STARTER = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from svc.reminders import remind_forever


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(remind_forever())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""
_RETRY_LATER = "\n                    await asyncio.sleep(15)\n                    continue"


@pytest.mark.parametrize("claim, flagged", [
    ("pass", True),
    ("if not take_reminders():" + _RETRY_LATER, False),  # the lease's method through a module-level alias
    ("if not reminder_lease.take():" + _RETRY_LATER, False),
    ("if not reminder_lease.client.set('reminders', 1, nx=True, ex=90):" + _RETRY_LATER, False),
])
def test_a_ticker_started_from_another_module(tmp_path, claim, flagged):
    """The starting module never says ``sleep``: the loop, its sleep and its claim are read where the loop is
    defined, and a failed claim that waits and tries again on the next pass leaves the iteration's work."""
    write(tmp_path, {"svc/__init__.py": "", "svc/leases.py": LEASES,
                     "svc/reminders.py": TICKER.format(claim=claim), "svc/main.py": STARTER})
    assert b"sleep" not in (tmp_path / "svc/main.py").read_bytes()
    assert findings(tmp_path, "svc/main.py") == ([(11, "OG201")] if flagged else [])


HEARTBEAT = """\
    import asyncio
    from contextlib import asynccontextmanager

    import redis.asyncio as aioredis
    from fastapi import FastAPI

    running = {{}}
    store = aioredis.Redis()


    async def keep_alive():
        while True:
            await asyncio.sleep(10)
            pipe = store.pipeline(transaction=False)
            for job_id in list(running):
                {queued}
            await pipe.execute()


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(keep_alive())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("queued, codes", [
    ("pipe.expire(f'jobs:{{job_id}}', 40)", [(11, "OG204")]),  # renewing TTLs repeats to the same result
    ("pipe.incr(f'beats:{{job_id}}')", [(11, "OG201")]),
])
def test_a_pipeline_is_judged_by_what_it_queues(tmp_path, queued, codes):
    write(tmp_path, {"app.py": HEARTBEAT.format(queued=queued)})
    assert findings(tmp_path, "app.py", codes=("OG201", "OG204"), select=["OG", "OG204"]) == codes


DAEMON = """\
    import asyncio
    import time
    from contextlib import asynccontextmanager

    import httpx
    from fastapi import FastAPI

    hooks = httpx.AsyncClient(base_url="https://hooks.example.org")
    RATES = {{}}


    class RateBook:
        def __init__(self) -> None:
            self._running = False
            self._pending = []

        def forget(self, name: str) -> None:
            self._pending.append(name)
            asyncio.create_task(self._announce())

        async def _announce(self) -> None:
            while True:
                while self._pending:
                    self._pending.pop()
                    await hooks.post("/forgotten", json={{"event": "forgotten"}})
                await asyncio.sleep(0.1)

        async def {entry}(self){returns}:
            self._running = True
            asyncio.create_task(self._refresh())
            {back}

        async def _refresh(self) -> None:
            while self._running:
                RATES.update({{"eur": 1.0}})
                await asyncio.sleep(600)


    book = RateBook()


    @asynccontextmanager
    async def lifespan(app):
        {start}
        yield


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("entry, returns, back, start", [
    ("__aenter__", "", "return self", "async with book:\n            pass"),
    ("start", " -> None", "", "await book.start()"),
])
def test_a_daemon_runs_the_loop_its_start_spawns_not_one_a_request_spawns(tmp_path, entry, returns, back, start):
    """Starting the object runs ``_refresh`` (in-process only: per-replica by design); ``_announce`` is spawned
    by ``forget``, which a request calls, so it is no loop the start registers."""
    text = DAEMON.format(entry=entry, returns=returns, back=back, start=start)
    write(tmp_path, {"svc/__init__.py": "", "svc/rates.py": text})
    assert findings(tmp_path, "svc/rates.py", codes=("OG201", "OG204")) == []
    # The same class whose start spawns the announcing loop is a job the start registers.
    spawned = text.replace("asyncio.create_task(self._refresh())", "asyncio.create_task(self._announce())")
    write(tmp_path, {"svc/rates.py": spawned})
    index.clear_cache()
    assert [code for _, code in findings(tmp_path, "svc/rates.py", codes=("OG201", "OG204"))] == ["OG201"]


WORKER_RUNNER = """\
    import time

    from depot.exports import {imported}

    {main}
"""
WORKER_EXPORTS = """\
    import boto3

    from depot.leases import take

    bucket = boto3.client("s3")


    def push_totals() -> None:
        {claim}
        bucket.put_object(Bucket="totals", Key="latest.csv", Body=b"...")


    def forever() -> None:
        while True:
            push_totals()
            time.sleep(300)
"""
WORKER_LEASES = """\
    import redis

    store = redis.Redis()


    def take(name, seconds):
        return store.set(name, 1, nx=True, ex=seconds)
"""
_IN_MAIN = "if __name__ == '__main__':\n        while True:\n            push_totals()\n            time.sleep(300)"
_VIA_FUNCTION = ("def run() -> None:\n        while True:\n            try:\n                push_totals()\n"
                 "            except Exception:\n                pass\n            time.sleep(300)\n\n\n"
                 "    if __name__ == '__main__':\n        run()")
_ENDS = "if __name__ == '__main__':\n        for _ in range(3):\n            push_totals()\n            time.sleep(300)"
# Until a shutdown sets the event: the loop ends only when the process is told to stop.
_UNTIL_STOPPED = ("import threading\n\n    stop = threading.Event()\n\n    if __name__ == '__main__':\n"
                  "        while not stop.is_set():\n            push_totals()\n            stop.wait(300)")


@pytest.mark.parametrize("main, claim, flagged", [
    (_IN_MAIN, "pass", True),
    (_VIA_FUNCTION, "pass", True),
    (_IN_MAIN, "if not take('totals', 300):\n            return", False),  # the job claims each period
    (_ENDS, "pass", False),  # a program that ends: a person's run, not a worker kept up per replica
    (_UNTIL_STOPPED, "pass", True),
    # the loop sets its own event: it ends after one pass, a person's run
    (_UNTIL_STOPPED.replace("stop.wait(300)", "stop.set()\n            stop.wait(300)"), "pass", False),
    ("def run() -> None:\n        while True:\n            push_totals()\n            time.sleep(300)", "pass", False),
    # the pass's own pause on the shutdown event is its only way out: a worker until the process is stopped
    (_UNTIL_STOPPED.replace("while not stop.is_set():", "while True:").replace(
        "stop.wait(300)", "if stop.wait(300):\n                break"), "pass", True),
    (_UNTIL_STOPPED.replace("while not stop.is_set():", "while True:").replace(
        "stop.wait(300)", "if stop.is_set():\n                break\n            time.sleep(300)"), "pass", True),
    # a break on anything else ends the program: a person's run
    (_UNTIL_STOPPED.replace("while not stop.is_set():", "while True:").replace(
        "stop.wait(300)", "if push_totals():\n                break\n            stop.wait(300)"), "pass", False),
])
def test_a_long_running_programs_own_loop_schedules_what_it_calls(tmp_path, main, claim, flagged):
    """``while True: push_totals(); time.sleep(300)`` run from ``__main__`` (in the block or a function it calls) is
    a scheduler: every replica running the program repeats the work.  A loop nothing runs as a program is not."""
    write(tmp_path, {"depot/__init__.py": "", "depot/leases.py": WORKER_LEASES,
                     "depot/exports.py": WORKER_EXPORTS.format(claim=claim).replace("import boto3", "import time\n    import boto3"),
                     "depot/runner.py": WORKER_RUNNER.format(imported="push_totals", main=main)})
    # Nothing shows the program deployed: it may be the one process of its kind.
    assert findings(tmp_path, "depot/runner.py") == []
    write(tmp_path, {"Dockerfile": 'FROM python:3.12-slim\nCMD ["python", "-m", "depot.runner"]\n'})
    index.clear_cache()
    deployment.clear_cache()
    found = findings(tmp_path, "depot/runner.py")
    assert [code for _, code in found] == (["OG201"] if flagged else [])


# -- a Redis lock made by a helper of another module --------------------------------------------------------
LOCK_HELPERS = REDIS_LOCK_HELPERS

LOCKED_JOB = """\
    import boto3

    from maps.coordination import named_lock


    def rebuild_sitemap() -> None:
        guard = named_lock("sitemap-rebuild", ttl=600)
        {take}
        boto3.client("s3").put_object(Bucket="site", Key="sitemap.xml", Body=b"")
"""

SCHEDULE_WORKER = """\
    import time

    import schedule

    from maps import tasks

    schedule.every(10).minutes.do(tasks.rebuild_sitemap)

    if __name__ == "__main__":
        while True:
            schedule.run_pending()
            time.sleep(1)
"""


@pytest.mark.parametrize("take, expected", [
    ("if not guard.acquire(blocking=False):\n            return", []),
    ("guard.acquire()", [(7, "OG201")]),  # waits its turn, then runs again
])
def test_a_tested_non_blocking_acquire_of_a_helper_made_lock_is_the_jobs_claim(tmp_path, take, expected):
    write(tmp_path, {
        "maps/__init__.py": "",
        "maps/coordination.py": LOCK_HELPERS,
        "maps/tasks.py": LOCKED_JOB.format(take=take),
        "maps/worker.py": SCHEDULE_WORKER,
        "docker-compose.yml": """\
            services:
              worker:
                build: .
                command: python -m maps.worker
                deploy:
                  replicas: 3
        """,
    })
    assert findings(tmp_path, "maps/worker.py") == expected


# -- a thread target imported inside the function that starts it ---------------------------------------------
LENDING_APPS = """\
    import threading

    from django.apps import AppConfig


    class LendingConfig(AppConfig):
        name = "lending"

        def ready(self) -> None:
            {imports}

            threading.Thread(target={target}, name="reminders", daemon=True).start()
"""
REMINDERS = """\
    import time

    from django.db import transaction

    from lending.mailer import Mailer
    from lending.models import Loan


    def send_overdue(mailer: Mailer) -> None:
        {pick}
            for loan in due:
                mailer.send_reminder(loan.borrower_email)
                Loan.objects.filter(pk=loan.pk).update(reminded=True)


    def remind_forever(interval: float = 300.0) -> None:
        mailer = Mailer()
        while True:
            send_overdue(mailer)
            time.sleep(interval)
"""
MAILER_CLASS = """\
    import smtplib


    class Mailer:
        def send_reminder(self, to: str) -> None:
            with smtplib.SMTP("mail") as server:
                server.sendmail("library@example.org", [to], "Your loan is overdue")
"""
UNCLAIMED_PICK = "if True:\n            due = Loan.objects.filter(returned=False, reminded=False)"
CLAIMED_PICK = ("with transaction.atomic():\n            due = Loan.objects.select_for_update(skip_locked=True)"
                ".filter(returned=False, reminded=False)[:50]")


@pytest.mark.parametrize("imports, target", [
    ("from lending import reminders", "reminders.remind_forever"),
    ("import lending.reminders", "lending.reminders.remind_forever"),
    ("from lending.reminders import remind_forever as reminder_loop", "reminder_loop"),
])
def test_a_thread_target_imported_in_the_function_that_starts_it_is_resolved(tmp_path, imports, target):
    """``AppConfig.ready`` imports the module of the loop it starts inside its body (as Django apps do, the
    registry not being ready at module level): the target is that module's function, its loop every replica
    runs.  The same loop that claims its rows first (``FOR UPDATE SKIP LOCKED``) is silent."""
    write(tmp_path, {"lending/__init__.py": "", "lending/mailer.py": MAILER_CLASS, "lending/models.py": "",
                     "lending/reminders.py": REMINDERS.format(pick=UNCLAIMED_PICK),
                     "lending/apps.py": LENDING_APPS.format(imports=imports, target=target)})
    assert findings(tmp_path, "lending/apps.py") == [(12, "OG201")]
    write(tmp_path, {"lending/reminders.py": REMINDERS.format(pick=CLAIMED_PICK)})
    index.clear_cache()
    assert findings(tmp_path, "lending/apps.py") == []


def test_a_local_name_that_no_import_binds_is_not_taken_for_the_module(tmp_path):
    """A local assignment that shadows the imported module's name is not the module's function."""
    apps = LENDING_APPS.format(imports="from lending import reminders\n        reminders = Spare()",
                               target="reminders.remind_forever")
    apps = apps.replace("from django.apps import AppConfig", "from django.apps import AppConfig\n\n"
                        "from lending.spare import Spare")
    write(tmp_path, {"lending/__init__.py": "", "lending/mailer.py": MAILER_CLASS, "lending/models.py": "",
                     "lending/spare.py": "class Spare:\n    def remind_forever(self):\n        pass\n",
                     "lending/reminders.py": REMINDERS.format(pick=UNCLAIMED_PICK), "lending/apps.py": apps})
    assert findings(tmp_path, "lending/apps.py") == []


STATEMENT_HELPER = """\
    import httpx
    from apscheduler.schedulers.background import BackgroundScheduler as Sched

    planner = Sched()


    def nightly(job{options}):
        planner.add_job(job, "cron", {spread})


    def push_report() -> None:
        httpx.post("https://reports.example.org/nightly", json={{}})


    def start() -> None:
        {register}
        planner.start()
"""


@pytest.mark.parametrize("options, spread, register, flagged", [
    (", **at", "**at", "nightly(push_report, hour=2)", True),
    ("", "hour=2", "nightly(push_report)", True),  # a helper with no options to spread
    # its value is used, so the call is not the helper's one statement; the helper still hands its parameter to
    # ``add_job``, and the caller fills it with the job (``project/handed_values``)
    (", **at", "**at", "handle = nightly(push_report, hour=2)", True),
])
def test_a_registration_made_by_a_helper_called_as_a_statement(tmp_path, options, spread, register, flagged):
    """``def nightly(job, **at): planner.add_job(job, "cron", **at)`` called as ``nightly(push_report, hour=2)`` is
    ``planner.add_job(push_report, "cron", hour=2)`` at the call: the helper only makes that call."""
    write(tmp_path, {"ops/__init__.py": "",
                     "ops/schedule.py": STATEMENT_HELPER.format(options=options, spread=spread, register=register)})
    found = findings(tmp_path, "ops/schedule.py")
    assert [code for _, code in found] == (["OG201"] if flagged else [])


PRICE_CACHE = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from sqlalchemy import select

    from svc.db import Price, Session

    PRICES = {{}}


    async def refresh_prices():
        while True:
            async with Session() as session:
                query = select(Price).where(Price.active == True)
                {narrowed}
                rows = (await session.execute(query)).scalars().all()
            PRICES.clear()
            PRICES.update({{row.sku: row.amount for row in rows}})
            await asyncio.sleep(60)


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(refresh_prices())
        yield
        task.cancel()


    api = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("narrowed", [
    "query = query.order_by(Price.sku)",
    "query = query.limit(500)\n                query = query.order_by(Price.sku)",
])
def test_a_statement_built_up_in_a_name_is_judged_by_what_it_is(tmp_path, narrowed):
    """A ``select`` narrowed in steps under one name is still a read: refreshing the process's own cache
    from it is per-replica work (the chain is followed through the name to the ``select`` it started as)."""
    write(tmp_path, {"svc/__init__.py": "", "svc/db.py": "Price = Session = None\n",
                     "svc/prices.py": PRICE_CACHE.format(narrowed=narrowed)})
    assert findings(tmp_path, "svc/prices.py", codes=("OG201", "OG204")) == []
    sent = PRICE_CACHE.format(narrowed=narrowed).replace("PRICES.clear()", "await api.state.bus.publish(rows)")
    write(tmp_path, {"svc/prices.py": sent})
    index.clear_cache()
    assert [code for _, code in findings(tmp_path, "svc/prices.py")] == ["OG201"]


# -- a Django management command deployed as a process -------------------------------------------------------
_DISPATCH = """\
    import time

    from django.core.management.base import BaseCommand

    from depot.exports import push_totals, next_slot


    class Command(BaseCommand):
        help = "Push totals every five minutes."

        def handle(self, *args, **options):
            while True:
                slot = next_slot()
                {work}
                time.sleep(300)
"""

_PUSHES = """\
    import datetime as dt

    import boto3

    bucket = boto3.client("s3")


    def push_totals() -> None:
        bucket.put_object(Bucket="totals", Key="latest.csv", Body=b"...")


    def next_slot():
        return dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0)
"""


@pytest.mark.parametrize("work, flagged", [
    ("push_totals()", True),
    ("pushed = push_totals()", True),  # a kept result: still the pass's work, seen acting outside
    ("pass", False),  # next_slot() computes a value: not a job
])
def test_a_deployed_management_commands_loop_schedules_what_it_calls(tmp_path, work, flagged):
    write(tmp_path, {"depot/__init__.py": "", "depot/exports.py": _PUSHES,
                     "depot/management/__init__.py": "", "depot/management/commands/__init__.py": "",
                     "depot/management/commands/push_loop.py": _DISPATCH.replace("{work}", work)})
    assert findings(tmp_path, "depot/management/commands/push_loop.py") == []  # nothing shows it deployed
    write(tmp_path, {"Procfile": "web: gunicorn depot.wsgi\npusher: python manage.py push_loop\n"})
    index.clear_cache()
    deployment.clear_cache()
    found = findings(tmp_path, "depot/management/commands/push_loop.py")
    assert [code for _, code in found] == (["OG201"] if flagged else [])
