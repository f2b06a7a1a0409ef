"""A module whose top level opens a connection, does its work and closes it again runs as a program does: a
person's (or CI's) script when nothing imports it and no deployment step runs it, not code every replica
runs as it imports the module (OG401 silent there)."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCRIPT = """\
    import psycopg2

    conn = psycopg2.connect(host="postgres", dbname="app", user="postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    {close}
"""

APP = """\
    from flask import Flask

    {imports}

    app = Flask(__name__)
"""


def _project(tmp_path, close="conn.close()", imports=""):
    write(tmp_path, {"db/prepare_db.py": SCRIPT.replace("{close}", close),
                     "web/__init__.py": "", "web/app.py": APP.replace("{imports}", imports)})


def test_a_script_that_closes_its_connection(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "db/prepare_db.py", codes=("OG401",)) == []


def test_the_same_module_imported_by_the_app(tmp_path):
    # Imported, its top level runs in every process that imports it.
    _project(tmp_path, imports="import prepare_db  # noqa: F401")
    write(tmp_path, {"web/prepare_db.py": SCRIPT.replace("{close}", "conn.close()")})
    assert findings(tmp_path, "web/prepare_db.py", codes=("OG401",)) == [(6, "OG401")]


def test_a_module_that_keeps_its_connection(tmp_path):
    # Nothing closes the connection: a module kept for what it opened, not a finished program.
    _project(tmp_path, close="")
    assert findings(tmp_path, "db/prepare_db.py", codes=("OG401",)) == [(6, "OG401")]


def test_a_script_the_deployment_runs_in_every_replica(tmp_path):
    _project(tmp_path)
    write(tmp_path, {"Dockerfile": "FROM python:3.12\nCOPY . /srv\nWORKDIR /srv\n"
                                   "CMD python db/prepare_db.py && gunicorn web.app:app\n",
                     "docker-compose.yml": "services:\n  web:\n    build: .\n    deploy:\n      replicas: 3\n"})
    assert findings(tmp_path, "db/prepare_db.py", codes=("OG401",)) == [(6, "OG401")]
