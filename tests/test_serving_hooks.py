"""Tickers every server process starts, however the framework spells its start: a hook handed from another
module (aiohttp's ``app.on_startup.append(start)``), Quart's ``@app.before_serving``, Sanic's
``@app.listener("after_server_start")`` with ``app.add_task(...)``, and two functions that re-arm a
``threading.Timer`` for each other.  A job the deployment runs in one scheduling process picks its rows one run
at a time (OG302), through the helpers it calls too."""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOOP = """\
    import asyncio

    import httpx


    async def report_forever(interval: float) -> None:
        while True:
            await httpx.AsyncClient().post("https://billing.example/usage", json={"ok": True})
            await asyncio.sleep(interval)


    async def start(app) -> None:
        app["reporter"] = asyncio.create_task(report_forever(900))
"""

AIOHTTP = """\
    from aiohttp import web

    from meter.background import start


    def create() -> web.Application:
        app = web.Application()
        app.on_startup.append(start)
        return app
"""


def test_a_ticker_started_by_a_hook_another_module_hands_to_aiohttp(tmp_path):
    write(tmp_path, {"meter/__init__.py": "", "meter/background.py": LOOP, "meter/main.py": AIOHTTP})
    assert [code for _, code in findings(tmp_path, "meter/background.py")] == ["OG201"]


QUART = """\
    import asyncio

    import httpx
    from quart import Quart

    app = Quart(__name__)


    async def remind_forever() -> None:
        while True:
            await httpx.AsyncClient().post("https://sms.example/send", json={"to": "all"})
            await asyncio.sleep(3600)


    @app.before_serving
    async def start_reminders() -> None:
        asyncio.create_task(remind_forever())
"""

SANIC = """\
    import asyncio

    import httpx
    from sanic import Sanic

    app = Sanic("keys")


    async def rotate_forever() -> None:
        while True:
            await httpx.AsyncClient().post("https://partner.example/keys/rotate")
            await asyncio.sleep(86400)


    @app.listener("after_server_start")
    async def start_rotation(app: Sanic, loop) -> None:
        app.add_task(rotate_forever())
"""


@pytest.mark.parametrize("source", [QUART, SANIC], ids=["quart-before-serving", "sanic-listener-add-task"])
def test_a_ticker_a_serving_hook_starts(tmp_path, source):
    write(tmp_path, {"svc/__init__.py": "", "svc/app.py": source})
    assert [code for _, code in findings(tmp_path, "svc/app.py")] == ["OG201"]


TIMERS = """\
    import threading

    import httpx

    _timer = None


    def _tick() -> None:
        try:
            httpx.post("https://hooks.example/overdue")
        finally:
            _arm()


    def _arm() -> None:
        global _timer
        _timer = threading.Timer(600, _tick)
        _timer.daemon = True
        _timer.start()


    def start() -> None:
        _arm()
"""


def test_two_functions_that_re_arm_a_timer_for_each_other(tmp_path):
    write(tmp_path, {"rent/__init__.py": "", "rent/timers.py": TIMERS,
                     "gunicorn.conf.py": "def post_fork(server, worker):\n    from rent.timers import start\n\n"
                                         "    start()\n"})
    found = findings(tmp_path, "rent/timers.py")
    line = next(i for i, text in enumerate(textwrap.dedent(TIMERS).splitlines(), 1) if "def _tick" in text)
    assert found == [(line, "OG201")]


NOTICES = """\
    import smtplib

    import psycopg


    def send_notices() -> None:
        with psycopg.connect("postgresql://db/kennel") as conn:
            for (vid, email) in conn.execute("SELECT id, email FROM vaccinations WHERE noticed_at IS NULL").fetchall():
                with smtplib.SMTP("mail") as smtp:
                    smtp.sendmail("k@example.com", [email], "renew")
                conn.execute("UPDATE vaccinations SET noticed_at = now() WHERE id = %s", (vid,))
"""

TASKS = """\
    from huey import RedisHuey, crontab

    from kennel.notices import send_notices

    huey = RedisHuey("kennel")


    @huey.periodic_task(crontab(minute="*/30"))
    def sweep() -> None:
        send_notices()
"""

CONSUMERS = """\
    services:
      consumers:
        build: .
        command: ["huey_consumer", "kennel.tasks.huey", "-w", "4"{flag}]
        deploy:
          replicas: 2
"""


@pytest.mark.parametrize("flag, expected", [("", ["OG302"]), (', "-n"', [])], ids=["every-consumer", "no-periodic"])
def test_rows_picked_by_a_helper_of_a_job_one_scheduling_process_runs(tmp_path, flag, expected):
    files = {"kennel/__init__.py": "", "kennel/notices.py": NOTICES, "kennel/tasks.py": TASKS,
             "docker-compose.yml": CONSUMERS.format(flag=flag)}
    write(tmp_path, files)
    assert [code for _, code in findings(tmp_path, "kennel/notices.py", codes=("OG302",))] == expected
