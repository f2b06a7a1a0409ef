"""OG302 through a context manager of the project: ``@contextmanager def due(limit)`` selects rows by their
state and yields them (or an object holding them and the cursor, whose methods update each row), and the
caller's ``with outbox.due(50) as batch:`` works through the rows and marks them.  What ``with ... as`` binds
is what the generator yields, so the batch's methods are the ones its class defines; the pickup is the
SELECT, with the caller's update as the related place."""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

OUTBOX = """
    from contextlib import contextmanager
    from typing import Iterator


    class Batch:
        def __init__(self, cur, rows):
            self.cur = cur
            self.rows = rows

        def done(self, row_id):
            self.cur.execute("UPDATE reminders SET fired_at = now() WHERE id = %s", (row_id,))


    class Reminders:
        def __init__(self, pool):
            self.pool = pool

        @contextmanager
        def due(self, limit){annotation}:
            with self.pool.connection() as conn, conn.cursor() as cur:
                cur.execute(
                    "SELECT id, phone, text FROM reminders WHERE fired_at IS NULL ORDER BY id LIMIT %s{lock}",
                    (limit,),
                )
                yield Batch(cur, cur.fetchall())
    """

SENDER = """
    from dataclasses import dataclass

    from .outbox import Reminders


    @dataclass
    class Wiring:
        reminders: Reminders
        sms: object


    def fire_due(wiring: Wiring) -> None:
        with wiring.reminders.due(50) as batch:
            for row_id, phone, text in batch.rows:
                wiring.sms.send(phone, text)
                batch.done(row_id)
    """

# The rows yielded as they are, each marked by a function of the module handed the connection's cursor.
PLAIN = """
    from contextlib import contextmanager


    def fired(cur, row_id):
        cur.execute("UPDATE reminders SET fired_at = now() WHERE id = %s", (row_id,))


    @contextmanager
    def due_reminders(pool, limit):
        with pool.connection() as conn, conn.cursor() as cur:
            cur.execute("SELECT id, phone, text FROM reminders WHERE fired_at IS NULL LIMIT %s{lock}", (limit,))
            yield cur, cur.fetchall()
    """

PLAIN_SENDER = """
    from .outbox import due_reminders, fired


    def fire_due(pool, sms) -> None:
        with due_reminders(pool, 50) as (cur, rows):
            for row_id, phone, text in rows:
                sms.send(phone, text)
                fired(cur, row_id)
    """

LOCK = " FOR UPDATE SKIP LOCKED"


def _select_line(source: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "cur.execute(" in line
                and "UPDATE" not in line)


def _check(tmp_path, outbox: str, sender: str):
    write(tmp_path, {"pings/__init__.py": "", "pings/outbox.py": outbox, "pings/sender.py": sender})
    return findings(tmp_path, "pings/outbox.py", codes=("OG302",))


@pytest.mark.parametrize("annotation", ["", " -> Iterator[Batch]"], ids=["built", "annotated"])
def test_a_batch_object_yielded_to_the_with_block(tmp_path, annotation):
    outbox = OUTBOX.format(annotation=annotation, lock="")
    assert _check(tmp_path, outbox, SENDER) == [(_select_line(outbox), "OG302")]


def test_rows_yielded_with_their_cursor(tmp_path):
    outbox = PLAIN.format(lock="")
    assert _check(tmp_path, outbox, PLAIN_SENDER) == [(_select_line(outbox), "OG302")]


@pytest.mark.parametrize("outbox, sender", [(OUTBOX.replace("{annotation}", ""), SENDER), (PLAIN, PLAIN_SENDER)],
                         ids=["batch", "plain"])
def test_rows_selected_with_skip_locked_are_clean(tmp_path, outbox, sender):
    assert _check(tmp_path, outbox.format(lock=LOCK), sender) == []


def test_a_batch_only_read_is_clean(tmp_path):
    sender = SENDER.replace("                batch.done(row_id)\n", "")
    assert _check(tmp_path, OUTBOX.format(annotation="", lock=""), sender) == []
