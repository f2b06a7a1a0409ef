"""A poller written as a base class of the project: its loop calls ``self.<hook>()`` for a batch and hands each
item to another hook, and a subclass fills both in. The rows a repository picks by their state reach the base's
loop through the subclass's override (which only returns them), and the subclass's other hook marks them: the
pickup is unclaimed however the loop is split between the classes."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOOP = """
    import time


    class BatchLoop:
        pause = 1.0

        def forever(self) -> None:
            while True:
                items = self.next_items()
                for item in items:
                    self.process(item)
                time.sleep(self.pause)

        def next_items(self):
            raise NotImplementedError

        def process(self, item) -> None:
            raise NotImplementedError
    """

STORE = """
    class ReminderStore:
        def __init__(self, pool) -> None:
            self.pool = pool

        def due(self, size: int):
            with self.pool.connection() as conn:
                cur = conn.execute(
                    "SELECT id, email FROM reminders WHERE {where} ORDER BY id LIMIT %s",
                    (size,),
                )
                return cur.fetchall()

        def sent(self, reminder_id: int) -> None:
            with self.pool.connection() as conn:
                conn.execute("UPDATE reminders SET mailed_at = now() WHERE id = %s", (reminder_id,))
    """

MAILER = """
    {loop_import}
    from .store import ReminderStore
    from .mail import deliver


    class ReminderMailer({base}):
        def __init__(self, store: ReminderStore) -> None:
            self.store = store

        def next_items(self):
            return self.store.due(20)

        def process(self, item) -> None:
            deliver(item[1])
            self.store.sent(item[0])
    """

MAIL = """
    def deliver(address: str) -> None:
        print("mail to", address)
    """


def project(tmp_path, where="mailed_at IS NULL", loop_import="from .loop import BatchLoop", loop_path="loop.py",
            base="BatchLoop"):
    write(tmp_path, {
        "reminders/__init__.py": "",
        f"reminders/{loop_path}": LOOP,
        "reminders/store.py": STORE.format(where=where),
        "reminders/mailer.py": MAILER.format(loop_import=loop_import, base=base),
        "reminders/mail.py": MAIL,
    })


def test_rows_picked_for_a_base_class_loop_are_unclaimed(tmp_path):
    project(tmp_path)
    assert findings(tmp_path, "reminders/store.py", codes=("OG302",)) == [(8, "OG302")]


def test_rows_claimed_with_skip_locked_are_not(tmp_path):
    project(tmp_path, where="mailed_at IS NULL FOR UPDATE SKIP LOCKED")
    assert findings(tmp_path, "reminders/store.py", codes=("OG302",)) == []


def test_a_loop_that_writes_nothing_is_not_a_pickup(tmp_path):
    project(tmp_path)
    (tmp_path / "reminders" / "mailer.py").write_text(
        (tmp_path / "reminders" / "mailer.py").read_text().replace("self.store.sent(item[0])", "pass"))
    assert findings(tmp_path, "reminders/store.py", codes=("OG302",)) == []


@pytest.mark.parametrize("loop_import, base", [
    ("from reminders.base.loops import BatchLoop", "BatchLoop"),
    ("from .base import loops", "loops.BatchLoop"),
    ("import reminders.base.loops", "reminders.base.loops.BatchLoop"),
])
def test_the_base_class_in_another_package(tmp_path, loop_import, base):
    project(tmp_path, loop_import=loop_import, loop_path="base/loops.py", base=base)
    write(tmp_path, {"reminders/base/__init__.py": ""})
    assert findings(tmp_path, "reminders/store.py", codes=("OG302",)) == [(8, "OG302")]
