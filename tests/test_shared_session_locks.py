"""OG101: a lock helper that takes a session advisory lock on the Session its module imports (Flask-SQLAlchemy's
``db.session``), yields and unlocks after: a caller's ``with`` block that commits that same Session (spelled
through its own import) hands the connection back to the pool with the lock on it."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

EXTENSIONS = """\
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()
"""

LOCKS = """\
    from contextlib import contextmanager

    from sqlalchemy import text

    from crew.extensions import db


    class Busy(Exception):
        pass


    @contextmanager
    def roster_lock(team_id):
        got = db.session.execute(text("SELECT pg_try_advisory_lock(77, :t)"), {"t": team_id}).scalar()
        if not got:
            raise Busy(team_id)
        try:
            yield
        finally:
            db.session.execute(text("SELECT pg_advisory_unlock(77, :t)"), {"t": team_id})
"""

SERVICE = """\
    from crew import extensions
    from crew.locks import roster_lock


    def rebuild_roster(team_id, members):
        with roster_lock(team_id):
            for member in members:
                extensions.db.session.execute(extensions.db.text("INSERT INTO roster (team, member) VALUES (:t, :m)"),
                                              {{"t": team_id, "m": member}})
                {ending}
"""


@pytest.mark.parametrize("ending, expected", [("extensions.db.session.commit()", [(14, "OG101")]), ("pass", [])])
def test_a_helper_locking_on_the_imported_session(tmp_path, ending, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'crew'\n", "crew/__init__.py": "",
                     "crew/extensions.py": EXTENSIONS, "crew/locks.py": LOCKS,
                     "crew/service.py": SERVICE.format(ending=ending)})
    assert findings(tmp_path, "crew/locks.py", codes=("OG101",)) == expected
