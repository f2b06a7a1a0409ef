"""OG606: locks kept one per key in a process-wide container, and a database wrapper's query-and-fetch.

``_locks[account_id]`` filled with ``asyncio.Lock()`` (or a ``defaultdict(threading.Lock)``, or a container
annotated ``dict[str, asyncio.Lock]``) is a lock of this process: every worker and replica fills its own
container, so a balance read and a debit under it are not one step for them.  A project's database class whose
``fetchone(sql, params)`` sends SQL is a read like ``execute``: DB-API's ``fetchone()`` takes no SQL.  Work whose
rows are read ``FOR UPDATE`` is serialised by the database itself: the process lock is not what keeps it apart.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DATABASE = """\
    import asyncpg


    class Database:
        def __init__(self, dsn):
            self.dsn = dsn

        async def fetchone(self, query, values=None):
            connection = await asyncpg.connect(self.dsn)
            try:
                return await connection.fetchrow(query, *(values or {}).values())
            finally:
                await connection.close()

        async def execute(self, query, values=None):
            connection = await asyncpg.connect(self.dsn)
            try:
                await connection.execute(query, *(values or {}).values())
            finally:
                await connection.close()


    db = Database("postgresql://ledger@db/ledger")
"""

ACCOUNTS = """\
    from .database import db


    async def balance_of(account_id):
        row = await db.fetchone("SELECT balance FROM accounts WHERE id = :id", {"id": account_id})
        return row["balance"]


    async def record_debit(account_id, amount):
        await db.execute("INSERT INTO debits (account_id, amount) VALUES (:id, :amount)",
                         {"id": account_id, "amount": amount})
"""

PAYMENTS = """\
    import asyncio
    from collections import defaultdict

    from .accounts import balance_of, record_debit

    {container}


    async def pay(account_id, amount):
        {fill}
        async with _account_locks[account_id]:
            if await balance_of(account_id) < amount:
                raise ValueError("insufficient funds")
            await record_debit(account_id, amount)
"""


@pytest.mark.parametrize("container, fill", [
    ("_account_locks = {}", "_account_locks.setdefault(account_id, asyncio.Lock())"),
    ("_account_locks: dict[str, asyncio.Lock] = {}", "pass"),
    ("_account_locks = defaultdict(asyncio.Lock)", "pass"),
    ("_account_locks = {}", "if account_id not in _account_locks:\n            _account_locks[account_id] = asyncio.Lock()"),
])
def test_a_lock_per_key_in_a_process_wide_container(tmp_path, container, fill):
    source = PAYMENTS.replace("{container}", container).replace("{fill}", fill)
    write(tmp_path, {"ledger/__init__.py": "", "ledger/database.py": DATABASE, "ledger/accounts.py": ACCOUNTS,
                     "ledger/payments.py": source})
    found = findings(tmp_path, "ledger/payments.py", codes=("OG606",))
    assert [code for _, code in found] == ["OG606"]


def test_a_container_of_counters_is_no_lock(tmp_path):
    source = PAYMENTS.replace("{container}", "_account_locks = defaultdict(int)").replace("{fill}", "pass")
    write(tmp_path, {"ledger/__init__.py": "", "ledger/database.py": DATABASE, "ledger/accounts.py": ACCOUNTS,
                     "ledger/payments.py": source})
    assert findings(tmp_path, "ledger/payments.py", codes=("OG606",)) == []


def test_work_the_database_serialises_itself_is_not_the_locks_doing(tmp_path):
    accounts = ACCOUNTS.replace("SELECT balance FROM accounts WHERE id = :id",
                                "SELECT balance FROM accounts WHERE id = :id FOR UPDATE")
    source = PAYMENTS.replace("{container}", "_account_locks = defaultdict(asyncio.Lock)").replace("{fill}", "pass")
    write(tmp_path, {"ledger/__init__.py": "", "ledger/database.py": DATABASE, "ledger/accounts.py": accounts,
                     "ledger/payments.py": source})
    assert findings(tmp_path, "ledger/payments.py", codes=("OG606",)) == []


LOCKS_MODULE = """\
    import asyncio
    from collections import defaultdict

    _by_account = defaultdict(asyncio.Lock)


    def account_lock(account_id):
        return _by_account[account_id]
"""

WITHDRAW = """\
    import asyncpg

    from wallet.{module} import account_lock

    pool = None


    async def withdraw(account_id, cents):
        async with account_lock(account_id):
            async with pool.acquire() as conn:
                balance = await conn.fetchval("SELECT balance FROM accounts WHERE id = $1", account_id)
                if balance < cents:
                    raise ValueError("insufficient funds")
                await conn.execute("UPDATE accounts SET balance = $1 WHERE id = $2", balance - cents, account_id)
"""


@pytest.mark.parametrize("module", ["locks", "concurrency"])
def test_a_per_key_lock_a_helper_of_another_module_hands_back(tmp_path, module):
    # The module entering the lock names no lock class: the helper's module makes them, one per process.
    write(tmp_path, {"wallet/__init__.py": "", f"wallet/{module}.py": LOCKS_MODULE,
                     "wallet/service.py": WITHDRAW.replace("{module}", module)})
    assert findings(tmp_path, "wallet/service.py", codes=("OG606",)) == [(9, "OG606")]
