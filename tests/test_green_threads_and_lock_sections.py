"""OG201: a ticker started as a green thread (``gevent.spawn(poll, app)``) from an app factory is a ticker like
one started as a thread or a task.  OG302: rows picked inside a project context manager that waits for a
blocking advisory lock before it yields are picked by one replica at a time.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

POLLER = """\
    import gevent
    import requests


    def poll(app) -> None:
        while True:
            requests.post(app.config["HOOK_URL"], json={"ping": True}, timeout=5)
            gevent.sleep(30)
"""

FACTORY = """\
    import gevent
    from flask import Flask

    from pinger.poller import poll


    def create_app() -> Flask:
        app = Flask(__name__)
        {start}
        return app
"""


@pytest.mark.parametrize("start, expected", [
    ("gevent.spawn(poll, app)", [(9, "OG201")]),
    ("gevent.spawn_later(10, poll, app)", [(9, "OG201")]),
    ("app.extensions['poll'] = poll", []),
])
def test_a_green_thread_ticker_started_by_the_app_factory(tmp_path, start, expected):
    write(tmp_path, {"pinger/__init__.py": "", "pinger/poller.py": POLLER,
                     "pinger/factory.py": FACTORY.replace("{start}", start)})
    assert findings(tmp_path, "pinger/factory.py", codes=("OG201",)) == expected


LOCKS = """\
    from contextlib import asynccontextmanager


    @asynccontextmanager
    async def serialised(pool, key: int):
        async with pool.acquire() as conn:
            await conn.execute("SELECT {function}($1)", key)
            try:
                yield conn
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", key)
"""

SWEEP = """\
    import httpx

    from refunds.locks import serialised


    async def sweep(pool) -> None:
        async with serialised(pool, 71):
            rows = await pool.fetch("SELECT id FROM refunds WHERE status = 'approved' LIMIT 20")
            for row in rows:
                await httpx.AsyncClient().post("https://psp.example.org/refunds", json={"id": row["id"]})
                await pool.execute("UPDATE refunds SET status = 'sent' WHERE id = $1", row["id"])
"""


@pytest.mark.parametrize("function, expected", [("pg_advisory_lock", []), ("pg_try_advisory_lock", [(8, "OG302")])])
def test_a_pickup_inside_a_section_that_waits_for_its_lock(tmp_path, function, expected):
    write(tmp_path, {"refunds/__init__.py": "", "refunds/locks.py": LOCKS.replace("{function}", function),
                     "refunds/sweep.py": SWEEP})
    assert findings(tmp_path, "refunds/sweep.py", codes=("OG302",)) == expected
