"""A ledger of handled deliveries kept by an object the application makes at start-up: emptied whole when the
application stops (``clear()``), or given back under a key only when the work failed, it still remembers
what was handled, and only in this process."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """
    from cachetools import TTLCache


    class DeliveryLedger:
        def __init__(self, ttl: int):
            self._handled = TTLCache(maxsize=50_000, ttl=ttl)

        def fresh(self, delivery_id: str) -> bool:
            if delivery_id in self._handled:
                return False
            self._handled[delivery_id] = True
            return True

        def {release}(self, delivery_id: str) -> None:
            self._handled.pop(delivery_id, None)

        def reset(self) -> None:
            self._handled.clear()
    """

HOOKS = """
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from .ledger import DeliveryLedger


    async def receive(request: Request):
        body = await request.json()
        ledger = request.app.state.ledger
        if not ledger.fresh(body["delivery"]):
            return JSONResponse({{"status": "seen"}})
        try:
            async with httpx.AsyncClient() as client:
                await client.post("https://warehouse.example/pick", json=body)
        {after}
        return JSONResponse({{"status": "done"}})


    async def startup():
        app.state.ledger = DeliveryLedger(ttl=86_400)


    async def shutdown():
        app.state.ledger.reset()


    app = Starlette(routes=[Route("/hooks", receive, methods=["POST"])], on_startup=[startup],
                    on_shutdown=[shutdown])
    """

ON_FAILURE = """except Exception:
            ledger.forget(body["delivery"])
            raise"""


def test_a_ledger_on_the_application_state_emptied_when_it_stops(tmp_path):
    write(tmp_path, {"hooks/__init__.py": "", "hooks/ledger.py": LEDGER.replace("{release}", "forget"),
                     "hooks/app.py": HOOKS.format(after=ON_FAILURE)})
    assert findings(tmp_path, "hooks/ledger.py", codes=("OG608",)) == [(7, "OG608")]
