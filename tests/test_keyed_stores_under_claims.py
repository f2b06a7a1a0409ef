"""A record a project's store reads and writes back whole, inside a transaction whose first step is a try-lock on
its key that gives up when another holds it: one replica at a time runs the round trip (OG301 is silent); with no
such claim the round trip is reported."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

STORE = """
    class Pots:
        def __init__(self, conn):
            self.conn = conn

        async def get_total(self, pot_id):
            cur = await self.conn.execute("SELECT total FROM pots WHERE id = %s", (pot_id,))
            (total,) = await cur.fetchone()
            return total

        async def set_total(self, pot_id, total):
            await self.conn.execute("UPDATE pots SET total = %s WHERE id = %s", (total, pot_id))
    """

JOBS = """
    from arq import Retry

    from .store import Pots


    async def add_to_pot(ctx, pot_id, amount):
        async with ctx["pool"].connection() as conn:
            async with conn.transaction():
                {claim}
                pots = Pots(conn)
                total = await pots.get_total(pot_id)
                await pots.set_total(pot_id, total + amount)


    class WorkerSettings:
        functions = [add_to_pot]
    """

CLAIM = """cur = await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (pot_id,))
                (got,) = await cur.fetchone()
                if not got:
                    raise Retry(defer=5)"""


@pytest.mark.parametrize("claim, expected", [("pass", [(13, "OG301")]), (CLAIM, [])])
def test_a_round_trip_behind_a_try_lock_on_its_key(tmp_path, claim, expected):
    write(tmp_path, {"pots/__init__.py": "", "pots/store.py": STORE, "pots/jobs.py": JOBS.replace("{claim}", claim)})
    assert findings(tmp_path, "pots/jobs.py", codes=("OG301",)) == expected
