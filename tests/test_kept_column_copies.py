"""OG301: a column's value kept in memory between its read and its write-back.

An object (or a module) seeds a copy of a column from a SELECT, changes the copy with arithmetic as events arrive,
and a flusher -- often in another module -- sends ``UPDATE ... SET col = <the copy>``: every process keeps its own
copy and writes back its own total, erasing what the others added.  Sending only the change (``SET col = col +
:delta``) lets the database add, and a copy that never came from the column is no stale read.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TALLY = """
    import psycopg


    class DownloadTally:
        def __init__(self) -> None:
            self.totals: dict[str, int] = {}

        def bump(self, conn: psycopg.Connection, package: str) -> None:
            if package not in self.totals:
                row = conn.execute("SELECT downloads FROM packages WHERE name = %s", (package,)).fetchone()
                self.totals[package] = row[0] if row else 0
            self.totals[package] += 1

        def snapshot(self) -> list[tuple[int, str]]:
            return [(count, name) for name, count in self.totals.items()]
    """

FLUSHER = """
    import psycopg

    from .tally import DownloadTally


    def write_totals(conn: psycopg.Connection, tally: DownloadTally) -> None:
        rows = tally.snapshot()
        with conn.cursor() as cur:
            cur.executemany("UPDATE packages SET downloads = %s WHERE name = %s", rows)
        conn.commit()
    """

# the kept dict read straight off the object, in a loop over its entries
ATTRIBUTE_FLUSHER = """
    import psycopg

    from .tally import DownloadTally


    def write_totals(conn: psycopg.Connection, tally: DownloadTally) -> None:
        with conn.cursor() as cur:
            for name, count in tally.totals.items():
                cur.execute("UPDATE packages SET downloads = %s WHERE name = %s", (count, name))
        conn.commit()
    """

# the pending changes only, added by the database
DELTA_FLUSHER = FLUSHER.replace("SET downloads = %s", "SET downloads = downloads + %s")

# a tally that never read the column: its counts are this process's own hits (a delta buffer)
OWN_TALLY = """
    class DownloadTally:
        def __init__(self) -> None:
            self.totals: dict[str, int] = {}

        def bump(self, package: str) -> None:
            self.totals[package] = self.totals.get(package, 0) + 1

        def snapshot(self) -> list[tuple[int, str]]:
            return [(count, name) for name, count in self.totals.items()]
    """

# the same copy kept at a module's top level and flushed by a function of that module (asyncpg, one statement
# per entry, the copy read straight from the dict)
MODULE_COPY = """
    import asyncpg

    _stock: dict[int, int] = {}


    async def take(conn: asyncpg.Connection, item: int, quantity: int) -> None:
        if item not in _stock:
            _stock[item] = await conn.fetchval("SELECT on_hand FROM items WHERE id = $1", item)
        _stock[item] = _stock[item] - quantity


    async def flush(conn: asyncpg.Connection) -> None:
        for item, left in list(_stock.items()):
            await conn.execute("UPDATE items SET on_hand = $1 WHERE id = $2", left, item)
    """

# the kept dict imported by the flushing module
IMPORTED_FLUSHER = """
    import asyncpg

    from . import stock


    async def flush_elsewhere(conn: asyncpg.Connection) -> None:
        for item, left in stock._stock.items():
            await conn.execute("UPDATE items SET on_hand = $1 WHERE id = $2", left, item)
    """


@pytest.mark.parametrize("tally, flusher, expected", [
    (TALLY, FLUSHER, [(10, "OG301")]),
    (TALLY, ATTRIBUTE_FLUSHER, [(10, "OG301")]),
    (TALLY, DELTA_FLUSHER, []),
    (OWN_TALLY, FLUSHER, []),
])
def test_a_copy_kept_on_an_object_and_written_back_elsewhere(tmp_path, tally, flusher, expected):
    write(tmp_path, {"dl/__init__.py": "", "dl/tally.py": tally, "dl/flush.py": flusher})
    assert findings(tmp_path, "dl/flush.py", codes=("OG301",)) == expected


def test_a_copy_kept_at_module_level(tmp_path):
    write(tmp_path, {"inv/__init__.py": "", "inv/stock.py": MODULE_COPY})
    assert findings(tmp_path, "inv/stock.py", codes=("OG301",)) == [(15, "OG301")]


def test_a_module_level_copy_written_back_by_an_importer(tmp_path):
    write(tmp_path, {"inv/__init__.py": "", "inv/stock.py": MODULE_COPY.split("\n\n\n    async def flush")[0] + "\n",
                     "inv/flusher.py": IMPORTED_FLUSHER})
    assert findings(tmp_path, "inv/flusher.py", codes=("OG301",)) == [(9, "OG301")]
