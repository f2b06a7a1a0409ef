"""OG201: a generic ticker class calls the job its constructions hand it (``self.job(day)`` with ``self.job =
job`` in ``__init__``, built as ``DailyTicker(8, partial(send_report, app))``): a claim leading that function
claims each pass; without one the ticker is reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TICKER = """\
    import asyncio
    from datetime import datetime, timezone


    class DailyTicker:
        def __init__(self, hour, job):
            self.hour = hour
            self.job = job
            self._last = None

        async def run(self):
            while True:
                now = datetime.now(timezone.utc)
                if now.hour == self.hour and self._last != now.date():
                    self._last = now.date()
                    await self.job(now.date())
                await asyncio.sleep(30)
"""

REPORT = """\
    import httpx


    async def send_report(app, day):
        {claim}
        async with httpx.AsyncClient() as client:
            await client.post("https://hooks.example.org/sales", json={{"day": day.isoformat()}})
"""

APP = """\
    import asyncio
    from functools import partial

    from aiohttp import web
    from redis.asyncio import Redis

    from sales.report import send_report
    from sales.ticker import DailyTicker


    async def tickers(app):
        app["redis"] = Redis.from_url("redis://redis")
        task = asyncio.create_task(DailyTicker(6, partial(send_report, app)).run())
        yield
        task.cancel()


    def make_app():
        app = web.Application()
        app.cleanup_ctx.append(tickers)
        return app
"""


@pytest.mark.parametrize("claim, expected", [
    ('if not await app["redis"].set(f"report:{{day}}", "1", nx=True, ex=7200):\n            return', []),
    ("pass", [(13, "OG201")]),
])
def test_a_ticker_running_the_job_its_construction_hands_it(tmp_path, claim, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'sales'\n", "sales/__init__.py": "",
                     "sales/ticker.py": TICKER, "sales/report.py": REPORT.format(claim=claim), "sales/app.py": APP})
    assert findings(tmp_path, "sales/app.py") == expected
