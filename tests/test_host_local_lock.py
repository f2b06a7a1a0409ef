"""OG601 host-local-lock: the shapes the rule doc does not show, and the lookalikes it must leave alone."""
from __future__ import annotations

from onceguard.testing import findings_in_written_file, write_source as write


def og601(tmp_path, path: str, source: str, cross_file: bool = False):
    return findings_in_written_file(tmp_path, path, source, "OG601", cross_file)


STARTUP = """
    import tempfile
    from pathlib import Path

    from filelock import FileLock

    from app.seeding import seed_examples


    async def on_startup(types: dict) -> None:
        lock_file = Path(tempfile.gettempdir()) / "examples.lock"
        lock = FileLock(lock_file, timeout=1)
        with lock:
            await seed_examples(types)
"""


def test_database_work_in_another_module_is_followed_by_the_cli(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/seeding.py", """
        from app.db import session_scope
        from app.models import Example


        async def _folder(session):
            session.add(Example(name="folder"))
            await session.flush()


        async def seed_examples(types: dict) -> None:
            async with session_scope() as session:
                await _folder(session)
    """)
    found = og601(tmp_path, "app/main.py", STARTUP, cross_file=True)
    assert [d.line for d in found] == [12]
    assert "`seed_examples()` → `_folder()` → `session.add()`" in found[0].message
    assert found[0].suggestion[:1].isupper()
    # flake8 sees one file: nothing there proves the work touches a database
    assert og601(tmp_path, "app/main.py", STARTUP, cross_file=False) == []


def test_work_on_local_files_in_another_module_is_left_alone(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/seeding.py", """
        import json
        from pathlib import Path

        async def seed_examples(types: dict) -> None:
            found = {}
            found.update(types)
            Path("/tmp/examples.json").write_text(json.dumps(found))
    """)
    assert og601(tmp_path, "app/main.py", STARTUP, cross_file=True) == []


def test_lock_in_a_data_directory_is_not_judged(tmp_path):
    # A data directory may be a volume every replica mounts; only private temp directories are sure.
    assert og601(tmp_path, "app/boot.py", """
        from filelock import FileLock
        from sqlalchemy.orm import Session

        from app.settings import DATA_DIR


        def seed(session: Session) -> None:
            with FileLock(DATA_DIR / "seed.lock"):
                session.add(object())
                session.commit()
    """) == []


def test_acquire_then_release_with_os_open_and_flock(tmp_path):
    found = og601(tmp_path, "app/boot.py", """
        import fcntl
        import os

        from django.contrib.auth.models import User


        def ensure_admin() -> None:
            fd = os.open("/tmp/admin.lock", os.O_CREAT | os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if not User.objects.filter(is_superuser=True).exists():
                    User.objects.create(username="admin", is_superuser=True)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    """)
    assert [d.line for d in found] == [10]


def test_set_add_is_not_a_session(tmp_path):
    assert og601(tmp_path, "app/boot.py", """
        import tempfile

        from filelock import FileLock


        def collect(paths) -> set:
            seen = set()
            with FileLock(tempfile.gettempdir() + "/collect.lock"):
                for path in paths:
                    seen.add(path)
            return seen
    """) == []


def test_reads_only_are_per_host_work(tmp_path):
    assert og601(tmp_path, "app/cache.py", """
        import tempfile

        from filelock import FileLock
        from sqlalchemy import text
        from sqlalchemy.orm import Session

        LOCAL = {}


        def refresh(session: Session) -> None:
            with FileLock(tempfile.gettempdir() + "/refresh.lock"):
                LOCAL.update(dict(session.execute(text("SELECT key, value FROM settings")).all()))
    """) == []


def test_write_statement_through_a_typed_connection(tmp_path):
    found = og601(tmp_path, "app/jobs.py", """
        import tempfile

        import asyncpg
        from filelock import AsyncFileLock


        async def rollup(conn: asyncpg.Connection) -> None:
            async with AsyncFileLock(tempfile.gettempdir() + "/rollup.lock"):
                await conn.execute("INSERT INTO daily SELECT day, sum(n) FROM hits GROUP BY day")
    """)
    assert [d.line for d in found] == [9]


def test_tests_are_exempt(tmp_path):
    assert og601(tmp_path, "tests/test_boot.py", """
        import tempfile

        from filelock import FileLock
        from sqlalchemy.orm import Session


        def test_seed(session: Session) -> None:
            with FileLock(tempfile.gettempdir() + "/t.lock"):
                session.commit()
    """) == []


def test_lock_kept_on_the_instance(tmp_path):
    found = og601(tmp_path, "app/seeder.py", """
        import tempfile
        from pathlib import Path

        from filelock import FileLock
        from sqlalchemy.orm import Session


        class Seeder:
            def __init__(self, session: Session) -> None:
                self.session = session
                self._lock = FileLock(Path(tempfile.gettempdir()) / "seed.lock")

            def run(self, rows: list) -> None:
                with self._lock:
                    self.session.add_all(rows)
                    self.session.commit()
    """)
    assert [d.line for d in found] == [12]
