"""A marker object made by a factory that start-up code runs once per process (``app = make_app()`` →
``wire()``) and handed out from there, in a holder it returns (``return Deps(orders=HandledOrders())``) or as
itself: every request served later is handed that one object, so its container lives as long as the process and
a repeat landing on another replica passes the test again (OG608).  The same class made anew in each request is
no such memory."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HANDLED = """
    import time


    class HandledOrders:
        def __init__(self, hold: float) -> None:
            self._hold = hold
            self._until: dict = {}

        def claim(self, order_id: str) -> bool:
            now = time.monotonic()
            if order_id in self._until:
                return False
            self._until[order_id] = now + self._hold
            return True
    """

WIRING_IN_HOLDER = """
    from dataclasses import dataclass

    from shop.handled import HandledOrders


    @dataclass
    class Deps:
        orders: HandledOrders
        region: str


    def wire(region: str) -> Deps:
        return Deps(orders=HandledOrders(600.0), region=region)
    """

WIRING_BY_NAME = """
    from shop.handled import HandledOrders


    def wire(region: str) -> tuple:
        orders = HandledOrders(600.0)
        return (orders, region)
    """

APP = """
    import logging

    import httpx
    from litestar import Litestar, post
    from litestar.di import Provide

    from shop.handled import HandledOrders
    from shop.wiring import wire


    @post("/hooks/orders")
    async def order_paid(data: dict, orders: HandledOrders) -> None:
        {body}


    def make_app() -> Litestar:
        deps = wire("eu")
        held = {held}
        return Litestar(route_handlers=[order_paid],
                        dependencies={"orders": Provide(lambda: held, sync_to_thread=False)})


    app = make_app()
    """

SHIPS = """if not orders.claim(data["id"]):
            return
        httpx.post("https://warehouse.example/ship", json=data)"""
LOGS = """if orders.claim(data["id"]):
            logging.getLogger(__name__).info("paid %s", data["id"])"""


@pytest.mark.parametrize("wiring, held", [(WIRING_IN_HOLDER, "deps.orders"), (WIRING_BY_NAME, "deps[0]")])
def test_a_marker_a_start_up_factory_hands_out_is_kept_for_the_process(tmp_path, wiring, held):
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": HANDLED, "shop/wiring.py": wiring,
                     "shop/app.py": APP.replace("{body}", SHIPS).replace("{held}", held)})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == [(8, "OG608")]


PER_REQUEST = """
    import httpx
    from litestar import post

    from shop.wiring import wire


    @post("/hooks/orders")
    async def order_paid(data: dict) -> dict:
        deps = wire("eu")
        if not deps.orders.claim(data["id"]):
            return {"status": "repeat"}
        httpx.post("https://warehouse.example/ship", json=data)
        return {"status": "ok"}
    """


def test_the_same_factory_run_by_each_request_makes_a_fresh_marker(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": HANDLED, "shop/wiring.py": WIRING_IN_HOLDER,
                     "shop/app.py": PER_REQUEST})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == []


def test_a_start_up_marker_that_only_lets_a_log_line_through_is_left_alone(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": HANDLED, "shop/wiring.py": WIRING_IN_HOLDER,
                     "shop/app.py": APP.replace("{body}", LOGS).replace("{held}", "deps.orders")})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == []
