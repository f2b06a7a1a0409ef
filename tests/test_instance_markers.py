"""OG608: "seen" markers kept by a long-lived object and answered to the caller that does the work.

- A method of a module-level instance tests its own container for a key and fills it (``if key in self._seen:
  return False`` … ``self._seen[key] = now; return True``); request or job code in another module skips an
  effect that leaves the process on that answer. Each replica has its own container, so a retry routed to
  another replica does the effect again. The entry may be the time the key was seen (a dedupe that forgets
  old keys), the container a set or a class attribute, the instance imported under another name, the class in
  a third module, and the test and the fill split across two methods the caller both calls.
- Left alone: memoisation (a miss computes the value again), a dedupe kept in the database, an object made
  per request, an answer that only decides a log line, an answer nobody looks at, and a check whose caller
  never fills the marker. A route that answers its client from the marker is still found (the answer leaves
  the process).
- A Falcon responder (``on_post(self, req, resp)``) is request code.
"""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REFUNDS = """\
    import httpx


    def refund_customer(order_id: str, cents: int) -> None:
        httpx.post("https://payments.example.org/refunds", json={"order": order_id, "cents": cents}).raise_for_status()
"""

# The probe's shape in other words: a carrier's delivery receipts, retried until acknowledged, each refunding a
# late order once; the receipt ids are remembered with the time they arrived and forgotten after a while.
RECEIPT_LOG = """\
    import threading
    import time


    class ReceiptLog:
        def __init__(self, keep_seconds: int) -> None:
            self._keep = keep_seconds
            self._arrived: dict[str, float] = {}
            self._guard = threading.Lock()

        def accept(self, receipt_id: str) -> bool:
            now = time.monotonic()
            with self._guard:
                self._arrived = {k: t for k, t in self._arrived.items() if now - t < self._keep}
                if receipt_id in self._arrived:
                    return False
                self._arrived[receipt_id] = now
                return True


    receipts = ReceiptLog(24 * 3600)
"""

FALCON_RECEIPTS = """\
    import json

    import falcon

    from shipping.refunds import refund_customer
    from shipping.replay import receipts


    class LateDeliveryReceipt:
        def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
            receipt = json.loads(req.bounded_stream.read())
            if not receipts.accept(receipt["id"]):
                resp.media = {"status": "already refunded"}
                return
            refund_customer(receipt["order_id"], receipt["refund_cents"])
            resp.media = {"status": "refunded"}
"""


def test_a_dedupe_on_a_module_level_instance_answered_to_a_falcon_resource_is_found(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS, "shipping/replay.py": RECEIPT_LOG,
                     "shipping/resources.py": FALCON_RECEIPTS})
    assert findings(tmp_path, "shipping/replay.py", ("OG608",)) == [(8, "OG608")]
    assert findings(tmp_path, "shipping/replay.py", ("OG608",), cross_file=False) == []  # the caller is elsewhere


def test_the_finding_shows_the_caller_that_acts_on_the_answer(tmp_path):
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS, "shipping/replay.py": RECEIPT_LOG,
                     "shipping/resources.py": FALCON_RECEIPTS})
    path = str(tmp_path / "shipping/replay.py")
    with open(path, "rb") as handle:
        found = [d for d in check_source(handle.read(), path, from_mapping({}, root=str(tmp_path)), cross_file=True)
                 if d.code == "OG608"]
    assert len(found) == 1 and "accept() answers from it" in found[0].message
    assert any(r.path.endswith("resources.py") and r.line == 12 for r in found[0].related)
    assert any(r.line == 21 and "made at module level" in r.message for r in found[0].related)


FASTAPI_RECEIPTS = """\
    from fastapi import APIRouter

    from .refunds import refund_customer
    from .replay import receipts as receipt_log

    router = APIRouter()


    @router.post("/carrier/receipts")
    async def late_delivery(receipt: dict) -> dict:
        fresh = receipt_log.accept(receipt["id"])
        if not fresh:
            return {"status": "duplicate"}
        refund_customer(receipt["order_id"], receipt["refund_cents"])
        return {"status": "refunded"}
"""


def test_the_instance_imported_under_another_name_and_the_answer_kept_in_a_local(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS, "shipping/replay.py": RECEIPT_LOG,
                     "shipping/api.py": FASTAPI_RECEIPTS})
    assert findings(tmp_path, "shipping/replay.py", ("OG608",)) == [(8, "OG608")]


ONCE_ONLY = """\
    class OnceOnly:
        def __init__(self) -> None:
            self._done: set[str] = set()

        def first_time(self, key: str) -> bool:
            if key in self._done:
                return False
            self._done.add(key)
            return True
"""


