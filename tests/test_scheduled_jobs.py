"""Scheduled-work rules (OG201-OG203): cases that do not fit the rule docs."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from onceguard.project import index as project
from onceguard.project.claims import ClaimAnalyzer
from onceguard.config import from_mapping
from onceguard.analysis.context import FileContext
from onceguard.engine.check import check_source
from onceguard.analysis.facts import ModuleFacts
from onceguard.rules.scheduled_jobs import ImplicitScheduleTimezone, LoudSkipLog, UnguardedScheduledJob

RULES = (UnguardedScheduledJob(), ImplicitScheduleTimezone(), LoudSkipLog())


def run(source: str, tmp_path: Path, rel: str = "app/jobs.py", cross_file: bool = False, **config):
    """(line, code) findings of the scheduled-work rules for one file written under ``tmp_path``."""
    source = textwrap.dedent(source)
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    cfg = from_mapping(config, root=str(tmp_path))
    if not cross_file:
        return sorted((d.line, d.code) for d in check_source(source.encode(), str(path), cfg, rules=RULES))
    facts = ModuleFacts(ast.parse(source), FileContext(str(path), cfg, cross_file=True), source.splitlines())
    return sorted((d.line, d.code) for rule in RULES for d in rule.check(facts))


def write(tmp_path: Path, rel: str, source: str) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture(autouse=True)
def _fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


# -- cross-file resolution (CLI) ------------------------------------------------------------------
SCHEDULER = """\
from apscheduler.schedulers.background import BackgroundScheduler

from app import jobs
from app.jobs import send_digest, guarded_digest

sched = BackgroundScheduler(timezone="UTC")
sched.add_job(send_digest, "interval", hours=1)
sched.add_job(guarded_digest, "interval", hours=1)
sched.add_job(jobs.purge, "interval", minutes=5)
sched.add_job("app.jobs:purge", "interval", minutes=5)
sched.add_job("app.jobs:guarded_digest", "interval", minutes=5)
sched.start()
"""

JOBS = """\
from app.leases import claim_period
from app.mail import deliver_digest


def send_digest():
    deliver_digest()


def guarded_digest():
    if not claim_period("digest", 3600):
        return
    deliver_digest()


def purge():
    from app.db import delete_expired

    delete_expired()
