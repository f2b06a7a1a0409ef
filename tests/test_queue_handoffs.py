"""OG302: rows picked by their state and handed to worker threads or tasks through an in-process queue.

The poller selects the due rows without claiming them and puts each into a queue its process made; the threads
or tasks that take from that queue do the work and mark the row done.  The mark is the poller's write, made
later by another thread: two replicas polling at once both put the same rows, and both sets of workers act on
them.  A poller that claims its rows in the statement that picks them (``UPDATE ... RETURNING``) is safe, and a
queue whose consumers write nothing back is no pickup.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

STORE = """\
    DUE = "SELECT id, payload FROM deliveries WHERE state = 'queued' ORDER BY id LIMIT 50"


    def due_deliveries(conn):
        with conn.cursor() as cur:
            cur.execute(DUE)
            return cur.fetchall()


    def mark_delivered(conn, delivery_id):
        with conn.cursor() as cur:
            cur.execute("UPDATE deliveries SET state = 'delivered' WHERE id = %s", (delivery_id,))
"""

THREADED_CLASS = """\
    import queue
    import threading

    from relay import store
    from relay.net import push


    class Relay:
        def __init__(self, connect):
            self.connect = connect
            self.inbox = queue.Queue(maxsize=100)
            self.halt = threading.Event()

        def poll(self):
            conn = self.connect()
            for row in store.due_deliveries(conn):
                self.inbox.put(row)

        def drain(self):
            while not self.halt.is_set():
                row = self.inbox.get()
                self._send(row)

        def _send(self, row):
            push(row[1])
            store.mark_delivered(self.connect(), row[0])
"""

LOCAL_QUEUE = """\
    import queue
    import threading

    from relay import store
    from relay.net import push


    def drain(jobs, connect):
        while True:
            row = jobs.get()
            push(row[1])
            store.mark_delivered(connect(), row[0])


    def serve(connect):
        jobs = queue.Queue()
        for _ in range(4):
            threading.Thread(target=drain, args=(jobs, connect), daemon=True).start()
        for row in store.due_deliveries(connect()):
            jobs.put(row)
"""

MODULE_ASYNC_QUEUE = """\
    import asyncio

    from relay import store
    from relay.net import push

    PENDING: asyncio.Queue = asyncio.Queue()


    async def consume(connect):
        while True:
            row = await PENDING.get()
            push(row[1])
            store.mark_delivered(connect(), row[0])


    async def produce(connect):
        for row in store.due_deliveries(connect()):
            await PENDING.put(row)
"""

NET = """\
    import requests


    def push(payload):
        requests.post("https://hooks.example.net/deliver", data=payload, timeout=10)
"""


def _project(tmp_path, runner: str, store: str = STORE) -> None:
    write(tmp_path, {"relay/__init__.py": "", "relay/store.py": store, "relay/net.py": NET,
                     "relay/runner.py": runner})


@pytest.mark.parametrize("runner", [THREADED_CLASS, LOCAL_QUEUE, MODULE_ASYNC_QUEUE],
                         ids=["self-attribute-queue", "queue-handed-to-threads", "module-asyncio-queue"])
def test_rows_handed_to_queue_workers_are_reported_at_the_pickup(tmp_path, runner):
    _project(tmp_path, runner)
    assert findings(tmp_path, "relay/store.py", codes=("OG302",)) == [(6, "OG302")]


def test_the_pickup_in_the_poller_itself_is_reported(tmp_path):
    runner = THREADED_CLASS.replace("""            for row in store.due_deliveries(conn):
                self.inbox.put(row)""", """            with conn.cursor() as cur:
                cur.execute("SELECT id, payload FROM deliveries WHERE state = 'queued' LIMIT 50")
                rows = cur.fetchall()
            for row in rows:
                self.inbox.put(row)""")
    _project(tmp_path, runner)
    assert findings(tmp_path, "relay/runner.py", codes=("OG302",)) == [(17, "OG302")]


def test_rows_claimed_by_the_statement_that_picks_them_are_not_reported(tmp_path):
    claimed = STORE.replace(
        "DUE = \"SELECT id, payload FROM deliveries WHERE state = 'queued' ORDER BY id LIMIT 50\"",
        "DUE = (\"UPDATE deliveries SET state = 'sending' WHERE id IN (SELECT id FROM deliveries WHERE state = \"\n"
        "       \"'queued' ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED) RETURNING id, payload\")")
    for runner in (THREADED_CLASS, LOCAL_QUEUE, MODULE_ASYNC_QUEUE):
        _project(tmp_path, runner, store=claimed)
        assert findings(tmp_path, "relay/store.py", codes=("OG302",)) == []


def test_consumers_that_write_nothing_back_are_no_pickup(tmp_path):
    runner = THREADED_CLASS.replace("            store.mark_delivered(self.connect(), row[0])\n", "")
    _project(tmp_path, runner)
    assert findings(tmp_path, "relay/store.py", codes=("OG302",)) == []


def test_a_put_into_something_that_is_not_a_queue_is_not_followed(tmp_path):
    runner = THREADED_CLASS.replace("self.inbox = queue.Queue(maxsize=100)", "self.inbox = Outbox()").replace(
        "class Relay:", """class Outbox:
        def put(self, row):
            pass

        def get(self):
            return None


    class Relay:""")
    _project(tmp_path, runner)
    assert findings(tmp_path, "relay/store.py", codes=("OG302",)) == []
