"""OG608: what one request waits on, kept in a module-level container for another request to resolve.

``_waiting[payment_id] = future`` then ``await future`` in the checkout request; the payment provider's webhook
looks the future up by the same id and calls ``set_result``.  When the webhook is served by another replica the
entry is not there and the checkout times out.  A waiter resolved by this process's own listener (a
subscription every replica holds) is what such a container is for.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PENDING = """\
    import asyncio

    _waiting = {}


    async def wait_for_outcome(payment_id, timeout):
        future = asyncio.get_running_loop().create_future()
        _waiting[payment_id] = future
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            _waiting.pop(payment_id, None)


    def resolve(payment_id, status):
        future = _waiting.get(payment_id)
        if future is not None and not future.done():
            future.set_result(status)
"""

WEBHOOK = """\
    from fastapi import FastAPI

    from shop import pending

    app = FastAPI()


    @app.post("/checkout/{payment_id}")
    async def checkout(payment_id: str):
        return {"outcome": await pending.wait_for_outcome(payment_id, 30)}


    @app.post("/webhooks/payments")
    async def payment_webhook(body: dict):
        pending.resolve(body["payment_id"], body["status"])
"""

LISTENER = """\
    import asyncio
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from redis.asyncio import Redis

    from shop import pending


    async def listen(redis):
        async with redis.pubsub() as channel:
            await channel.subscribe("payments")
            async for message in channel.listen():
                if message["type"] == "message":
                    payment_id, status = message["data"].decode().split(":")
                    pending.resolve(payment_id, status)


    @asynccontextmanager
    async def lifespan(app):
        task = asyncio.create_task(listen(Redis()))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)


    @app.post("/checkout/{payment_id}")
    async def checkout(payment_id: str):
        return {"outcome": await pending.wait_for_outcome(payment_id, 30)}
"""


@pytest.mark.parametrize("routes, expected", [(WEBHOOK, [(3, "OG608")]), (LISTENER, [])])
def test_a_waiter_another_request_resolves(tmp_path, routes, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/pending.py": PENDING, "shop/api.py": routes})
    assert findings(tmp_path, "shop/pending.py", codes=("OG608",)) == expected