def test_a_set_in_a_class_of_one_module_its_instance_in_another_and_the_resource_in_a_third(tmp_path):
    write(tmp_path, {
        "ledger/__init__.py": "",
        "ledger/refunds.py": REFUNDS,
        "ledger/markers.py": ONCE_ONLY,
        "ledger/state.py": """\
            from ledger.markers import OnceOnly

            chargebacks = OnceOnly()
        """,
        "ledger/resources.py": """\
            import falcon

            from ledger.refunds import refund_customer
            from ledger.state import chargebacks


            class Disputes:
                def on_post_settle(self, req: falcon.Request, resp: falcon.Response, dispute_id: str) -> None:
                    if chargebacks.first_time(dispute_id):
                        refund_customer(req.media["order_id"], req.media["cents"])
                    resp.status = falcon.HTTP_204
        """,
    })
    assert findings(tmp_path, "ledger/markers.py", ("OG608",)) == [(3, "OG608")]


SPLIT_MARKER = """\
    class RenewalMarks:
        def __init__(self) -> None:
            self._renewed = set()

        def seen(self, key: str) -> bool:
            return key in self._renewed

        def remember(self, key: str) -> None:
            self._renewed.add(key)


    renewals = RenewalMarks()
"""


def test_the_check_and_the_add_split_across_two_methods_the_caller_both_calls(tmp_path):
    write(tmp_path, {
        "subs/__init__.py": "",
        "subs/refunds.py": REFUNDS,
        "subs/marks.py": SPLIT_MARKER,
        "subs/webhooks.py": """\
            from fastapi import APIRouter

            from .marks import renewals
            from .refunds import refund_customer

            router = APIRouter()


            @router.post("/store/renewal-failed")
            def renewal_failed(event: dict) -> dict:
                if renewals.seen(event["id"]):
                    return {"ok": True}
                refund_customer(event["order_id"], event["cents"])
                renewals.remember(event["id"])
                return {"ok": True}
        """,
    })
    assert findings(tmp_path, "subs/marks.py", ("OG608",)) == [(3, "OG608")]


def test_the_same_in_one_module_is_found_without_the_project(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS,
                     "shipping/api.py": textwrap.dedent(RECEIPT_LOG) + textwrap.dedent("""

        from fastapi import APIRouter

        from .refunds import refund_customer

        router = APIRouter()


        @router.post("/carrier/receipts")
        def late_delivery(receipt: dict) -> dict:
            if not receipts.accept(receipt["id"]):
                return {"status": "duplicate"}
            refund_customer(receipt["order_id"], receipt["refund_cents"])
            return {"status": "refunded"}
    """)})
    assert findings(tmp_path, "shipping/api.py", ("OG608",), cross_file=False) == [(8, "OG608")]


def test_stamped_marks_expired_by_a_loop_over_them_are_still_marks(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS,
                     "shipping/api.py": FASTAPI_RECEIPTS, "shipping/replay.py": """\
        import time


        class ReceiptLog:
            def __init__(self, keep_seconds: int) -> None:
                self._keep = keep_seconds
                self._arrived = {}

            def _expire(self, now: float) -> None:
                for key, at in list(self._arrived.items()):
                    if now - at > self._keep:
                        del self._arrived[key]

            def accept(self, receipt_id: str) -> bool:
                now = time.time()
                self._expire(now)
                if receipt_id in self._arrived:
                    return False
                self._arrived[receipt_id] = now
                return True


        receipts = ReceiptLog(3600)
    """})
    assert findings(tmp_path, "shipping/replay.py", ("OG608",)) == [(7, "OG608")]


# -- left alone -----------------------------------------------------------------------------------------------
def test_memoisation_on_a_module_level_instance_is_left_alone(tmp_path):
    write(tmp_path, {
        "fx/__init__.py": "",
        "fx/rates.py": """\
            import httpx


            class RateBook:
                def __init__(self) -> None:
                    self._rates = {}

                def rate(self, currency: str) -> float:
                    if currency in self._rates:
                        return self._rates[currency]
                    value = httpx.get(f"https://fx.example.org/{currency}").json()["rate"]
                    self._rates[currency] = value
                    return value


            rates = RateBook()
        """,
        "fx/api.py": """\
            from fastapi import APIRouter

            from .refunds import refund_customer
            from .rates import rates

            router = APIRouter()


            @router.post("/refunds/{order_id}")
            def refund(order_id: str, cents: int, currency: str) -> dict:
                if not rates.rate(currency):
                    return {"status": "no rate"}
                refund_customer(order_id, int(cents * rates.rate(currency)))
                return {"status": "refunded"}
        """,
        "fx/refunds.py": REFUNDS,
    })
    assert findings(tmp_path, "fx/rates.py", ("OG608",)) == []


