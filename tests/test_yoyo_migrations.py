"""OG401: yoyo-migrations applied from the app factory in every replica.

``backend.apply_migrations(backend.to_apply(migrations))`` on a ``yoyo.get_backend(url)`` backend, run by
``create_app()``: every booting replica applies the same migrations at once.  Held under ``with
backend.lock():`` the replicas wait and the later ones find nothing to apply; run only by a command, it is one
process.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCHEMA = """\
    from yoyo import get_backend, read_migrations


    def ensure_schema() -> None:
        backend = get_backend("postgresql://db/stables")
        migrations = read_migrations("migrations")
        with backend:
            backend.apply_migrations(backend.to_apply(migrations))


    if __name__ == "__main__":
        ensure_schema()
"""

APP = """\
    from bottle import Bottle

    from stables.schema import ensure_schema


    def create_app() -> Bottle:
        ensure_schema()
        return Bottle()
"""


def test_migrations_applied_from_the_app_factory_are_reported(tmp_path):
    write(tmp_path, {"stables/__init__.py": "", "stables/schema.py": SCHEMA, "stables/app.py": APP})
    assert findings(tmp_path, "stables/schema.py", codes=("OG401",)) == [(8, "OG401")]


def test_migrations_held_under_the_backend_lock_are_left_alone(tmp_path):
    locked = SCHEMA.replace("""        with backend:
            backend.apply_migrations(backend.to_apply(migrations))""", """        with backend.lock():
            backend.apply_migrations(backend.to_apply(migrations))""")
    write(tmp_path, {"stables/__init__.py": "", "stables/schema.py": locked, "stables/app.py": APP})
    assert findings(tmp_path, "stables/schema.py", codes=("OG401",)) == []


def test_migrations_only_a_command_applies_are_left_alone(tmp_path):
    write(tmp_path, {"stables/__init__.py": "", "stables/schema.py": SCHEMA})
    assert findings(tmp_path, "stables/schema.py", codes=("OG401",)) == []
