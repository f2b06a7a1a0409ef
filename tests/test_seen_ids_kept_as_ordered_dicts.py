"""Markers of handled deliveries kept in an ordered dict: an entry that holds nothing (``self._ids[key] = None``,
the dict kept as an ordered set) marks its key as much as an added member does, and a loop that drops the
oldest entries it takes from the dict itself (``while self._at: key, when = next(iter(self._at.items()))`` …
``del self._at[key]``) is their expiry, not the end of a piece of work.  Either way a caller that acts on the
answer with work leaving the process does it again on the replica that never saw the key (OG608)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

EMPTY_ENTRIES = """
    from collections import OrderedDict


    class HandledOrders:
        def __init__(self, keep: int = 10_000) -> None:
            self._keep = keep
            self._ids: OrderedDict = OrderedDict()

        def known(self, order_id: str) -> bool:
            if order_id in self._ids:
                self._ids.move_to_end(order_id)
                return True
            return False

        def note(self, order_id: str) -> None:
            self._ids[order_id] = None
            while len(self._ids) > self._keep:
                self._ids.popitem(last=False)
    """

STAMPED_ENTRIES = """
    import time
    from collections import OrderedDict


    class HandledOrders:
        def __init__(self, window: float = 3600.0) -> None:
            self._window = window
            self._at: OrderedDict = OrderedDict()

        def _expire(self, now: float) -> None:
            while self._at:
                order_id, when = next(iter(self._at.items()))
                if now - when < self._window:
                    break
                del self._at[order_id]

        def first_sight(self, order_id: str) -> bool:
            now = time.monotonic()
            self._expire(now)
            if order_id in self._at:
                return False
            self._at[order_id] = now
            return True
    """

ASKS_THEN_NOTES = """
    import logging

    import httpx
    from fastapi import FastAPI

    from shop.{module} import HandledOrders

    app = FastAPI()
    log = logging.getLogger(__name__)
    handled = HandledOrders()


    @app.post("/hooks/orders")
    async def order_paid(event: dict) -> dict:
        if handled.known(event["id"]):
            return {{"status": "repeat"}}
        {work}
        handled.note(event["id"])
        return {{"status": "ok"}}
    """

ASKS_ONCE = """
    import logging

    import httpx
    from fastapi import FastAPI

    from shop.{module} import HandledOrders

    app = FastAPI()
    log = logging.getLogger(__name__)
    handled = HandledOrders()


    @app.post("/hooks/orders")
    async def order_paid(event: dict) -> dict:
        if not handled.first_sight(event["id"]):
            return {{"status": "repeat"}}
        {work}
        return {{"status": "ok"}}
    """

SHIPS = 'httpx.post("https://warehouse.example/ship", json=event)'
LOGS = 'log.info("paid %s", event["id"])'


@pytest.mark.parametrize("module", ["handled", "orders_seen"])
def test_a_dict_of_empty_entries_is_a_seen_marker(tmp_path, module):
    write(tmp_path, {"shop/__init__.py": "", f"shop/{module}.py": EMPTY_ENTRIES,
                     "shop/hooks.py": ASKS_THEN_NOTES.format(module=module, work=SHIPS)})
    assert findings(tmp_path, f"shop/{module}.py", codes=("OG608",)) == [(8, "OG608")]


def test_stamped_entries_dropped_oldest_first_are_a_seen_marker(tmp_path):
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": STAMPED_ENTRIES,
                     "shop/hooks.py": ASKS_ONCE.format(module="handled", work=SHIPS)})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == [(9, "OG608")]


LOGS_ONCE = """
    import logging

    from fastapi import FastAPI

    from shop.handled import HandledOrders

    app = FastAPI()
    log = logging.getLogger(__name__)
    handled = HandledOrders()


    @app.post("/hooks/orders")
    async def order_paid(event: dict) -> None:
        {body}
    """
LOG_UNLESS_KNOWN = """if not handled.known(event["id"]):
            log.info("first notice of %s", event["id"])
            handled.note(event["id"])"""
LOG_ON_FIRST_SIGHT = """if handled.first_sight(event["id"]):
            log.info("first notice of %s", event["id"])"""


@pytest.mark.parametrize("marker, body", [(EMPTY_ENTRIES, LOG_UNLESS_KNOWN), (STAMPED_ENTRIES, LOG_ON_FIRST_SIGHT)])
def test_a_marker_that_only_lets_a_log_line_through_is_left_alone(tmp_path, marker, body):
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": marker,
                     "shop/hooks.py": LOGS_ONCE.format(body=body)})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == []


IN_FLIGHT = """
    import time


    class Pending:
        def __init__(self) -> None:
            self._at: dict = {}

        def first_sight(self, order_id: str) -> bool:
            if order_id in self._at:
                return False
            self._at[order_id] = time.monotonic()
            return True

        def done(self, order_id: str) -> None:
            del self._at[order_id]
    """


def test_an_entry_its_key_is_taken_out_of_when_the_work_ends_is_work_in_flight(tmp_path):
    caller = ASKS_ONCE.format(module="handled", work=LOGS).replace(
        'return {"status": "ok"}', 'handled.done(event["id"])\n    return {"status": "ok"}').replace(
        "HandledOrders", "Pending")
    write(tmp_path, {"shop/__init__.py": "", "shop/handled.py": IN_FLIGHT, "shop/hooks.py": caller})
    assert findings(tmp_path, "shop/handled.py", codes=("OG608",)) == []
