"""OG201: a scheduler an application factory starts only when its config mapping says so
(``app.config.from_object(Settings)`` then ``if app.config["SYNC_ENABLED"]:``), where the class reads that key
from an environment variable and the deployment files turn it on only in a workload of one replica whose server
runs one worker (a gunicorn configuration file taking its ``workers`` from a variable the workload sets to 1).
The same gate turned on in a scaled workload, or in one whose server runs several workers, runs it in each."""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project import deployment, index
from onceguard.project.service_settings import _one_process

SYNC = """\
    import requests
    from apscheduler.schedulers.background import BackgroundScheduler


    def push_stock_levels() -> None:
        requests.post("https://erp.example/stock", json={"full": True}, timeout=30)


    def begin_sync() -> BackgroundScheduler:
        runner = BackgroundScheduler()
        runner.add_job(push_stock_levels, "interval", minutes=30)
        runner.start()
        return runner
"""

SETTINGS = """\
    import os


    def _switch(variable: str) -> bool:
        return os.environ.get(variable, "").strip().lower() in ("1", "on", "true")


    class Settings:
        SYNC_ENABLED = _switch("STOCK_SYNC")
        ERP_URL = os.environ.get("ERP_URL", "https://erp.example")
"""

# the attribute on a base class, read directly off the environment
INHERITED = """\
    import os


    class Common:
        SYNC_ENABLED = os.environ.get("STOCK_SYNC") == "1"


    class Settings(Common):
        ERP_URL = os.environ.get("ERP_URL", "https://erp.example")
"""

FACTORY = """\
    from flask import Flask

    from stock.settings import Settings
    from stock.sync import begin_sync


    def build(settings_class: type = Settings) -> Flask:
        app = Flask(__name__)
        app.config.from_object(settings_class)
        if app.config["SYNC_ENABLED"]:
            begin_sync()
        return app
"""

# the class named by its import path, the scheduler module imported whole
FACTORY_BY_PATH = """\
    from flask import Flask

    from stock import sync


    def build() -> Flask:
        app = Flask(__name__)
        app.config.from_object("stock.settings.Settings")
        if not app.config["SYNC_ENABLED"]:
            return app
        sync.begin_sync()
        return app
"""

GUNICORN = """\
    import os

    bind = "0.0.0.0:8080"
    workers = int(os.environ.get("GUNICORN_WORKERS", "4"))
"""

DOCKERFILE = 'FROM python:3.12-slim\nCMD ["gunicorn", "-c", "gunicorn.conf.py", "stock.app:build()"]\n'

WORKLOAD = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {name}
    spec:
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: app
              image: stock:latest
              env:
                - name: GUNICORN_WORKERS
                  value: "{workers}"
                - name: STOCK_SYNC
                  value: "{sync}"
"""


def _check(tmp_path, web_sync="0", sync_workers=1, factory=FACTORY, settings=SETTINGS, extra=None):
    index.clear_cache()
    deployment.clear_cache()
    files = {"stock/__init__.py": "", "stock/sync.py": SYNC, "stock/settings.py": settings,
             "stock/app.py": factory, "gunicorn.conf.py": GUNICORN, "Dockerfile": DOCKERFILE,
             "deploy/web.yaml": WORKLOAD.format(name="stock-web", replicas=3, workers=2, sync=web_sync),
             "deploy/sync.yaml": WORKLOAD.format(name="stock-sync", replicas=1, workers=sync_workers, sync="1")}
    files.update(extra or {})
    write(tmp_path, files)
    return findings(tmp_path, "stock/sync.py")


def _job_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(SYNC).splitlines(), 1) if "def push_stock_levels" in line)


def test_a_config_key_only_a_one_worker_workload_turns_on(tmp_path):
    assert _check(tmp_path) == []
    assert _check(tmp_path / "on", web_sync="1") == [(_job_line(), "OG201")]


def test_the_one_replica_workload_serving_with_several_workers_runs_it_in_each(tmp_path):
    assert _check(tmp_path) == []
    assert _check(tmp_path / "three", sync_workers=3) == [(_job_line(), "OG201")]


def test_a_key_of_a_base_class_loaded_by_import_path(tmp_path):
    assert _check(tmp_path, factory=FACTORY_BY_PATH, settings=INHERITED) == []
    assert _check(tmp_path / "on", factory=FACTORY_BY_PATH, settings=INHERITED, web_sync="1") \
        == [(_job_line(), "OG201")]


def test_a_caller_that_hands_its_own_class_leaves_the_key_unknown(tmp_path):
    assert _check(tmp_path) == []
    other = "from stock.app import build\n\n\nclass Loud:\n    SYNC_ENABLED = True\n\n\napp = build(Loud)\n"
    assert _check(tmp_path / "handed", extra={"stock/wsgi.py": other}) == [(_job_line(), "OG201")]


def test_a_mapping_also_filled_another_way_leaves_the_key_unknown(tmp_path):
    assert _check(tmp_path) == []
    updated = FACTORY.replace("        if app.config", "        app.config.from_prefixed_env()\n        if app.config")
    assert _check(tmp_path / "updated", factory=updated) == [(_job_line(), "OG201")]


def test_gunicorn_worker_count_read_from_its_configuration_file(tmp_path):
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(textwrap.dedent(GUNICORN))
    command = ("gunicorn", "-c", "gunicorn.conf.py", "stock.app:build()")
    assert _one_process(command, {"GUNICORN_WORKERS": ("1", 3)}, True, [str(conf)]) is True
    assert _one_process(command, {"GUNICORN_WORKERS": ("2", 3)}, True, [str(conf)]) is False
    assert _one_process(command, {}, True, [str(conf)]) is False  # (the image or a secret may set it)
    assert _one_process(command + ("--workers", "1"), {}, True, [str(conf)]) is True
