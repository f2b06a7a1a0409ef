"""OG301: a read-modify-write through SQL whose SELECT and UPDATE are in two project defs.

One def returns what its SELECT read of a column, another sets the column to a value it is handed, and the
caller computes the new value in Python between the two calls: two callers read the same value and the later
UPDATE overwrites the other's change.  Found wherever the helpers are (methods of the caller's class, functions
of another module), and not when the UPDATE compares the value it replaces, the SELECT locks the row, or the
value handed is not computed from the read.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """\
    class Ledger:
        def __init__(self, pool):
            self._pool = pool

        async def _read_balance(self, conn, account_id):
            balance = await conn.fetchval("SELECT balance FROM accounts WHERE id = $1{lock}", account_id)
            return balance

        async def _write_balance(self, conn, account_id, new_balance):
            await conn.execute("UPDATE accounts SET balance = $1 WHERE id = $2", new_balance, account_id)

        async def charge(self, account_id, amount):
            async with self._pool.acquire() as conn:
                async with conn.transaction():
                    balance = await self._read_balance(conn, account_id)
                    {computed}
                    await self._write_balance(conn, account_id, new_balance)
"""


@pytest.mark.parametrize("lock, computed, expected", [
    ("", "new_balance = balance - amount", [(17, "OG301")]),
    ("", "new_balance = balance; new_balance -= amount", [(17, "OG301")]),
    (" FOR UPDATE", "new_balance = balance - amount", []),  # (the row stays locked until the write)
    ("", "new_balance = amount", []),  # (a value set, not computed from the one read)
])
def test_methods_of_the_callers_class(tmp_path, lock, computed, expected):
    write(tmp_path, {"bank/__init__.py": "",
                     "bank/ledger.py": LEDGER.replace("{lock}", lock).replace("{computed}", computed)})
    assert findings(tmp_path, "bank/ledger.py", codes=("OG301",)) == expected


QUERIES = """\
    async def fetch_balance(conn, account_id):
        row = await conn.fetchrow("SELECT balance FROM accounts WHERE id = $1", account_id)
        return row["balance"]


    async def store_balance(conn, account_id, value):
        await conn.execute("UPDATE accounts SET balance = $1 WHERE id = $2", value, account_id)


    async def store_balance_if(conn, account_id, old, value):
        await conn.execute("UPDATE accounts SET balance = $1 WHERE id = $2 AND balance = $3", value, account_id, old)
"""

SERVICE = """\
    from bank import queries as q


    async def withdraw(pool, account_id, amount):
        async with pool.acquire() as conn:
            current = await q.fetch_balance(conn, account_id)
            await {write}
"""


@pytest.mark.parametrize("write_call, expected", [
    ("q.store_balance(conn, account_id, current - amount)", [(7, "OG301")]),
    ("q.store_balance(conn, account_id, value=current - amount)", [(7, "OG301")]),
    ("q.store_balance_if(conn, account_id, current, current - amount)", []),  # (compare-and-set)
])
def test_functions_of_another_module(tmp_path, write_call, expected):
    write(tmp_path, {"bank/__init__.py": "", "bank/queries.py": QUERIES,
                     "bank/service.py": SERVICE.replace("{write}", write_call)})
    assert findings(tmp_path, "bank/service.py", codes=("OG301",)) == expected
