"""OG201: a registry whose items a ``for`` hands to the ``schedule`` library (``for fn in self._entries:
clock.every().hour.do(self._guarded, app, fn)``, or ``.do(fn)`` itself): each registered function is a job of
that scheduler, judged where it is registered; the wrapper that calls what it is handed is not the job."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

RUNNER = """\
    import threading
    import time

    import schedule


    class Chores:
        def __init__(self) -> None:
            self._entries = []
            self._clock = schedule.Scheduler()

        def hourly(self, func):
            self._entries.append(func)
            return func

        def start(self, app) -> None:
            for func in self._entries:
                self._clock.every().hour.do(self._guarded, app, func)
            threading.Thread(target=self._pump, daemon=True).start()

        def _guarded(self, app, func) -> None:
            with app.app_context():
                func()

        def _pump(self) -> None:
            while True:
                self._clock.run_pending()
                time.sleep(30)


    chores = Chores()
"""

APP = """\
    from flask import Flask

    from chores.runner import chores


    def create_app() -> Flask:
        app = Flask(__name__)
        from chores import tasks  # noqa: F401  (registers the chores)

        chores.start(app)
        return app
"""

TASKS = """\
    import requests

    from onceguard.guards import claim_period

    from chores.runner import chores


    @chores.hourly
    def sync_rates() -> None:
{lead}
        requests.post("https://rates.example/sync", timeout=10)
"""

CLAIM = """\
        if not claim_period("chores.sync_rates", 3600):
            return"""


@pytest.mark.parametrize("claimed, expected", [(True, []), (False, [(9, "OG201")])])
def test_the_registered_function_is_the_job(tmp_path, claimed, expected):
    write(tmp_path, {
        "chores/__init__.py": "",
        "chores/runner.py": RUNNER,
        "chores/app.py": APP,
        "chores/tasks.py": TASKS.replace("{lead}\n", CLAIM + "\n" if claimed else ""),
    })
    assert findings(tmp_path, "chores/tasks.py") == expected
    assert findings(tmp_path, "chores/runner.py") == []  # (the wrapper only runs what it is handed)


PLAN = """\
    import time

    import schedule

    NIGHTLY = []


    def nightly(fn):
        NIGHTLY.append(fn)
        return fn


    def run_forever() -> None:
        for fn in NIGHTLY:
            schedule.every().day.at("03:00").do(fn)
        while True:
            schedule.run_pending()
            time.sleep(60)
"""

WORKER = """\
    import httpx

    from planner import plan
    from planner.leases import claim_night


    @plan.nightly
    def rebuild_search_index() -> None:
{lead}
        httpx.post("https://search.example/rebuild")


    if __name__ == "__main__":
        plan.run_forever()
"""

NIGHT_CLAIM = """\
        if not claim_night("search-index"):
            return"""


@pytest.mark.parametrize("claimed, expected", [(True, []), (False, [(8, "OG201")])])
def test_a_module_registry_handed_to_do_itself(tmp_path, claimed, expected):
    write(tmp_path, {
        "planner/__init__.py": "",
        "planner/plan.py": PLAN,
        "planner/leases.py": "def claim_night(name):\n    raise NotImplementedError\n",
        "planner/worker.py": WORKER.replace("{lead}\n", NIGHT_CLAIM + "\n" if claimed else ""),
        "Procfile": "worker: python -m planner.worker\n",
    })
    assert findings(tmp_path, "planner/worker.py") == expected