"""


def test_cross_file_job_is_reported_at_the_registration(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/jobs.py", JOBS)
    assert run(SCHEDULER, tmp_path, "app/scheduler.py", cross_file=True) == [
        (7, "OG201"), (9, "OG201"), (10, "OG201"),
    ]


def test_cross_file_job_is_silent_for_flake8(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/jobs.py", JOBS)
    assert run(SCHEDULER, tmp_path, "app/scheduler.py", cross_file=False) == []


def test_cross_file_under_src_and_claiming_helper_in_other_module(tmp_path):
    write(tmp_path, "src/svc/__init__.py", "")
    write(tmp_path, "src/svc/locks.py", """\
        import redis

        r = redis.Redis()


        def take(name):
            return r.set(name, "1", nx=True, ex=60)
    """)
    source = """\
        from apscheduler.schedulers.background import BackgroundScheduler

        from svc.locks import take

        sched = BackgroundScheduler(timezone="UTC")


        def sweep():
            if not take("sweep"):
                return
            do_sweep()


        sched.add_job(sweep, "interval", minutes=1)
    """
    assert run(source, tmp_path, "src/svc/sched.py", cross_file=True) == []
    # flake8 cannot see svc/locks.py: the call is not provably a claim, the job is reported at its def.
    assert run(source, tmp_path, "src/svc/sched.py", cross_file=False) == [(8, "OG201")]


def test_project_parses_each_file_once(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/jobs.py", JOBS)
    cfg = from_mapping({}, root=str(tmp_path))
    first = project.find_function("app.jobs.send_digest", cfg)
    second = project.find_function("app.jobs:purge", cfg)
    assert first is not None and second is not None
    assert first[1] is second[1]
    assert first[0].name == "send_digest" and second[0].name == "purge"
    assert project.find_function("app.jobs.missing", cfg) is None
    assert project.find_function("app.nothing.here", cfg) is None


def test_project_records_the_files_a_check_reads(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/jobs.py", JOBS)
    with project.recording() as deps:
        run(SCHEDULER, tmp_path, "app/scheduler.py", cross_file=True)
    assert str((tmp_path / "app" / "jobs.py").resolve()) in {str(Path(p).resolve()) for p in deps}


def test_cross_file_scheduler_binding(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/extensions.py", """\
        from flask_apscheduler import APScheduler

        scheduler = APScheduler()
    """)
    source = """\
        from app.extensions import scheduler


        @scheduler.task("interval", id="ping", seconds=30)
        def ping_upstreams():
            from app.health import ping_all

            ping_all()
    """
    assert run(source, tmp_path, "app/tasks.py", cross_file=True) == [(5, "OG201")]
    assert run(source, tmp_path, "app/tasks.py", cross_file=False) == []


# -- argument order and binding --------------------------------------------------------------------
def test_flask_apscheduler_add_job_takes_id_first(tmp_path):
    source = """\
        from flask_apscheduler import APScheduler

        scheduler = APScheduler()


        def expire_carts():
            from app.carts import expire

            expire()


        def unrelated():
            pass


        scheduler.add_job("expire_carts", expire_carts, trigger="interval", minutes=15)
        scheduler.add_job("one_off", expire_carts)
    """
    assert run(source, tmp_path) == [(6, "OG201")]


def test_flask_apscheduler_one_off_without_trigger_is_clean(tmp_path):
    source = """\
        from flask_apscheduler import APScheduler

        scheduler = APScheduler()


        def warm_cache():
            from app.cache import warm

            warm()


        scheduler.add_job("warm", warm_cache)
    """
    assert run(source, tmp_path) == []


def test_apscheduler3_add_job_without_trigger_is_a_one_off(tmp_path):
    source = """\
        from apscheduler.schedulers.background import BackgroundScheduler

        sched = BackgroundScheduler(timezone="UTC")


        def warm():
            from app.cache import warm_all

            warm_all()


        sched.add_job(warm)
        sched.add_job(warm, "date", run_date="2030-01-01 00:00:00", timezone="UTC")
    """
    assert run(source, tmp_path) == []


def test_apscheduler4_add_job_is_a_one_off(tmp_path):
    source = """\
        from apscheduler import Scheduler


        def warm():
            from app.cache import warm_all

            warm_all()


        with Scheduler() as scheduler:
            scheduler.add_job(warm)
            scheduler.run_until_stopped()
    """
    assert run(source, tmp_path) == []


def test_scheduler_bound_on_self(tmp_path):
    source = """\
        from apscheduler.schedulers.background import BackgroundScheduler


        class Service:
            def __init__(self):
                self.sched = BackgroundScheduler(timezone="UTC")

            def refresh(self):
                from app.rates import refresh_all

                refresh_all()

            def start(self):
                self.sched.add_job(self.refresh, "interval", minutes=5)
                self.sched.start()
    """
    assert run(source, tmp_path) == [(8, "OG201")]


def test_names_that_only_look_like_schedulers_are_not_trusted(tmp_path):
    source = """\
        from app.plugins import get_scheduler

        scheduler = get_scheduler()
        huey = get_scheduler()


        def job():
            from app.x import work

            work()


        def make(schedule):
            schedule.every(5).minutes.do(job)


        scheduler.add_job(job, "interval", minutes=1)
        scheduler.scheduled_job("cron", hour=1)(job)


        @huey.periodic_task(lambda dt: True)
        def other():
            job()
    """
    assert run(source, tmp_path) == []


def test_shadowed_schedule_module_and_shadowed_job_name(tmp_path):
    source = """\
        import schedule


        def send():
            from app.mail import send_all

            send_all()


        def install(schedule):
            schedule.every(5).minutes.do(send)


        def install_other():
            send = make_sender()
            schedule.every(5).minutes.do(send)
    """
    assert run(source, tmp_path) == []


def test_schedule_instance_and_from_import(tmp_path):
    source = """\
        from schedule import Scheduler, every


        def send():
            from app.mail import send_all

            send_all()


        def flush():
            from app.metrics import flush_all

            flush_all()


        local = Scheduler()
        local.every(10).seconds.do(send)
        every(1).minutes.do(flush)
    """
    assert run(source, tmp_path) == [(4, "OG201"), (10, "OG201")]


def test_shadowed_job_name_in_decorator_is_still_the_decorated_def(tmp_path):
    source = """\
        from huey.contrib.djhuey import db_periodic_task, periodic_task
        from huey import crontab


        @periodic_task(crontab(minute="*/5"))
        def expire_holds():
            from shop.holds import expire

            expire()


        @db_periodic_task(crontab(minute="*/5"))
        def expire_quotes():
            from shop.quotes import expire

            expire()
    """
    assert run(source, tmp_path) == [(6, "OG201"), (13, "OG201")]


# -- tickers, timers, start-up ---------------------------------------------------------------------
def test_ticker_not_started_at_startup_is_not_reported(tmp_path):
    source = """\
        import asyncio


        async def ticker():
            while True:
                await refresh()
                await asyncio.sleep(5)


        if __name__ == "__main__":
            asyncio.run(ticker())
    """
    assert run(source, tmp_path) == []


def test_ticker_with_claim_per_iteration_and_thread_ticker(tmp_path):
    source = """\
        import threading
        import time

        from django.apps import AppConfig
        from django.core.cache import cache

        from shop.stock import sync


        def guarded_loop():
            while True:
                if cache.add("stock-sync", "1", 60):
                    sync()
                time.sleep(60)


        def loud_loop():
            while True:
                sync()
                time.sleep(60)


        class ShopConfig(AppConfig):
            name = "shop"

            def ready(self):
                threading.Thread(target=guarded_loop, daemon=True).start()
                threading.Thread(target=loud_loop, daemon=True).start()
    """
    assert run(source, tmp_path) == [(17, "OG201")]


def test_timer_method_rearming_itself_and_timer_in_finally(tmp_path):
    source = """\
        import threading

        from app.leases import claim_period


        class Heartbeat:
            def beat(self):
                try:
                    self.publish()
                finally:
                    threading.Timer(30, self.beat).start()

            def publish(self):
                notify_subscribers()


        def sweep():
            timer = threading.Timer(60, sweep)
            timer.daemon = True
            timer.start()
            if not claim_period("sweep", 60):
                return
            do_sweep()
    """
    # publish() calls something whose effect is unknown: reported.
    assert run(source, tmp_path) == [(7, "OG201")]


def test_timer_first_started_by_a_script_main_block_is_that_script_own(tmp_path):
    # A loop started only where a person runs the file as a program runs in that one process, as a ticker
    # started there does (``test_ticker_not_started_at_startup_is_not_reported``).
    source = """\
        import threading

        from app.deploy import pull_and_restart


        def poll_projects():
            pull_and_restart()
            threading.Timer(60, poll_projects).start()


        if __name__ == "__main__":
            poll_projects()
    """
    assert run(source, tmp_path, rel="app/autodeploy.py") == []
    # The same loop, first started by a server's __main__ block or by start-up code: every replica runs it.
    served = textwrap.dedent(source).replace(
        'if __name__ == "__main__":\n    poll_projects()',
        'if __name__ == "__main__":\n    poll_projects()\n    uvicorn.run("app.api:app")')
    assert run("import uvicorn\n" + served, tmp_path, rel="app/served.py") == [(7, "OG201")]
    hooked = textwrap.dedent(source).replace(
        'if __name__ == "__main__":\n    poll_projects()',
        'app = FastAPI()\n\n\n@app.on_event("startup")\ndef start():\n    poll_projects()')
    assert run("from fastapi import FastAPI\n" + hooked, tmp_path, rel="app/hooked.py") == [(7, "OG201")]


def test_timer_first_started_by_a_worker_main_block_is_reported(tmp_path):
    # A __main__ block that never returns (it runs a scheduler's loop forever) is a worker a deployment keeps
    # up in every replica; a loop that a break or return leaves is a program that ends.
    source = """\
        import threading
        import time

        from app.deploy import pull_and_restart


        def poll_projects():
            pull_and_restart()
            threading.Timer(60, poll_projects).start()


        def serve_forever():
            poll_projects()
            while True:
                time.sleep(1)


        if __name__ == "__main__":
            serve_forever()
    """
    assert run(source, tmp_path, rel="app/worker.py") == [(7, "OG201")]
    ending = textwrap.dedent(source).replace("        time.sleep(1)", "        if time.sleep(1) is None:\n            break")
    assert run(ending, tmp_path, rel="app/ending.py") == []
    returning = textwrap.dedent(source).replace("    while True:\n        time.sleep(1)", "    for _ in range(3):\n        time.sleep(1)")
    assert run(returning, tmp_path, rel="app/returning.py") == []


def test_timer_in_a_program_the_deployment_runs_is_reported(tmp_path):
    source = """\
        import threading

        from app.deploy import pull_and_restart


        def poll_projects():
            pull_and_restart()
            threading.Timer(60, poll_projects).start()


        if __name__ == "__main__":
            poll_projects()
    """
    write(tmp_path, "Procfile", "web: gunicorn app.api:app\npoller: python app/autodeploy.py\n")
    assert run(source, tmp_path, rel="app/autodeploy.py", cross_file=True) == [(6, "OG201")]


# -- claims ---------------------------------------------------------------------------------------
def test_configured_claim_function(tmp_path):
    source = """\
        from apscheduler.schedulers.background import BackgroundScheduler

        from app.locking import grab

        sched = BackgroundScheduler(timezone="UTC")


        def job():
            if not grab("job"):
                return
            from app.x import work

            work()


        sched.add_job(job, "interval", minutes=1)
    """
    assert run(source, tmp_path) == [(8, "OG201")]
    assert run(source, tmp_path, **{"claim-functions": ["app.locking.grab"]}) == []


def test_psycopg_cursor_try_lock_fetched_then_tested(tmp_path):
    source = """\
        import logging

        import psycopg
        import schedule

        log = logging.getLogger(__name__)


        def rollup():
            with psycopg.connect("dbname=app") as conn, conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_xact_lock(%s)", (8801,))
                (acquired,) = cur.fetchone()
                if not acquired:
                    log.error("rollup running elsewhere")
                    return
                cur.execute("INSERT INTO rollups SELECT now(), count(*) FROM events")


        schedule.every(5).minutes.do(rollup)
    """
    assert run(source, tmp_path) == [(14, "OG203")]


_STANDBY = """\
    import logging
    import time

    import redis

    log = logging.getLogger(__name__)
    r = redis.Redis()


    class Standby:
        def __init__(self) -> None:
            self.primary = False

        def tick(self) -> None:
            if self.primary:
                self.primary = bool(r.expire("standby:primary", 30))
                if not self.primary:
                    log.warning("primary role dropped")
            else:
                self.primary = bool(r.set("standby:primary", "me", nx=True, ex=30))
                if not self.primary:
                    log.warning("another node is primary")
            if self.primary:
                r.incr("standby:beats")


    def main() -> None:
        node = Standby()
        while True:
            node.tick()
            time.sleep(10)


    if __name__ == "__main__":
        main()
