"""A ticker's pass that first tests the clock it read (``if now.weekday() == 0 and now.hour >= 6:``) and only
then works decides when, not what: the work behind the test is judged as the pass's first work, and a claim
leading it (here per item, in the helper the pass calls) claims the pass."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TICKER = """
    import asyncio
    {clock_import}

    import httpx
    from quart import Quart

    app = Quart(__name__)


    async def first_time(pool, account: int, week) -> bool:
        won = await pool.fetchval(
            "INSERT INTO digests_sent (account, week) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING account",
            account, week)
        return won is not None


    async def send_digests(pool, week) -> None:
        for account in await pool.fetch("SELECT id FROM accounts WHERE digest_enabled"):
            {claim}
            await httpx.AsyncClient().post("https://mail.example/digest", json={{"account": account["id"]}})


    async def digest_forever(pool) -> None:
        while True:
            now = {clock}
            if now.weekday() == 0 and now.hour >= 6:
                await send_digests(pool, now.date())
            await asyncio.sleep(600)


    @app.before_serving
    async def start() -> None:
        asyncio.create_task(digest_forever(app.pool))
    """

CLAIMED = """if not await first_time(pool, account["id"], week):
                continue"""
UNCLAIMED = "pass"
FROM_IMPORT = ("from datetime import datetime, timezone", "datetime.now(timezone.utc)")
MODULE_IMPORT = ("import datetime", "datetime.datetime.now(datetime.timezone.utc)")


def _project(tmp_path, claim: str, style) -> None:
    clock_import, clock = style
    write(tmp_path, {"digest/__init__.py": "", "digest/app.py": TICKER.format(
        claim=claim, clock_import=clock_import, clock=clock)})


def test_a_pass_behind_a_clock_test_claiming_each_item(tmp_path):
    _project(tmp_path, CLAIMED, FROM_IMPORT)
    assert findings(tmp_path, "digest/app.py") == []


def test_module_import_style(tmp_path):
    _project(tmp_path, CLAIMED, MODULE_IMPORT)
    assert findings(tmp_path, "digest/app.py") == []


def test_a_pass_behind_a_clock_test_without_a_claim(tmp_path):
    _project(tmp_path, UNCLAIMED, FROM_IMPORT)
    assert findings(tmp_path, "digest/app.py") == [(24, "OG201")]


TESTS_A_READ = TICKER.replace("if now.weekday() == 0 and now.hour >= 6:",
                              "if now.weekday() == 0 and app.redis.get('on'):")


def test_a_test_that_reads_a_store_is_work(tmp_path):
    write(tmp_path, {"digest/__init__.py": "", "digest/app.py": TESTS_A_READ.format(
        claim=CLAIMED, clock_import=FROM_IMPORT[0], clock=FROM_IMPORT[1])})
    assert findings(tmp_path, "digest/app.py") == [(25, "OG201")]
