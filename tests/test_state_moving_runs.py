"""OG201: a claim taken and given back around the work stops runs overlapping; a replica whose tick comes after
the release runs again, which is harmless only when the work marks what it did in the rows it picks.  That mark
may be one UPDATE that picks rows by a column and moves them out of it (``SET expired_at = now() WHERE expired_at
IS NULL``, also inside ``WITH ... RETURNING``), or a per-row UPDATE of the rows a helper's SELECT hands back.  A
counter stepped in SQL is no mark: the rows still match."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOB = """\
    import psycopg
    import redis
    from apscheduler.schedulers.background import BackgroundScheduler

    from orchard import texts

    r = redis.Redis(host="redis")
    sched = BackgroundScheduler(timezone="UTC")


    def _due(conn):
        return conn.execute("SELECT id, phone FROM plots WHERE watered_at IS NULL").fetchall()


    def water_plots() -> None:
        if not r.set("locks:watering", "1", nx=True, ex=120):
            return
        try:
            with psycopg.connect("postgresql://db/orchard") as conn:
{work}
        finally:
            r.delete("locks:watering")


    sched.add_job(water_plots, "interval", minutes=10)
    sched.start()
"""

PER_ROW = """\
                for plot_id, phone in _due(conn):
                    texts.send(phone, "watered")
                    conn.execute("UPDATE plots SET watered_at = now() WHERE id = %s", (plot_id,))
                    conn.commit()"""

ONE_UPDATE = """\
                rows = conn.execute(
                    "WITH done AS (UPDATE plots SET watered_at = now() "
                    "WHERE watered_at IS NULL RETURNING phone) SELECT phone FROM done").fetchall()
                for (phone,) in rows:
                    texts.send(phone, "watered")"""

STEPPED = """\
                rows = conn.execute(
                    "UPDATE plots SET water_left = water_left - 1 WHERE water_left > 0 RETURNING phone").fetchall()
                for (phone,) in rows:
                    texts.send(phone, "watered")"""

TEXTS = """\
    import httpx


    def send(phone: str, body: str) -> None:
        httpx.post("https://sms.example/send", json={"to": phone, "body": body})
"""


def _check(tmp_path, work):
    write(tmp_path, {"orchard/__init__.py": "", "orchard/jobs.py": JOB.format(work=work), "orchard/texts.py": TEXTS})
    return [code for _, code in findings(tmp_path, "orchard/jobs.py")]


@pytest.mark.parametrize("work", [PER_ROW, ONE_UPDATE], ids=["rows-a-helper-hands-back", "one-update-moves-them"])
def test_a_released_claim_around_work_that_moves_the_rows_it_picks_is_enough(tmp_path, work):
    assert _check(tmp_path, work) == []


def test_a_counter_stepped_in_sql_is_no_mark_a_later_run_respects(tmp_path):
    assert _check(tmp_path, STEPPED) == ["OG201"]
