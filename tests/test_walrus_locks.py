"""walrus: a ``Database`` is a redis-py client whose ``lock(name, ttl=None)`` makes walrus's own Lock.

Its ``acquire(block=True)`` and its ``with`` wait (a blocking pop) by default; ``acquire(block=False)`` answers
at once; ``ttl`` is the expiry in milliseconds and without it the lock never expires.  A job that tests the
non-blocking answer and returns has claimed its run; one that drops the answer has not; one that enters the
lock waits behind the replica holding it and then runs again.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

STORE = """\
    from walrus import Database

    db = Database.from_url("redis://cache:6379/0")
"""

TASKS = """\
    import httpx
    from huey import RedisHuey, crontab

    from shop.store import db

    huey = RedisHuey("shop")


    @huey.periodic_task(crontab(minute="*/10"))
    def push_orders():
        with db.lock("push-orders", ttl=600_000):
            httpx.post("https://partner.example.com/orders", json={})


    @huey.periodic_task(crontab(minute="*/10"))
    def push_stock():
        lock = db.lock("push-stock", ttl=600_000)
        lock.acquire(block=False)
        httpx.post("https://partner.example.com/stock", json={})


    @huey.periodic_task(crontab(minute="*/10"))
    def push_prices():
        lock = db.lock("push-prices", ttl=600_000)
        if not lock.acquire(block=False):
            return
        try:
            httpx.post("https://partner.example.com/prices", json={})
        finally:
            lock.release()
"""

CODES = ("OG103", "OG106", "OG201", "OG501")


def _project(tmp_path, tasks: str = TASKS, store: str = STORE) -> None:
    write(tmp_path, {"shop/__init__.py": "", "shop/store.py": store, "shop/tasks.py": tasks})


def test_walrus_locks_read_with_their_own_semantics(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "shop/tasks.py", codes=CODES) == [
        (11, "OG103"),  # the ``with`` waits
        (16, "OG201"), (18, "OG106"),  # the answer of a try dropped: no claim
    ]  # push_prices: a tested non-blocking acquire leads the job


def test_the_walrus_class_under_its_other_name_and_a_plain_constructor(tmp_path):
    _project(tmp_path, store="""\
    import walrus

    db = walrus.Walrus(host="cache", port=6379)
""")
    assert [code for _, code in findings(tmp_path, "shop/tasks.py", codes=CODES)] == ["OG103", "OG201", "OG106"]


def test_a_walrus_lock_without_ttl_never_expires(tmp_path):
    _project(tmp_path, tasks=TASKS.replace('db.lock("push-prices", ttl=600_000)', 'db.lock("push-prices")'))
    assert (24, "OG501") in findings(tmp_path, "shop/tasks.py", codes=CODES)


def test_a_walrus_lock_with_ttl_is_no_unexpiring_lock(tmp_path):
    _project(tmp_path)
    assert not [f for f in findings(tmp_path, "shop/tasks.py", codes=CODES) if f[1] == "OG501"]
