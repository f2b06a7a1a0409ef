"""A project's def is judged by what it does, not by its name: ``service.run_once()`` (one pass of the work)
is no claim because onceguard's own guard has that name; a project helper whose body takes a claim is one,
whatever it is called."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVICE = """\
    import httpx
    from redis.asyncio import Redis

    redis = Redis(host="redis")


    class Reminders:
        async def {name}(self):
            {claim}
            async with httpx.AsyncClient() as client:
                await client.post("https://sms.example.com/send", json={{"to": "+100", "text": "visit"}})
"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from .service import Reminders


    async def every_minute(service: Reminders):
        while True:
            await service.{name}()
            await asyncio.sleep(60)


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(every_minute(Reminders()))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""

CLAIM = """if not await redis.set("reminders:minute", 1, nx=True, ex=55):
                return"""


@pytest.mark.parametrize("name", ["run_once", "claim_period", "send_due"])
def test_a_pass_named_like_a_guard_is_work(tmp_path, name):
    write(tmp_path, {"svc/__init__.py": "", "svc/service.py": SERVICE.format(name=name, claim="pass"),
                     "svc/app.py": APP.replace("{name}", name)})
    assert [code for _, code in findings(tmp_path, "svc/app.py")] == ["OG201"]


@pytest.mark.parametrize("name", ["run_once", "send_due"])
def test_a_pass_that_claims_first(tmp_path, name):
    write(tmp_path, {"svc/__init__.py": "", "svc/service.py": SERVICE.format(name=name, claim=CLAIM),
                     "svc/app.py": APP.replace("{name}", name)})
    assert findings(tmp_path, "svc/app.py") == []


QUEUE = """\
    class JobQueue:
        def __init__(self, conn):
            self.conn = conn

        def claim_next(self):
            with self.conn.cursor() as cur:
                cur.execute(
                    "UPDATE jobs SET state = 'running' WHERE id = (SELECT id FROM jobs WHERE state = 'queued' "
                    "ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload")
                return cur.fetchone()
"""

WORKER = """\
    import time

    import httpx
    import psycopg2

    from .queue import JobQueue


    def main():
        queue = JobQueue(psycopg2.connect("postgresql://jobs@db/jobs"))
        while True:
            job = queue.claim_next()
            if job is None:
                time.sleep(5)
                continue
            httpx.post("https://hooks.example.com/done", json={"id": job[0]})


    if __name__ == "__main__":
        main()
"""


def test_a_pass_that_asks_for_a_claimed_row_first(tmp_path):
    # A project def named for what it gives (a claim) is asked for before the work: each pass works on its own row.
    write(tmp_path, {"svc/__init__.py": "", "svc/queue.py": QUEUE, "svc/worker.py": WORKER,
                     "Procfile": "worker: python -m svc.worker\n"})
    assert findings(tmp_path, "svc/worker.py") == []
