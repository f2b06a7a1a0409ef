"""The callers of a method include calls through an object the caller's code types as the method's class (an
annotated parameter kept on ``self``, an instance made on the spot), not only ``Class.method(...)``: a
repository method that selects rows by state and hands them back is a pickup its caller moves through
another method of the repository (OG302 at the SELECT)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REPOSITORY = """\
    class OutboxRepository:
        def pending(self, conn, limit):
            with conn.cursor() as cur:
                cur.execute("SELECT id, topic, body FROM outbox WHERE state = 'new' ORDER BY id LIMIT %s{lock}",
                            (limit,))
                return cur.fetchall()

        def mark_sent(self, conn, message_id):
            conn.execute("UPDATE outbox SET state = 'sent', sent_at = now() WHERE id = %s", (message_id,))
"""

RELAY_TYPED = """\
    from .publisher import publish
    from .repository import OutboxRepository


    class Relay:
        def __init__(self, pool, repo: OutboxRepository) -> None:
            self.pool = pool
            self.repo = repo

        def run_once(self):
            with self.pool.connection() as conn, conn.transaction():
                for message_id, topic, body in self.repo.pending(conn, 50):
                    publish(topic, body)
                    self.repo.mark_sent(conn, message_id)
"""

RELAY_MADE = """\
    from .publisher import publish
    from .repository import OutboxRepository


    def run_once(pool):
        repo = OutboxRepository()
        with pool.connection() as conn, conn.transaction():
            for message_id, topic, body in repo.pending(conn, 50):
                publish(topic, body)
                repo.mark_sent(conn, message_id)
"""

PUBLISHER = """\
    import httpx


    def publish(topic, body):
        httpx.post("https://events.example.com/" + topic, content=body, timeout=10)
"""

WORKER = """\
    import time

    from psycopg_pool import ConnectionPool

    from .relay import {made}

    pool = ConnectionPool("postgresql://outbox@db/outbox")


    def main():
        while True:
            {call}
            time.sleep(5)


    if __name__ == "__main__":
        main()
"""

COMPOSE = """\
    services:
      relay:
        build: .
        command: python -m outbox.worker
        deploy:
          replicas: 3
"""

RELAYS = {
    "typed attribute": (RELAY_TYPED, "Relay", "Relay(pool, OutboxRepository()).run_once()"),
    "made on the spot": (RELAY_MADE, "run_once", "run_once(pool)"),
}


def _project(tmp_path, relay, lock=""):
    text, made, call = RELAYS[relay]
    worker = WORKER.replace("{made}", made).replace("{call}", call)
    if relay == "typed attribute":
        worker = worker.replace("from .relay import Relay", "from .relay import Relay\nfrom .repository import OutboxRepository")
    write(tmp_path, {"outbox/__init__.py": "", "outbox/repository.py": REPOSITORY.replace("{lock}", lock),
                     "outbox/relay.py": text, "outbox/publisher.py": PUBLISHER, "outbox/worker.py": worker,
                     "Dockerfile": "FROM python:3.12\nCOPY . /srv\nWORKDIR /srv\n",
                     "docker-compose.yml": COMPOSE})


@pytest.mark.parametrize("relay", sorted(RELAYS))
def test_rows_a_repository_method_picks_and_the_caller_marks(tmp_path, relay):
    _project(tmp_path, relay)
    assert findings(tmp_path, "outbox/repository.py", codes=("OG302",)) == [(4, "OG302")]


@pytest.mark.parametrize("relay", sorted(RELAYS))
def test_rows_picked_for_update_skip_locked(tmp_path, relay):
    _project(tmp_path, relay, lock=" FOR UPDATE SKIP LOCKED")
    assert findings(tmp_path, "outbox/repository.py", codes=("OG302",)) == []
