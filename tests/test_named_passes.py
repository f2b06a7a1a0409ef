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
