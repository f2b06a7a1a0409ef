"""SQL kept in a module of constants is the SQL of the call that sends it (``conn.fetch(q.FETCH_PENDING, 50)``
after ``from . import queries as q``): a worker's unclaimed pickup is reported there (OG302), and a query that
claims its rows (``FOR UPDATE SKIP LOCKED``) is not -- though the worker's own text holds no word of SQL."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

QUERIES = '''\
    FETCH_PENDING = """
        SELECT id, url, body FROM deliveries
        WHERE status = 'pending'
        ORDER BY id
        LIMIT $1
        {claim}
    """

    MARK_SENT = "UPDATE deliveries SET status = 'sent' WHERE id = $1"
'''

WORKER = """\
    import asyncio

    import asyncpg
    import httpx

    from {imported}


    async def drain(pool: asyncpg.Pool) -> None:
        async with pool.acquire() as conn:
            rows = await conn.fetch({fetch}, 50)
            for row in rows:
                httpx.post(row["url"], content=row["body"], timeout=10)
                await conn.execute({mark}, row["id"])


    async def main() -> None:
        pool = await asyncpg.create_pool("postgresql://app@db/app")
        while True:
            await drain(pool)
            await asyncio.sleep(5)


    if __name__ == "__main__":
        asyncio.run(main())
"""

SPELLINGS = {
    "module": (". import queries as q", "q.FETCH_PENDING", "q.MARK_SENT"),
    "names": ("relay.queries import FETCH_PENDING, MARK_SENT", "FETCH_PENDING", "MARK_SENT"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("claim, expected", [("", [(11, "OG302")]), ("FOR UPDATE SKIP LOCKED", [])])
def test_a_pickup_whose_sql_another_module_keeps(tmp_path, spelling, claim, expected):
    imported, fetch, mark = SPELLINGS[spelling]
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'relay'\n", "relay/__init__.py": "",
                     "relay/queries.py": QUERIES.format(claim=claim),
                     "relay/worker.py": WORKER.format(imported=imported, fetch=fetch, mark=mark),
                     "Procfile": "worker: python -m relay.worker\n"})
    assert findings(tmp_path, "relay/worker.py", codes=("OG302",)) == expected
