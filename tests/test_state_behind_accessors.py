"""OG608 on module state reached only through its module's accessor functions (``remember(key, response)`` and
``previous(key)``, ``set_flag(name, on)`` and ``is_enabled(name)``): what runs the accessors is their callers,
followed through the project, so request code of another module that writes through one and reads through the
other keeps per-process state as surely as a handler touching the dict itself.  A table the module ships with
entries is state too once a function sets an entry at run time."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REPLAYS = """\
    _replies: dict = {}


    def earlier_reply(key: str):
        return _replies.get(key)


    def keep_reply(key: str, reply: dict) -> None:
        _replies[key] = reply
"""

ROUTES = """\
    from flask import Flask, request

    from shop import replays

    app = Flask(__name__)


    @app.post("/refunds")
    def refund():
        key = request.headers["Idempotency-Key"]
        earlier = replays.earlier_reply(key)
        if earlier is not None:
            return earlier
        reply = {"refunded": True}
        {keep}
        return reply
"""


@pytest.mark.parametrize("keep, expected", [
    ("replays.keep_reply(key, reply)", [(1, "OG608")]),
    ("pass", []),  # nothing writes it at run time: an empty table every replica shares the emptiness of
])
def test_a_dict_written_and_read_through_accessors_by_requests(tmp_path, keep, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/replays.py": REPLAYS,
                     "shop/routes.py": ROUTES.replace("{keep}", keep)})
    assert findings(tmp_path, "shop/replays.py", codes=("OG608",)) == expected


SWITCHES = """\
    import os

    _SWITCHES = {
        "fast_checkout": os.environ.get("FAST_CHECKOUT") == "1",
        "gift_cards": os.environ.get("GIFT_CARDS") == "1",
    }


    def switched_on(name: str) -> bool:
        return _SWITCHES.get(name, False)


    def switch(name: str, on: bool) -> None:
        _SWITCHES[name] = on
"""

ADMIN = """\
    from fastapi import FastAPI

    from store import switches

    app = FastAPI()


    @app.get("/checkout")
    def checkout() -> dict:
        return {"fast": switches.switched_on("fast_checkout")}


    @app.post("/admin/switches/{name}")
    def toggle(name: str, on: bool) -> dict:
        {toggle}
        return {"name": name, "on": on}
"""


@pytest.mark.parametrize("toggle, expected", [
    ("switches.switch(name, on)", [(3, "OG608")]),
    ("pass", []),  # read-only: the values every replica takes from the same environment
])
def test_a_shipped_table_an_admin_request_changes(tmp_path, toggle, expected):
    write(tmp_path, {"store/__init__.py": "", "store/switches.py": SWITCHES,
                     "store/admin.py": ADMIN.replace("{toggle}", toggle)})
    assert findings(tmp_path, "store/switches.py", codes=("OG608",)) == expected
