"""A ledger of handled deliveries kept by an object the application makes at start-up: emptied whole when the
application stops (``clear()``), or given back under a key only when the work failed, it still remembers
what was handled, and only in this process; an entry stored as a record of a private class marks its key as
much as ``True`` does."""
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


KEYS = """
    import threading
    from dataclasses import dataclass


    @dataclass
    class _Held:
        digest: str
        reply: dict | None = None


    class ReplayKeys:
        def __init__(self):
            self._held = {}
            self._guard = threading.Lock()

        def reserve(self, key: str, digest: str):
            with self._guard:
                held = self._held.get(key)
                if held is None:
                    self._held[key] = _Held(digest)
                    return None
            return held.reply
    """

ORDERS = """
    import requests
    from flask import Blueprint, Flask, current_app, request

    orders = Blueprint("orders", __name__)


    @orders.post("/orders")
    def place():
        keys = current_app.extensions["replay_keys"]
        earlier = keys.reserve(request.headers["Idempotency-Key"], request.get_data(as_text=True))
        if earlier is not None:
            return earlier
        requests.post("https://payments.example/charge", json=request.get_json(), timeout=10)
        return {"ok": True}, 201


    def create_app():
        from .keys import ReplayKeys

        app = Flask(__name__)
        app.extensions["replay_keys"] = ReplayKeys()
        app.register_blueprint(orders)
        return app
    """


def test_an_entry_built_from_a_private_record_class_marks_its_key(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/keys.py": KEYS, "shop/orders.py": ORDERS})
    assert findings(tmp_path, "shop/keys.py", codes=("OG608",)) == [(14, "OG608")]
