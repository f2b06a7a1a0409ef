"""A channel every subscriber hears in full, read one batch at a time by a helper (``XREAD`` from the last id it
keeps, returned to its caller) that a program's loop calls on each pass: the loop is the subscription, and what
it does with each batch -- written at once, or gathered into a buffer and flushed -- every replica does."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

FEED = """
    import redis

    client = redis.Redis()


    class ClickFeed:
        def __init__(self, key: str) -> None:
            self.key = key
            self.after = "$"

        def next_batch(self) -> list:
            got = client.{read}
            out = []
            for _key, entries in got or []:
                for entry_id, fields in entries:
                    out.append(fields)
                    self.after = entry_id
            return out
    """

XREAD = 'xread({self.key: self.after}, count=100, block=1000)'
GROUP_READ = 'xreadgroup("tally", "me", {self.key: ">"}, count=100, block=1000)'

DIRECT_WORKER = """
    import psycopg

    from .feed import ClickFeed


    def main() -> None:
        db = psycopg.connect("dbname=clicks")
        feed = ClickFeed("clicks")
        while True:
            for fields in feed.next_batch():
                db.execute("UPDATE totals SET n = n + 1 WHERE page = %s", (fields["page"],))
            db.commit()


    if __name__ == "__main__":
        main()
    """

BUFFERED_WORKER = """
    import psycopg

    from .feed import ClickFeed


    class Pending:
        def __init__(self) -> None:
            self.items = []

        def put(self, batch: list) -> None:
            self.items.extend(batch)

        def take(self) -> list:
            taken = self.items
            self.items = []
            return taken


    def save(db, pending: Pending) -> None:
        for fields in pending.take():
            db.execute("UPDATE totals SET n = n + 1 WHERE page = %s", (fields["page"],))
        db.commit()


    def main() -> None:
        db = psycopg.connect("dbname=clicks")
        feed = ClickFeed("clicks")
        pending = Pending()
        while True:
            pending.put(feed.next_batch())
            save(db, pending)


    if __name__ == "__main__":
        main()
    """

DOCKERFILE = """
    FROM python:3.12-slim
    COPY . /srv
    WORKDIR /srv
    CMD ["python", "-m", "tally.worker"]
    """

COMPOSE = """
    services:
      tally:
        build: .
        deploy:
          replicas: 2
    """


def _project(tmp_path, read: str, worker: str) -> None:
    write(tmp_path, {"tally/__init__.py": "", "tally/feed.py": FEED.format(read=read), "tally/worker.py": worker,
                     "Dockerfile": DOCKERFILE, "docker-compose.yml": COMPOSE})


def test_a_loop_over_a_reader_writing_each_message(tmp_path):
    _project(tmp_path, XREAD, DIRECT_WORKER)
    assert findings(tmp_path, "tally/feed.py", codes=("OG602",)) == [(13, "OG602")]


def test_a_loop_over_a_reader_flushing_a_buffer_it_fills(tmp_path):
    _project(tmp_path, XREAD, BUFFERED_WORKER)
    assert findings(tmp_path, "tally/feed.py", codes=("OG602",)) == [(13, "OG602")]


def test_a_consumer_group_shares_the_messages_out(tmp_path):
    _project(tmp_path, GROUP_READ, DIRECT_WORKER)
    assert findings(tmp_path, "tally/feed.py", codes=("OG602",)) == []
    _project(tmp_path, GROUP_READ, BUFFERED_WORKER)
    assert findings(tmp_path, "tally/feed.py", codes=("OG602",)) == []


ONE_LOOK = """
    import psycopg

    from .feed import ClickFeed


    def main() -> None:
        db = psycopg.connect("dbname=clicks")
        for fields in ClickFeed("clicks").next_batch():
            db.execute("UPDATE totals SET n = n + 1 WHERE page = %s", (fields["page"],))
        db.commit()


    if __name__ == "__main__":
        main()
    """


def test_one_batch_read_once_is_no_subscription(tmp_path):
    # the for loop runs per message of one batch, not once per batch: the program reads once and ends
    _project(tmp_path, XREAD, ONE_LOOK)
    assert findings(tmp_path, "tally/feed.py", codes=("OG602",)) == []
