"""A try-lock's answer tested only to write a log line: ``if not got: log.warning(...)`` and then the work runs
anyway, on the replica that lost the lock as on the one that holds it.  An ``if`` that leaves (``return``,
``raise``) or that does anything but report decides the work, and is not this."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HELPER = textwrap.dedent("""
    from sqlalchemy import text

    LEDGER_CLASS = 77


    def try_ledger_lock(session, ledger_id):
        return session.execute(
            text("SELECT pg_try_advisory_xact_lock(:c, :l)"), {"c": LEDGER_CLASS, "l": ledger_id}
        ).scalar()
    """)

CLOSER = textwrap.dedent("""
    import logging

    from {import_line}

    audit = logging.getLogger("ledger")


    def close_ledger(session, gateway, ledger_id):
        with session.begin():
            got = {call}(session, ledger_id)
            if not got:
                {reaction}
            for entry in session.execute(text_of_open(ledger_id)):
                gateway.settle(entry.id, entry.amount)
    """)


def _project(tmp_path, reaction, import_line="ledger.locking import try_ledger_lock", call="try_ledger_lock"):
    write(tmp_path, {
        "ledger/__init__.py": "",
        "ledger/locking.py": HELPER,
        "ledger/closing.py": CLOSER.format(import_line=import_line, call=call, reaction=reaction),
    })
    return findings(tmp_path, "ledger/closing.py", codes=("OG106",))


def test_an_answer_only_logged_is_flagged(tmp_path):
    assert _project(tmp_path, 'audit.warning("ledger %s busy", ledger_id)') == [(11, "OG106")]


def test_a_module_import_and_print_is_flagged_too(tmp_path):
    found = _project(tmp_path, 'print("busy", ledger_id)', import_line="ledger import locking",
                     call="locking.try_ledger_lock")
    assert found == [(11, "OG106")]


def test_an_answer_that_stops_the_work_is_clean(tmp_path):
    assert _project(tmp_path, 'audit.info("ledger %s busy", ledger_id); return') == []


def test_an_answer_that_does_more_than_report_is_clean(tmp_path):
    # (waiting for the lock instead decides the work too: the loser settles only after the holder has)
    assert _project(tmp_path, "raise RuntimeError(ledger_id)") == []


def test_a_sql_answer_only_logged_in_the_same_function(tmp_path):
    source = textwrap.dedent("""
        import logging

        log = logging.getLogger(__name__)


        async def pay_out(conn, provider, run_id):
            async with conn.transaction():
                locked = await conn.fetchval("SELECT pg_try_advisory_xact_lock(9, $1)", run_id)
                if not locked:
                    log.error("run %s held elsewhere", run_id)
                for row in await conn.fetch("SELECT id, cents FROM payouts WHERE run_id = $1", run_id):
                    await provider.send(row["id"], row["cents"])
        """)
    write(tmp_path, {"payouts.py": source})
    assert findings(tmp_path, "payouts.py", codes=("OG106",)) == [(9, "OG106")]