def test_a_dedupe_kept_in_the_database_is_left_alone(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS, "shipping/resources.py": """\
        import json

        import falcon
        import psycopg

        from shipping.refunds import refund_customer


        class LateDeliveryReceipt:
            def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
                receipt = json.loads(req.bounded_stream.read())
                with psycopg.connect("postgresql://shipping@db/shipping") as conn:
                    fresh = conn.execute(
                        "INSERT INTO receipts (id) VALUES (%s) ON CONFLICT (id) DO NOTHING", (receipt["id"],)
                    ).rowcount
                if not fresh:
                    resp.media = {"status": "already refunded"}
                    return
                refund_customer(receipt["order_id"], receipt["refund_cents"])
        """})
    assert findings(tmp_path, "shipping/resources.py", ("OG608",)) == []


def test_an_object_made_per_request_is_left_alone(tmp_path):
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS,
                     "shipping/replay.py": RECEIPT_LOG.replace("receipts = ReceiptLog(24 * 3600)", ""),
                     "shipping/api.py": """\
        from fastapi import APIRouter

        from .refunds import refund_customer
        from .replay import ReceiptLog

        router = APIRouter()


        @router.post("/carrier/receipts")
        def late_delivery(batch: list[dict]) -> dict:
            seen_in_batch = ReceiptLog(60)
            for receipt in batch:
                if seen_in_batch.accept(receipt["id"]):
                    refund_customer(receipt["order_id"], receipt["refund_cents"])
            return {"status": "done"}
        """})
    assert findings(tmp_path, "shipping/replay.py", ("OG608",)) == []


def test_an_answer_that_only_decides_a_log_line_or_is_thrown_away_is_left_alone(tmp_path):
    # What the marker guards is the callers' work: here a line in this process's log, and nothing at all.
    write(tmp_path, {"shipping/__init__.py": "", "shipping/refunds.py": REFUNDS, "shipping/markers.py":
                     textwrap.dedent(ONCE_ONLY) + "\n\ncarriers = OnceOnly()\n", "shipping/api.py": """\
        import logging

        from fastapi import APIRouter

        from .markers import carriers
        from .refunds import refund_customer

        router = APIRouter()
        log = logging.getLogger(__name__)


        @router.post("/carrier/receipts")
        def late_delivery(receipt: dict) -> dict:
            if carriers.first_time(receipt["carrier"]):
                log.info("first receipt from carrier %s on this worker", receipt["carrier"])
            return {"status": "noted"}


        @router.post("/carrier/refunds")
        def refund(receipt: dict) -> dict:
            carriers.first_time(receipt["carrier"])
            refund_customer(receipt["order_id"], receipt["refund_cents"])
            return {"status": "refunded"}
        """})
    assert findings(tmp_path, "shipping/markers.py", ("OG608",)) == []


def test_a_split_check_whose_caller_never_fills_the_marker_is_left_alone(tmp_path):
    # The route only asks; nothing it runs records the key: no "seen" marker guards its work.
    write(tmp_path, {
        "subs/__init__.py": "",
        "subs/refunds.py": REFUNDS,
        "subs/marks.py": SPLIT_MARKER,
        "subs/webhooks.py": """\
            from fastapi import APIRouter

            from .marks import renewals
            from .refunds import refund_customer

            router = APIRouter()


            @router.post("/store/renewal-failed")
            def renewal_failed(event: dict) -> dict:
                if renewals.seen(event["id"]):
                    return {"ok": True}
                refund_customer(event["order_id"], event["cents"])
                return {"ok": True}
        """,
    })
    assert findings(tmp_path, "subs/marks.py", ("OG608",)) == []


def test_a_route_that_answers_the_client_from_the_marker_is_still_found(tmp_path):
    # The route's own answer leaves the process: the client acts on it, so no caller of the project is asked.
    write(tmp_path, {"vouchers/__init__.py": "", "vouchers/api.py": """\
        from fastapi import APIRouter

        router = APIRouter()
        _used: set[str] = set()


        @router.post("/vouchers/{code}/check")
        def check_voucher(code: str) -> dict:
            if code in _used:
                return {"valid": False}
            _used.add(code)
            return {"valid": True}
        """})
    assert findings(tmp_path, "vouchers/api.py", ("OG608",)) == [(4, "OG608")]


def test_a_class_attribute_stamped_by_a_classmethod_answered_to_a_job(tmp_path):
    write(tmp_path, {
        "ledger/__init__.py": "",
        "ledger/refunds.py": REFUNDS,
        "ledger/markers.py": """\
            import time


            class Disputes:
                settled: dict = {}

                @classmethod
                def first_time(cls, dispute_id: str) -> bool:
                    if dispute_id in cls.settled:
                        return False
                    cls.settled[dispute_id] = time.time()
                    return True
        """,
        "ledger/tasks.py": """\
            from celery import shared_task

            from ledger.markers import Disputes as settled_disputes
            from ledger.refunds import refund_customer


            @shared_task
            def settle_chargeback(dispute_id: str, order_id: str, cents: int) -> None:
                if not settled_disputes.first_time(dispute_id):
                    return
                refund_customer(order_id, cents)
        """,
    })
    assert findings(tmp_path, "ledger/markers.py", ("OG608",)) == [(5, "OG608")]
