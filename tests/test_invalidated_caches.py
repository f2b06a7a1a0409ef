"""OG607: a cachetools cache that a ``@cached(cache=...)`` function fills with shared data, and that request code
takes an entry out of when it changes that data: only this process's copy is refreshed. A read-through cache
nobody invalidates stays silent (a short TTL is its design)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PLANS = """\
    from cachetools import TTLCache, cached
    from sqlalchemy import text

    from quota.db import SessionLocal

    _limits = TTLCache(maxsize=10_000, ttl=3600)


    @cached(cache=_limits)
    def limit_of(account_id: str) -> int:
        with SessionLocal() as session:
            return session.execute(text("SELECT seats FROM plans WHERE account = :a"), {{"a": account_id}}).scalar_one()


    def change_limit(account_id: str, seats: int) -> None:
        with SessionLocal.begin() as session:
            session.execute(text("UPDATE plans SET seats = :s WHERE account = :a"), {{"s": seats, "a": account_id}})
        {evict}
"""

DB = """\
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    SessionLocal = sessionmaker(create_engine("postgresql+psycopg://app@db/app"))
"""

API = """\
    from fastapi import APIRouter

    from quota.plans import change_limit

    router = APIRouter()


    @router.put("/accounts/{account_id}/seats")
    def put_seats(account_id: str, seats: int):
        change_limit(account_id, seats)
        return {"ok": True}
"""


@pytest.mark.parametrize("evict, expected", [
    ("_limits.pop((account_id,), None)", [(18, "OG607")]),
    ("del _limits[(account_id,)]", [(18, "OG607")]),
    ("pass", []),
])
def test_an_entry_evicted_by_request_code(tmp_path, evict, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'quota'\n", "quota/__init__.py": "", "quota/db.py": DB,
                     "quota/plans.py": PLANS.format(evict=evict), "quota/api.py": API})
    assert findings(tmp_path, "quota/plans.py", codes=("OG607",)) == expected
