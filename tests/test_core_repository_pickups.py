"""OG302: rows a repository function picks by state with a SQLAlchemy Core ``select(table.c.x, ...)`` and hands
back, which the caller's loop then moves through another repository function (``mark_sent(conn, row.id)``, an
``update(table)`` whose ``where`` tests no state), are picked without a claim; locked with ``skip_locked`` they
are claimed, and a helper that only reads writes nothing."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TABLES = """\
    from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table

    metadata = MetaData()
    notices = Table(
        "notices", metadata,
        Column("id", Integer, primary_key=True),
        Column("phone", String),
        Column("body", String),
        Column("state", String),
        Column("sent_at", DateTime),
    )
"""

REPOSITORY = """\
    from sqlalchemy import func, select, update

    from pager.tables import notices


    def due(conn, size):
        stmt = (
            select(notices.c.id, notices.c.phone, notices.c.body)
            .where(notices.c.state == "queued")
            .order_by(notices.c.id)
            .limit(size){lock}
        )
        return conn.execute(stmt).all()


    def mark_sent(conn, notice_id):
        conn.execute(update(notices).where(notices.c.id == notice_id).values(state="sent", sent_at=func.now()))


    def describe(conn, notice_id):
        return conn.execute(select(notices.c.body).where(notices.c.id == notice_id)).scalar_one()
"""

WORKER = """\
    import time

    import httpx
    from sqlalchemy import create_engine

    from pager import repository


    def drain(engine):
        with engine.begin() as conn:
            for row in repository.due(conn, 50):
                httpx.post("https://sms.example.org/send", json={{"to": row.phone, "text": row.body}})
                repository.{after}(conn, row.id)


    def main():
        engine = create_engine("postgresql+psycopg://pager@db/pager")
        while True:
            drain(engine)
            time.sleep(2)


    if __name__ == "__main__":
        main()
"""

DEPLOY = """\
    services:
      pager-worker:
        image: pager
        command: python -m pager.worker
        deploy:
          replicas: 3
"""


@pytest.mark.parametrize("lock, after, expected", [
    ("", "mark_sent", [(11, "OG302")]),
    ("\n            .with_for_update(skip_locked=True)", "mark_sent", []),
    ("", "describe", []),
])
def test_rows_a_repository_picks_and_another_moves(tmp_path, lock, after, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'pager'\n", "pager/__init__.py": "",
                     "pager/tables.py": TABLES, "pager/repository.py": REPOSITORY.format(lock=lock),
                     "pager/worker.py": WORKER.format(after=after), "docker-compose.yml": DEPLOY})
    assert findings(tmp_path, "pager/worker.py", codes=("OG302",)) == expected
