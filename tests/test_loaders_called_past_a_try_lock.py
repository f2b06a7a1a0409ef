"""A loader that selects rows by state and hands them back, called by a function that first tries a job-wide
advisory lock through a project helper and returns when it lost: only the lock's holder reaches the SELECT, so the
rows are not picked by two replicas, whatever set-up comes before the test.  The same loader called with no such
test is a pickup with no claim."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUARD = textwrap.dedent("""
    SYNC_KEY = 4242


    def try_hold(conn, key):
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        return bool(row and row[0])


    def let_go(conn, key):
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    """)

SYNC = textwrap.dedent("""
    from {import_line}


    def _stale_invoices(conn):
        cur = conn.execute("SELECT id, total FROM invoices WHERE synced_at IS NULL ORDER BY id LIMIT 50")
        return cur.fetchall()


    def sync_invoices(conn, ledger):
        conn.autocommit = True
        ledger.connect()
        {guard}
        try:
            rows = _stale_invoices(conn)
            if rows:
                ledger.post_batch(rows)
                conn.execute("UPDATE invoices SET synced_at = now() WHERE id = ANY(%s)", ([r[0] for r in rows],))
        finally:
            {release}
    """)

TESTED = "if not {call}(conn, SYNC_KEY):\n            return 0"


def _project(tmp_path, guard, release, import_line="billing.guard import SYNC_KEY, let_go, try_hold"):
    write(tmp_path, {"billing/__init__.py": "", "billing/guard.py": GUARD,
                     "billing/sync.py": SYNC.replace("{import_line}", import_line).replace("{guard}", guard)
                     .replace("{release}", release)})
    return findings(tmp_path, "billing/sync.py", codes=("OG302",))


def test_a_loader_reached_only_past_a_won_try_lock_is_clean(tmp_path):
    assert _project(tmp_path, TESTED.format(call="try_hold"), "let_go(conn, SYNC_KEY)") == []


def test_the_guard_module_imported_whole_is_clean_too(tmp_path):
    found = _project(tmp_path, TESTED.format(call="guard.try_hold").replace("SYNC_KEY", "guard.SYNC_KEY"),
                     "guard.let_go(conn, guard.SYNC_KEY)", import_line="billing import guard")
    assert found == []


def test_a_loader_called_with_no_claim_is_flagged(tmp_path):
    assert _project(tmp_path, "pass", "pass") == [(6, "OG302")]
