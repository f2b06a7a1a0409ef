"""Locks a job takes through a decorator of the project.

``@exclusive("daily-export", ttl_seconds=...)`` whose wrapper enters a redis-py lock keyed on the name it was
given: every application passes a constant, so each job wearing it locks one job-wide key, and a lock that waits
(redis-py's default) queues the second replica behind the first, which then runs the job again (OG103).  A
wrapper that tries the lock and gives it back in a handler catching every error of the work (``except
BaseException: lease.release(); raise``) releases it whenever the work fails; on success it leaves the lease to
its TTL on purpose, so a pod whose scheduler fires late still finds the period taken (no OG105).  A waiting
lock whose holder first reads whether the work is done and leaves (``if closed: return``) queues the second
caller without repeating the work (no OG103).
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUARDS_WAITING = """\
    import functools

    from .broker import redis_client


    def exclusive(name, ttl_seconds):
        def decorator(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                lease = redis_client.lock(f"reports:{name}", timeout=ttl_seconds, blocking_timeout=900)
                with lease:
                    return fn(*args, **kwargs)

            return wrapper

        return decorator
"""

GUARDS_LEASED = """\
    import functools

    from .broker import redis_client


    def exclusive(name, ttl_seconds):
        def decorator(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                lease = redis_client.lock(f"reports:{name}", timeout=ttl_seconds)
                if not lease.acquire(blocking=False):
                    return None
                try:
                    return fn(*args, **kwargs)
                except {caught}:
                    lease.release()
                    raise

            return wrapper

        return decorator
"""

EXPORTS = """\
    from .delivery import upload_report
    from .guards import exclusive


    @exclusive({name}, ttl_seconds=3 * 3600)
    def export_daily_orders():
        upload_report("orders.csv")
"""

MAIN = """\
    import time

    import schedule

    from .exports import export_daily_orders


    def main():
        schedule.every().day.at("02:00").do(export_daily_orders)
        while True:
            schedule.run_pending()
            time.sleep(30)


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path, guards: str, name: str = '"daily-orders"') -> None:
    write(tmp_path, {
        "reports/__init__.py": "",
        "reports/broker.py": "import redis\n\nredis_client = redis.Redis()\n",
        "reports/delivery.py": "import boto3\n\n\ndef upload_report(name):\n    boto3.client('s3').upload_file(name, 'b', name)\n",
        "reports/guards.py": guards,
        "reports/exports.py": EXPORTS.replace("{name}", name),
        "reports/__main__.py": MAIN,
        "docker-compose.yml": "services:\n  reports:\n    image: x\n    command: python -m reports\n"
                              "    deploy:\n      replicas: 2\n",
    })


def test_a_waiting_lock_in_a_decorator_every_job_wears_with_a_fixed_name(tmp_path):
    _project(tmp_path, GUARDS_WAITING)
    assert findings(tmp_path, "reports/guards.py", codes=("OG103",)) == [(11, "OG103")]


def test_a_name_each_caller_makes_up_is_no_job_wide_key(tmp_path):
    _project(tmp_path, GUARDS_WAITING, name='f"orders-{time.time()}"')
    assert findings(tmp_path, "reports/guards.py", codes=("OG103",)) == []


@pytest.mark.parametrize("caught", ["BaseException", "Exception"])
def test_a_lease_given_back_on_every_error_and_kept_on_success(tmp_path, caught):
    _project(tmp_path, GUARDS_LEASED.replace("{caught}", caught))
    assert findings(tmp_path, "reports/guards.py", codes=("OG103", "OG105")) == []


def test_a_lease_given_back_only_on_some_errors_is_still_reported(tmp_path):
    _project(tmp_path, GUARDS_LEASED.replace("{caught}", "ValueError"))
    assert findings(tmp_path, "reports/guards.py", codes=("OG105",)) == [(16, "OG105")]


RECHECKED = """\
    from aiohttp import web

    CLOSE_KEY = 7_301


    class PeriodCloser:
        def __init__(self, pool):
            self._pool = pool

        async def close(self, period):
            async with self._pool.acquire() as conn:
                await conn.execute("SELECT pg_advisory_lock($1)", CLOSE_KEY)
                try:
                    {check}
                    async with conn.transaction():
                        await conn.execute("INSERT INTO closed_periods (period) VALUES ($1)", period)
                    return True
                finally:
                    await conn.execute("SELECT pg_advisory_unlock($1)", CLOSE_KEY)


    async def close_period(request):
        closer = PeriodCloser(request.app["pool"])
        return web.json_response({"closed": await closer.close(request.match_info["period"])})
"""

_RECHECK = ('closed = await conn.fetchval("SELECT EXISTS (SELECT 1 FROM closed_periods WHERE period = $1)", '
            'period)\n                    if closed:\n                        return False')


@pytest.mark.parametrize("check, reported", [(_RECHECK, []), ("pass", [(12, "OG103")])])
def test_a_waiting_lock_whose_holder_first_rechecks_whether_the_work_is_done(tmp_path, check, reported):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/periods.py": RECHECKED.replace("{check}", check)})
    assert findings(tmp_path, "ledger/periods.py", codes=("OG103",)) == reported
