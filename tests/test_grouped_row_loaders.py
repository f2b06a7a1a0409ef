"""A loader that selects rows by their state and hands them back grouped (per account, as objects built from
each row) still hands back the rows: a job that takes a lease around sending them and marks them sent leaves
nothing for the next replica's run, as it would with the rows handed back as they came."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

OUTBOX = """
    import uuid


    class Pending:
        def __init__(self, account: int) -> None:
            self.account = account
            self.ids = []
            self.bodies = []


    class Outbox:
        def __init__(self, pool, redis) -> None:
            self.pool = pool
            self.redis = redis

        async def take_lease(self) -> bool:
            return bool(await self.redis.set("outbox-lease", uuid.uuid4().hex, nx=True, px=60000))

        async def drop_lease(self) -> None:
            await self.redis.delete("outbox-lease")

        async def unsent(self) -> list:
            rows = await self.pool.fetch("SELECT id, account, body FROM notes WHERE sent_at IS NULL")
            {group}

        async def mark_sent(self, ids: list) -> None:
            await self.pool.execute({mark}, ids)
    """

BY_ACCOUNT = """grouped = {}
            for row in rows:
                entry = grouped.setdefault(row["account"], Pending(row["account"]))
                entry.ids.append(row["id"])
                entry.bodies.append(row["body"])
            return list(grouped.values())"""

BY_SUBSCRIPT = """grouped = {}
            for row in rows:
                grouped[row["account"]] = Pending(row["account"])
            return list(grouped.values())"""

MARKS_SENT = '"UPDATE notes SET sent_at = now() WHERE id = ANY($1)"'
LOGS_SENT = '"INSERT INTO sent_log (note_ids) VALUES ($1)"'

APP = """
    import asyncio

    import httpx
    from quart import Quart

    from .outbox import Outbox

    app = Quart(__name__)


    async def send_forever(outbox: Outbox) -> None:
        while True:
            if await outbox.take_lease():
                try:
                    for pending in await outbox.unsent():
                        await httpx.AsyncClient().post("https://mail.example/send", json={"to": pending.account})
                        await outbox.mark_sent(pending.ids)
                finally:
                    await outbox.drop_lease()
            await asyncio.sleep(60)


    @app.before_serving
    async def start() -> None:
        asyncio.create_task(send_forever(Outbox(app.pool, app.redis)))
    """


def _project(tmp_path, group: str, mark: str) -> None:
    write(tmp_path, {"notes/__init__.py": "", "notes/app.py": APP,
                     "notes/outbox.py": OUTBOX.format(group=group, mark=mark)})


def test_rows_handed_back_grouped_and_marked_sent(tmp_path):
    _project(tmp_path, BY_ACCOUNT, MARKS_SENT)
    assert findings(tmp_path, "notes/app.py") == []


def test_rows_grouped_by_a_subscript_store(tmp_path):
    _project(tmp_path, BY_SUBSCRIPT, MARKS_SENT)
    assert findings(tmp_path, "notes/app.py") == []


def test_grouped_rows_never_moved_out_of_their_state(tmp_path):
    # the lease is given back after the pass and nothing moves the rows out of the state they were picked by:
    # a replica whose pass comes after the release sends them again
    _project(tmp_path, BY_ACCOUNT, LOGS_SENT)
    assert findings(tmp_path, "notes/app.py") == [(12, "OG201")]
