"""A repository that keeps a shared library beside its service (``shared/pyproject.toml`` with
``shared/common/``) installs it into the service's image: the service's ``from common.clock import now`` is
that library's code, read as the project's own.  And calls that only compute (``time.mktime``, SQLAlchemy's
``false()`` or ``func.now()``) change nothing outside the process.
"""
from __future__ import annotations

import os

from onceguard.config import from_mapping
from onceguard.engine.check import check_source

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CLOCK = """\
    from datetime import datetime, timezone


    def now():
        return datetime.now(timezone.utc)
"""

NOTIFY = """\
    import requests


    def tell(channel, text):
        requests.post("https://hooks.example.com/" + channel, json={"text": text}, timeout=5)
"""

STORE = """\
    from sqlalchemy import create_engine, delete, false
    from sqlalchemy.orm import Session

    from common.clock import now

    from .models import Upload

    engine = create_engine("postgresql+psycopg://files@db/files")


    def drop_expired():
        with Session(engine) as session, session.begin():
            session.execute(delete(Upload).where(Upload.expires_at < now(), Upload.kept == false()))
"""

MODELS = """\
    from sqlalchemy import Boolean, DateTime
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Upload(Base):
        __tablename__ = "uploads"
        id: Mapped[int] = mapped_column(primary_key=True)
        expires_at = mapped_column(DateTime)
        kept = mapped_column(Boolean)
"""

JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler

    from common.notify import tell

    from .store import drop_expired

    scheduler = BackgroundScheduler()


    def sweep():
        drop_expired()


    def report():
        tell("ops", "still here")


    scheduler.add_job(sweep, "interval", minutes=10)
    scheduler.add_job(report, "interval", hours=1)
    scheduler.start()
"""

FILES = {
    "shared/pyproject.toml": "[project]\nname = 'common'\nversion = '1'\n",
    "shared/common/__init__.py": "",
    "shared/common/clock.py": CLOCK,
    "shared/common/notify.py": NOTIFY,
    "service/pyproject.toml": "[project]\nname = 'files'\nversion = '1'\n",
    "service/files/__init__.py": "",
    "service/files/models.py": MODELS,
    "service/files/store.py": STORE,
    "service/files/jobs.py": JOBS,
}


def _diagnostics(root, path):
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    return [d for d in check_source(source, full, from_mapping({}, root=str(root)), cross_file=True)
            if d.code == "OG201"]


def test_the_shared_library_is_read_as_the_projects_code(tmp_path):
    write(tmp_path, FILES)
    # The sweep deletes expired rows (the same result however many replicas run it) and asks the shared
    # clock the time; the report posts to a webhook through the shared library, once per replica.
    assert findings(tmp_path, "service/files/jobs.py") == [(14, "OG201")]
    (report,) = _diagnostics(tmp_path, "service/files/jobs.py")
    assert any(place.path.endswith(os.path.join("shared", "common", "notify.py")) for place in report.related)


def test_a_shared_library_found_under_its_src(tmp_path):
    files = {name.replace("shared/common/", "shared/src/common/"): text for name, text in FILES.items()}
    write(tmp_path, files)
    assert findings(tmp_path, "service/files/jobs.py") == [(14, "OG201")]


def test_without_the_library_its_calls_are_unknown(tmp_path):
    # The same service with the shared library not in the repository: ``now()`` is a call nothing shows
    # to be harmless, so the sweep is a job whose effects are not known.
    files = {name: text for name, text in FILES.items() if not name.startswith("shared/")}
    write(tmp_path, files)
    assert findings(tmp_path, "service/files/jobs.py") == [(10, "OG201"), (14, "OG201")]


TIMED = """\
    import os
    import time

    from apscheduler.schedulers.background import BackgroundScheduler

    UPLOADS = "/var/tmp/uploads"
    scheduler = BackgroundScheduler()


    def clear_old_uploads():
        cutoff = time.mktime(time.localtime()) - 1800
        for name in os.listdir(UPLOADS):
            path = os.path.join(UPLOADS, name)
            if os.path.getmtime(path) < cutoff:
                os.remove(path)


    scheduler.add_job(clear_old_uploads, "interval", minutes=30)
    scheduler.start()
"""


def test_time_functions_compute_only(tmp_path):
    # Removing old files from a directory: the same result however often it runs (an idempotent sweep,
    # OG204 when selected), and ``time.mktime`` says nothing about effects.
    write(tmp_path, {"svc/__init__.py": "", "svc/cleanup.py": TIMED})
    assert findings(tmp_path, "svc/cleanup.py") == []
    assert findings(tmp_path, "svc/cleanup.py", codes=("OG204",), select=["OG204"]) == [(10, "OG204")]


FUNC_NOW = """\
    from apscheduler.schedulers.background import BackgroundScheduler
    from sqlalchemy import create_engine, func, update
    from sqlalchemy.orm import Session

    from .models import Upload

    engine = create_engine("postgresql+psycopg://files@db/files")
    scheduler = BackgroundScheduler()


    def expire_links():
        with Session(engine) as session, session.begin():
            due = func.coalesce(Upload.expires_at, func.now()) < func.now()
            session.execute(update(Upload).where(due).values(kept=False))


    scheduler.add_job(expire_links, "interval", minutes=5)
    scheduler.start()
"""


def test_sql_functions_build_a_statement(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/models.py": MODELS, "svc/expiry.py": FUNC_NOW})
    assert findings(tmp_path, "svc/expiry.py") == []
    assert findings(tmp_path, "svc/expiry.py", codes=("OG204",), select=["OG204"]) == [(11, "OG204")]


CLIENT_REFRESH = """\
    import boto3
    from apscheduler.schedulers.background import BackgroundScheduler

    CLIENTS = {}
    scheduler = BackgroundScheduler()


    def renew_clients():
        # A new client picks up rotated credentials; this process's own cache holds it.
        CLIENTS["s3"] = boto3.client("s3")
        CLIENTS["sqs"] = boto3.Session().client("sqs")


    scheduler.add_job(renew_clients, "interval", minutes=50)
    scheduler.start()
"""


def test_making_an_sdk_client_sends_nothing(tmp_path):
    write(tmp_path, {"svc/__init__.py": "", "svc/clients.py": CLIENT_REFRESH})
    assert findings(tmp_path, "svc/clients.py") == []
