"""Work a job hands to a runner, and claims its helpers make for it.

- A library's callable handed to a runner (``await asyncio.to_thread(sdk.Refund.create, ...)``) does what it
  would do called in place: a runner is no evidence that the work stays in the process.
- Rows a helper selects ``FOR UPDATE SKIP LOCKED`` and returns are the caller's alone whatever it tests: the
  call is the job's claim, as the same select written in the job is.
- A database handle opening its own connections (``self.pool.open(wait=True)``) before a thread's loop is the
  process's set-up, not work that comes before the loop's claim.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTLEMENT_JOB = """\
    from fastapi_utilities import repeat_every

    from .bank import BankGateway
    from .db import Session
    from .ledger import LedgerRepository

    _bank = BankGateway()


    @repeat_every(seconds=300)
    async def settle_refunds() -> None:
        async with Session() as session, session.begin():
            ledger = LedgerRepository(session)
            for refund in await ledger.open_refunds(25):
                await _bank.send(refund)
                refund.state = "sent"
"""

BANK = """\
    import asyncio
    import {module}


    class BankGateway:
        async def send(self, refund) -> None:
            await asyncio.to_thread({handed}, refund.account, refund.cents)
"""

LEDGER = """\
    from sqlalchemy import select

    from .models import Refund


    class LedgerRepository:
        def __init__(self, session) -> None:
            self.session = session

        async def open_refunds(self, limit: int):
            query = select(Refund).where(Refund.state == "open").limit(limit){lock}
            return (await self.session.scalars(query)).all()
"""

MAIN = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from .jobs import settle_refunds


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await settle_refunds()
        yield


    app = FastAPI(lifespan=lifespan)
"""


def _settlement(tmp_path, module: str, handed: str, lock: str = "") -> None:
    write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'refunds'\n",
        "Dockerfile": 'FROM python:3.12\nCMD ["uvicorn", "refunds.main:app"]\n',
        "refunds/__init__.py": "", "refunds/db.py": "Session = None\n", "refunds/models.py": "Refund = None\n",
        "refunds/jobs.py": SETTLEMENT_JOB, "refunds/main.py": MAIN,
        "refunds/bank.py": BANK.format(module=module, handed=handed),
        "refunds/ledger.py": LEDGER.format(lock=lock),
    })


@pytest.mark.parametrize("module, handed, expected", [
    ("bankkit", "bankkit.Transfers.create", [(11, "OG201")]),  # the library's call, run on a thread
    ("json", "json.dumps", []),  # a computation on a thread: nothing leaves the process
])
def test_a_library_callable_handed_to_a_runner_is_judged_as_called(tmp_path, module, handed, expected):
    _settlement(tmp_path, module, handed)
    assert findings(tmp_path, "refunds/jobs.py") == expected


@pytest.mark.parametrize("lock, expected", [
    (".with_for_update(skip_locked=True)", []),
    ("", [(11, "OG201")]),
])
def test_rows_a_skip_locked_helper_returns_are_the_jobs_claim(tmp_path, lock, expected):
    _settlement(tmp_path, "bankkit", "bankkit.Transfers.create", lock=lock)
    # (the gateway calls the library in place here: the claim is what is asked, not the runner)
    write(tmp_path, {"refunds/bank.py": BANK.replace("await asyncio.to_thread({handed}, ", "{handed}(").format(
        module="bankkit", handed="bankkit.Transfers.create")})
    assert findings(tmp_path, "refunds/jobs.py") == expected


OUTBOX_WORKER = """\
    import threading

    from psycopg_pool import ConnectionPool

    from . import outbox


    class Drainer(threading.Thread):
        def __init__(self, dsn: str, send) -> None:
            super().__init__(daemon=True)
            self.pool = ConnectionPool(dsn, open=False)
            self.send = send
            self.halt = threading.Event()

        def run(self) -> None:
            {setup}
            while not self.halt.wait(5):
                self.drain()

        def drain(self) -> None:
            with self.pool.connection() as conn, conn.transaction():
                for message in outbox.take(conn):
                    self.send(message)
                    outbox.done(conn, message[0])
"""

OUTBOX = """\
    def take(conn):
        return conn.execute(
            "SELECT id, body FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 20{lock}"
        ).fetchall()


    def done(conn, message_id):
        conn.execute("UPDATE outbox SET sent_at = now() WHERE id = %s", (message_id,))
"""

GUNICORN = """\
    from mailer.worker import Drainer


    def post_fork(server, worker):
        Drainer("postgresql://db/app", print).start()
"""


@pytest.mark.parametrize("setup, lock, expected", [
    ("self.pool.open(wait=True)", " FOR UPDATE SKIP LOCKED", []),
    ("self.pool.open(wait=True)", "", [(5, "OG201")]),
    ("self.pool.wait()", " FOR UPDATE SKIP LOCKED", []),
])
def test_a_pool_opened_before_a_claiming_loop_is_set_up(tmp_path, setup, lock, expected):
    write(tmp_path, {
        "pyproject.toml": "[project]\nname = 'mailer'\n",
        "Dockerfile": 'FROM python:3.12\nCMD ["gunicorn", "-c", "gunicorn.conf.py", "mailer.web:app"]\n',
        "gunicorn.conf.py": GUNICORN, "mailer/__init__.py": "", "mailer/web.py": "app = None\n",
        "mailer/worker.py": OUTBOX_WORKER.format(setup=setup), "mailer/outbox.py": OUTBOX.format(lock=lock),
    })
    assert findings(tmp_path, "gunicorn.conf.py") == expected