"""


def test_a_lost_renewal_is_a_failure_and_a_lost_acquisition_is_the_skip(tmp_path):
    # The claim tested is the one written ahead of the test: the other arm's SET NX is not what the renewal's
    # branch reads, and the attribute tested is ``self.primary``, not every name written on ``self``.
    lines = textwrap.dedent(_STANDBY).splitlines()
    skip = next(i for i, line in enumerate(lines, 1) if "another node is primary" in line)
    assert [f for f in run(_STANDBY, tmp_path) if f[1] == "OG203"] == [(skip, "OG203")]


def test_claim_result_ignored_is_not_a_claim(tmp_path):
    source = """\
        import redis
        import schedule

        r = redis.Redis()


        def rollup():
            r.set("rollup", "1", nx=True, ex=60)
            from app.x import work

            work()


        schedule.every(5).minutes.do(rollup)
    """
    assert run(source, tmp_path) == [(7, "OG201")]


def test_work_before_claim_is_reported(tmp_path):
    source = """\
        import schedule

        from app.leases import claim_period
        from app.metrics import statsd


        def rollup():
            statsd.incr("rollup.started")
            if not claim_period("rollup", 300):
                return
            from app.x import work

            work()


        schedule.every(5).minutes.do(rollup)
    """
    assert run(source, tmp_path) == [(7, "OG201")]


def test_blocking_thread_lock_is_not_a_claim(tmp_path):
    source = """\
        import threading

        import schedule

        lock = threading.Lock()


        def rollup():
            if not lock.acquire(blocking=False):
                return
            from app.x import work

            work()


        schedule.every(5).minutes.do(rollup)
    """
    assert run(source, tmp_path) == [(8, "OG201")]


def test_per_row_claim_once_in_loop_is_a_claim(tmp_path):
    source = """\
        from huey import RedisHuey, crontab

        from app.leases import claim_once
        from app.billing import due_warnings, send_warning

        huey = RedisHuey("app")


        @huey.periodic_task(crontab(minute="*/10"))
        def seven_day_warnings():
            for period in due_warnings():
                if not claim_once(f"warn7:{period.id}", ttl=8 * 86400):
                    continue
                send_warning(period)
    """
    assert run(source, tmp_path) == []


def test_single_scheduler_families_only_when_enabled(tmp_path):
    source = """\
        from celery import Celery
        from django_celery_beat.models import PeriodicTask
        from rq_scheduler import Scheduler

        app = Celery("proj")
        rq = Scheduler(connection=None)


        @app.task(name="proj.cleanup")
        def cleanup():
            from proj.db import vacuum

            vacuum()


        def compact():
            from proj.db import compact_all

            compact_all()


        app.conf.beat_schedule = {"cleanup": {"task": "proj.cleanup", "schedule": 300.0}}
        rq.cron("*/5 * * * *", compact)
        PeriodicTask.objects.update_or_create(name="cleanup", defaults={"task": "proj.cleanup"})
    """
    assert run(source, tmp_path) == []
    assert run(source, tmp_path, **{"single-scheduler": False}) == [(10, "OG201"), (16, "OG201")]


def test_tests_directory_is_exempt(tmp_path):
    source = """\
        import schedule


        def job():
            from app.x import work

            work()


        schedule.every().day.at("07:00").do(job)
    """
    assert run(source, tmp_path, rel="tests/test_sched.py") == []
    assert run(source, tmp_path, rel="app/sched.py") == [(4, "OG201"), (10, "OG202")]


# -- OG203 fix ------------------------------------------------------------------------------------
def test_loud_skip_log_carries_safe_fix(tmp_path):
    source = textwrap.dedent("""\
        import logging

        from app.leases import claim_period

        log = logging.getLogger(__name__)


        def sweep():
            if not claim_period("sweep", 60):
                log.warning("skip")
                return
            if not claim_period("other", 60):
                log.exception("skip")
                return
    """)
    path = tmp_path / "app" / "sweep.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    found = check_source(source.encode(), str(path), from_mapping({}, root=str(tmp_path)), rules=RULES)
    by_line = {d.line: d for d in found}
    assert sorted(by_line) == [10, 13]
    assert by_line[10].fix is not None and by_line[10].fix.kind == "log-level-debug"
    assert by_line[10].fix.applicability == "safe"
    assert by_line[13].fix is None


def test_helper_recursion_terminates(tmp_path):
    source = """\
        import schedule


        def a():
            b()


        def b():
            send_digest()
            a()


        schedule.every(1).minutes.do(a)
    """
    assert run(source, tmp_path) == [(4, "OG201")]


def test_claim_analyzer_reports_first_work(tmp_path):
    source = textwrap.dedent("""\
        def job():
            '''Doc.'''
            key = "x"
            send(key)
    """)
    facts = ModuleFacts(ast.parse(source), FileContext(str(tmp_path / "m.py"), from_mapping({})), [])
    lead = ClaimAnalyzer.of_module(facts).lead(facts.functions[0])
    assert not lead.claimed and lead.first_work.lineno == 4


# -- what a ticker's reads do (effects): files opened for reading -----------------------------------------
@pytest.mark.parametrize("call, reads", [
    ("open(path)", True),
    ("open(path, 'rb')", True),
    ("open(path, mode='r', encoding='utf-8')", True),
    ("open(path, 'a')", False),
    ("open(path, 'r+')", False),
    ("open(path, 'wb')", False),
    ("open(path, mode)", False),  # a mode the code does not fix
    ("open(path, **options)", False),
])
def test_a_file_opened_for_reading_only_is_no_effect(call, reads):
    from onceguard.project.summaries import _reads_a_file

    node = ast.parse(call, mode="eval").body
    assert _reads_a_file(node, "open") is reads


@pytest.mark.parametrize("interface", [
    "class Sender(Protocol):\n    def send_digest(self, to: str) -> None: ...",
    "class Sender(ABC):\n    @abstractmethod\n    def send_digest(self, to: str) -> None:\n        \"\"\"Deliver the digest.\"\"\"",
    "class Sender:\n    def send_digest(self, to: str) -> None:\n        raise NotImplementedError",
])
def test_a_call_through_an_interface_method_is_unknown_work(tmp_path, interface):
    # The job's only effect goes through a type whose method has no body of its own: what runs is another
    # class's, so the call is judged as an unknown one (a possible effect), not as the stub's nothing.
    source = (
        "from abc import ABC, abstractmethod\nfrom typing import Protocol\n\n"
        "from apscheduler.schedulers.background import BackgroundScheduler\n\n\n"
        + interface + "\n\n\n"
        "class Digest:\n"
        "    def __init__(self, sender: Sender) -> None:\n"
        "        self.sender = sender\n\n"
        "    def run(self) -> None:\n"
        "        self.sender.send_digest(\"ops@example.org\")\n\n\n"
        "def start(sender: Sender) -> None:\n"
        "    scheduler = BackgroundScheduler()\n"
        "    scheduler.add_job(Digest(sender).run, \"interval\", hours=24)\n"
        "    scheduler.start()\n"
    )
    found = run(source, tmp_path)
    run_line = source.splitlines().index("    def run(self) -> None:") + 1
    assert (run_line, "OG201") in found
