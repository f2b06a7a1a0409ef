"""A ticker's pass that works only when a test of the date or a setting holds (``if today.day >= cfg.close_day:``,
no call in it), and whose work there leads with a claim (a helper that takes a try-lock per account and leaves
when it is taken): the test is no work and the claim leads what the pass does.  Work the pass also does after
that test, outside it, runs in every replica (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTLING = """
    import httpx
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncSession


    async def try_lock(session: AsyncSession, key: int) -> bool:
        got = await session.scalar(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key})
        return bool(got)


    async def settle(sessions, account: int) -> None:
        async with sessions() as session:
            async with session.begin():
                if not await try_lock(session, account):
                    return
                await session.execute(text("INSERT INTO settlements (account) VALUES (:a)"), {"a": account})
                async with httpx.AsyncClient() as client:
                    await client.post("https://bank.example/settle", json={"account": account})
    """

TICKER = """
    import asyncio
    import datetime

    import httpx
    from sqlalchemy import text

    {settle_import}


    async def open_accounts(sessions) -> list:
        async with sessions() as session:
            return list(await session.scalars(text("SELECT id FROM accounts WHERE open")))


    async def settle_loop(sessions, cfg) -> None:
        while True:
            today = datetime.date.today()
            if today.day >= cfg.settle_day:
                for account in await open_accounts(sessions):
                    await {settle}(sessions, account)
            {after}
            await asyncio.sleep(3600)


    async def main(sessions, cfg) -> None:
        task = asyncio.create_task(settle_loop(sessions, cfg))
        await task


    if __name__ == "__main__":
        asyncio.run(main(None, None))
    """

DOCKERFILE = """
    FROM python:3.12-slim
    COPY books ./books
    CMD ["python", "-m", "books"]
    """

COMPOSE = """
    services:
      books:
        build: .
        deploy:
          replicas: 2
    """


def _project(tmp_path, after="", settle_import="from books.settling import settle", settle="settle",
             settling=SETTLING):
    ticker = TICKER.format(settle_import=settle_import, settle=settle, after=after or "pass")
    write(tmp_path, {"books/__init__.py": "", "books/settling.py": settling, "books/__main__.py": ticker,
                     "Dockerfile": DOCKERFILE, "docker-compose.yml": COMPOSE})
    return findings(tmp_path, "books/__main__.py", codes=("OG201",))


@pytest.mark.parametrize("settle_import, settle", [
    ("from books.settling import settle", "settle"),
    ("from books import settling", "settling.settle"),
])
def test_a_gated_pass_whose_work_leads_with_a_claim(tmp_path, settle_import, settle):
    assert _project(tmp_path, settle_import=settle_import, settle=settle) == []


def test_work_after_the_gate_runs_in_every_replica(tmp_path):
    assert _project(tmp_path, after='await httpx.AsyncClient().post("https://ops.example/ping")') == [(16, "OG201")]


def test_a_gated_pass_whose_helper_claims_nothing(tmp_path):
    lock_test = "                if not await try_lock(session, account):\n                    return\n"
    unclaimed = SETTLING.replace(lock_test, "")
    assert unclaimed != SETTLING
    assert _project(tmp_path, settling=unclaimed) == [(16, "OG201"), (21, "OG201")]
