"""A project class that repeats the callable its constructor is handed (a thread's loop, a timer that re-arms
itself) runs the work each construction hands it. Handed a bound method of an object start-up code makes
(``Every(3600, digests.send)`` with ``digests = Digests(...)`` a local there), that method's claim guards every
run; without one, the repeater is reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

THREAD_REPEATER = """
    import threading
    import time


    class Every:
        def __init__(self, seconds, work):
            self.seconds = seconds
            self.work = work

        def start(self):
            threading.Thread(target=self._loop, daemon=True).start()

        def _loop(self):
            while True:
                self.work()
                time.sleep(self.seconds)
    """

TIMER_REPEATER = """
    import threading


    class Every:
        def __init__(self, seconds, work):
            self.seconds = seconds
            self.work = work

        def start(self):
            self._arm(0)

        def _arm(self, delay):
            timer = threading.Timer(delay, self._tick)
            timer.daemon = True
            timer.start()

        def _tick(self):
            try:
                self.work()
            finally:
                self._arm(self.seconds)
    """

DIGESTS = """
    import smtplib


    class Digests:
        def __init__(self, client):
            self.client = client

        def send(self):
            {claim}with smtplib.SMTP("mail") as smtp:
                smtp.sendmail("reports@example.com", ["team@example.com"], "digest")
    """

CLAIM = """if not self.client.set("digest", "1", nx=True, ex=3500):
                return
            """

APP = """
    from contextlib import asynccontextmanager

    import redis
    from fastapi import FastAPI

    from mailer.digests import Digests
    from mailer.repeat import Every


    @asynccontextmanager
    async def lifespan(app):
        digests = Digests(redis.Redis())
        Every(3600, digests.send).start()
        yield


    app = FastAPI(lifespan=lifespan)
    """


@pytest.mark.parametrize("repeater", [THREAD_REPEATER, TIMER_REPEATER])
@pytest.mark.parametrize("claim", [CLAIM, ""])
def test_a_bound_method_handed_to_a_repeater_class(tmp_path, repeater, claim):
    write(tmp_path, {"mailer/__init__.py": "", "mailer/repeat.py": repeater, "mailer/app.py": APP,
                     "mailer/digests.py": DIGESTS.format(claim=claim),
                     "Dockerfile": 'FROM python:3.11\nCMD ["uvicorn", "mailer.app:app", "--workers", "4"]\n'})
    reported = findings(tmp_path, "mailer/repeat.py") + findings(tmp_path, "mailer/app.py")
    assert bool(reported) == (not claim), reported
