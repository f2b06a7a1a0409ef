"""A migration runner handed a DB-API connection takes ``pg_advisory_xact_lock`` and applies every file in the
transaction the connection opened with its first statement, committing once after the last: the lock holds for
the whole run.  A commit between the lock and the files, or autocommit turned on, lets it go at once."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

RUNNER = """
    import pathlib

    LOCK_ID = 4242


    def apply_all(conn, folder):
        cur = conn.cursor()
        try:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
            cur.execute("CREATE TABLE IF NOT EXISTS applied (name text PRIMARY KEY)"){early}
            cur.execute("SELECT name FROM applied")
            done = {{row[0] for row in cur.fetchall()}}
            for path in sorted(pathlib.Path(folder).glob("*.sql")):
                if path.name in done:
                    continue
                cur.execute(path.read_text())
                cur.execute("INSERT INTO applied (name) VALUES (%s)", (path.name,))
            conn.commit()
        except Exception:
            conn.rollback()
            raise
    """

STARTUP = """
    import psycopg2

    from ledger.runner import apply_all


    def boot():
        conn = psycopg2.connect("dbname=ledger"){autocommit}
        apply_all(conn, "sql")
        conn.close()


    boot()
    """


def _project(tmp_path, early="", autocommit=""):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/runner.py": RUNNER.format(early=early),
                     "app.py": STARTUP.format(autocommit=autocommit)})


def test_an_xact_lock_held_until_the_runner_commits_is_clean(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "ledger/runner.py", codes=("OG403",)) == []


def test_a_commit_between_the_lock_and_the_files_is_flagged(tmp_path):
    _project(tmp_path, early="\n            conn.commit()")
    assert findings(tmp_path, "ledger/runner.py", codes=("OG403",)) == [(18, "OG403")]


def test_autocommit_turned_on_is_flagged(tmp_path):
    _project(tmp_path, autocommit="\n        conn.autocommit = True")
    assert findings(tmp_path, "ledger/runner.py", codes=("OG403",)) == [(17, "OG403")]
