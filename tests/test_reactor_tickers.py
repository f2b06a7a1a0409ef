"""OG201 for the event loops' own tickers: Twisted's ``LoopingCall(f).start(interval)`` and Tornado's
``PeriodicCallback(f, ms).start()`` repeat ``f`` in every process that starts them.  A tick that hands the work
to a thread (``threads.deferToThread(charge)``) does that function's work: a claim leading it claims the run.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BILLING = """\
    import psycopg
    import stripe


    def bill_overdue() -> None:
        with psycopg.connect("postgresql://db/marina") as conn, conn.transaction():
            {claim}
            for (customer,) in conn.execute("SELECT customer FROM berths WHERE overdue").fetchall():
                stripe.PaymentIntent.create(customer=customer, amount=900, currency="eur", confirm=True)
"""

CLAIM = ('if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (5150,)).fetchone()[0]:\n'
         "                return")

TWISTED = """\
    from twisted.internet import reactor, task, threads

    from marina.billing import bill_overdue


    def tick():
        d = threads.deferToThread(bill_overdue)
        d.addErrback(lambda failure: None)
        return d


    def main() -> None:
        task.LoopingCall(tick).start(300, now=False)
        reactor.run()


    if __name__ == "__main__":
        main()
"""

TORNADO = """\
    from tornado.ioloop import IOLoop, PeriodicCallback

    from marina.billing import bill_overdue


    def main() -> None:
        PeriodicCallback(bill_overdue, 300_000).start()
        IOLoop.current().start()


    if __name__ == "__main__":
        main()
"""


def _check(tmp_path, runner: str, claim: str):
    write(tmp_path, {"marina/__init__.py": "", "marina/billing.py": BILLING.replace("{claim}", claim),
                     "marina/runner.py": runner,
                     "Dockerfile": 'FROM python:3.12-slim\nCMD ["python", "-m", "marina.runner"]\n'})
    return [code for _, code in findings(tmp_path, "marina/runner.py")]


@pytest.mark.parametrize("runner", [TWISTED, TORNADO], ids=["twisted", "tornado"])
def test_a_reactor_ticker_repeats_its_callable_in_every_replica(tmp_path, runner):
    assert _check(tmp_path, runner, "pass") == ["OG201"]


@pytest.mark.parametrize("runner", [TWISTED, TORNADO], ids=["twisted", "tornado"])
def test_a_claim_leading_the_work_the_tick_hands_on_claims_the_run(tmp_path, runner):
    assert _check(tmp_path, runner, CLAIM) == []


RELEASED = """\
    import psycopg
    import redis
    import stripe
    from twisted.internet import reactor, task

    conn = psycopg.connect("postgresql://db/marina", autocommit=True)
    leases = redis.Redis(host="redis")


    def _bill_due() -> None:
        rows = conn.execute("SELECT id, customer FROM berths WHERE billed_at IS NULL").fetchall()
        for berth_id, customer in rows:
            stripe.PaymentIntent.create(customer=customer, amount=900, currency="eur", confirm=True)
            {mark}


    def tick() -> None:
        if not leases.set("marina:billing", "1", nx=True, ex=600):
            return
        try:
            _bill_due()
        finally:
            leases.delete("marina:billing")


    if __name__ == "__main__":
        task.LoopingCall(tick).start(300, now=False)
        reactor.run()
"""


@pytest.mark.parametrize("mark, reported", [
    ('conn.execute("UPDATE berths SET billed_at = now() WHERE id = %s", (berth_id,))', False),
    ("pass", True),  # nothing marked: a replica whose tick comes after the release bills the same berths
])
def test_a_lock_given_back_over_work_a_callee_marks_in_its_rows(tmp_path, mark, reported):
    write(tmp_path, {"marina/__init__.py": "", "marina/runner.py": RELEASED.replace("{mark}", mark),
                     "Dockerfile": 'FROM python:3.12-slim\nCMD ["python", "-m", "marina.runner"]\n'})
    found = [code for _, code in findings(tmp_path, "marina/runner.py")]
    assert found == (["OG201"] if reported else [])


def test_a_generic_repeat_helper_is_not_itself_the_job(tmp_path):
    # ``every(f, seconds)`` repeats whatever it is handed: the wrapper it hands LoopingCall does f's work, so the
    # wrapper is no job of its own (the calls of every() are where jobs are registered).
    helper = """\
        from typing import Callable

        from twisted.internet import task


        def every(f: Callable[[], object], seconds: float):
            def wrapped():
                print("tick")
                return f()

            return task.LoopingCall(wrapped).start(seconds, now=False)
    """
    write(tmp_path, {"marina/__init__.py": "", "marina/repeat.py": helper,
                     "Dockerfile": 'FROM python:3.12-slim\nCMD ["python", "-m", "marina.repeat"]\n'})
    assert findings(tmp_path, "marina/repeat.py") == []
