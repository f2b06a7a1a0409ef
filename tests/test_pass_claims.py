"""OG201: a ticker whose every pass calls a service method that claims the pass first (``if not await
try_xact_lock(conn, KEY): return 0`` in ``send_due``, reached through the loop's typed parameter) runs its work
on one replica per pass; a method that claims nothing leaves the ticker reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SERVICE = """\
    import httpx
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncEngine

    DUE = text("SELECT id FROM invoices WHERE paid_at IS NULL AND reminded_at IS NULL")
    MARK = text("UPDATE invoices SET reminded_at = now() WHERE id = :id")


    async def try_xact_lock(conn, key: int) -> bool:
        return bool((await conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {{"k": key}})).scalar())


    class Reminders:
        def __init__(self, engine: AsyncEngine) -> None:
            self._engine = engine

        async def send_due(self) -> int:
            async with self._engine.begin() as conn:
                {claim}
                rows = (await conn.execute(DUE)).all()
                for row in rows:
                    httpx.post("https://mail.example.org/send", json={{"invoice": row.id}}, timeout=10)
                    await conn.execute(MARK, {{"id": row.id}})
                return len(rows)
"""

LOOP = """\
    import asyncio
    import logging

    from dues.service import Reminders

    log = logging.getLogger(__name__)


    async def run_forever(service: Reminders, every: int) -> None:
        while True:
            try:
                sent = await service.send_due()
                log.info("sent %d", sent)
            except Exception:
                log.exception("sweep failed")
            await asyncio.sleep(every)
"""

APP = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from sqlalchemy.ext.asyncio import create_async_engine

    from dues.loop import run_forever
    from dues.service import Reminders


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine = create_async_engine("postgresql+asyncpg://app@db/app")
        task = asyncio.create_task(run_forever(Reminders(engine), 300))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("claim, expected", [
    ("if not await try_xact_lock(conn, 4401):\n                    return 0", []),
    ("pass", [(14, "OG201")]),
])
def test_a_ticker_whose_pass_claims_in_a_service_method(tmp_path, claim, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'dues'\n", "dues/__init__.py": "",
                     "dues/service.py": SERVICE.format(claim=claim), "dues/loop.py": LOOP, "dues/app.py": APP})
    assert findings(tmp_path, "dues/app.py") == expected
