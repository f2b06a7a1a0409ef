"""OG401: ``call_command("migrate")`` after a blocking session lock taken on Django's thread connection.

A cursor closed after ``SELECT pg_advisory_lock(...)`` leaves the connection open, and the lock with it: the
migrate the same thread runs next holds it, so booting replicas queue and the later ones find the schema applied.
That is the rule's own advice, and it is not reported.  Without the lock, or with the lock given back before the
migrate, it is; and a migrate in a helper whose caller in another module may or may not lock is reported too (the
lock must be seen).
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ENTRYPOINT = """\
    import os

    KEY = 7_340_021


    def migrate_first() -> None:
        from django.core.management import call_command
        from django.db import connection

        {lock}
        try:
            call_command("migrate", interactive=False)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [KEY])


    def main() -> None:
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_conf.settings")
        django.setup()
        migrate_first()
        os.execvp("gunicorn", ["gunicorn", "site_conf.wsgi:application"])


    if __name__ == "__main__":
        main()
"""

LOCKED = """with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [KEY])"""
GIVEN_BACK = LOCKED + """
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [KEY])"""
DOCKERFILE = 'FROM python:3.11\nCMD ["python", "entrypoint.py"]\n'


@pytest.mark.parametrize("lock, expected", [(LOCKED, []), ("pass", [(12, "OG401")]), (GIVEN_BACK, [(15, "OG401")])])
def test_a_session_lock_on_the_thread_connection_holds_for_migrate(tmp_path, lock, expected):
    write(tmp_path, {"entrypoint.py": ENTRYPOINT.replace("{lock}", lock), "Dockerfile": DOCKERFILE})
    assert findings(tmp_path, "entrypoint.py", codes=("OG401",)) == expected
