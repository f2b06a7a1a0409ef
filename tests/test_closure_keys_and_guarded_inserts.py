"""OG104: a lock key a decorator computes once (``key = key_for(job)``, ``key_for`` returning ``id(job)``) and its
wrapper reads as a free name.  OG302: a state tested in Python (``if order.status != "pending": return``) and then
written with a new row added in the same transaction (``session.add(LedgerEntry(...))``): two webhooks that both
read "pending" both add the entry.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKING = """\
    import functools
    import zlib

    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql://app@db/app")


    def key_for(job) -> int:
        return {key}


    def exclusive(job):
        key = key_for(job)

        @functools.wraps(job)
        def wrapper(*args, **kwargs):
            with engine.begin() as conn:
                if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key}).scalar():
                    return None
                return job(conn, *args, **kwargs)

        return wrapper
"""


@pytest.mark.parametrize("key, expected", [("id(job)", [(10, "OG104")]),
                                           ("zlib.crc32(job.__qualname__.encode())", [])])
def test_a_key_the_decorator_computes_for_its_wrapper(tmp_path, key, expected):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/locking.py": LOCKING.replace("{key}", key)})
    assert findings(tmp_path, "jobs/locking.py", codes=("OG104",)) == expected


PAYMENTS = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from shop.models import LedgerEntry, Order


    def mark_paid(session: Session, order_id: int, amount: int) -> bool:
        order = session.scalars(select(Order).where(Order.id == order_id{lock})).one()
        if order.status != "pending":
            return False
        order.status = "paid"
        session.add(LedgerEntry(order_id=order.id, amount=amount))
        session.commit()
        return True
"""


@pytest.mark.parametrize("lock, expected", [("", [(11, "OG302")]), (").with_for_update(", [])])
def test_a_state_tested_then_written_with_a_new_row(tmp_path, lock, expected):
    write(tmp_path, {"shop/__init__.py": "", "shop/payments.py": PAYMENTS.replace("{lock}", lock)})
    assert findings(tmp_path, "shop/payments.py", codes=("OG302",)) == expected
