"""A project's own scheduler built from a container: a decorator (or a register call) puts each job in it, and a
never-ending loop with a pause calls everything in it on every pass. Every job put there is scheduled, run
wherever the loop runs (OG201), whatever the names; a job that claims its period first, or a loop that runs in
one process a person starts, is silent."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


TASKS = """\
    import time
    from dataclasses import dataclass
    from typing import Callable, List


    @dataclass
    class Every:
        run: Callable[[], None]
        seconds: float
        due: float = 0.0


    PLANNED: List[Every] = []


    def every(seconds: float):
        def keep(job):
            PLANNED.append(Every(job, seconds))
            return job

        return keep


    def forever(pause: float = 1.0) -> None:
        while True:
            now = time.monotonic()
            for item in PLANNED:
                if now >= item.due:
                    item.due = now + item.seconds
                    item.run()
            time.sleep(pause)
"""

REPORTS = """\
    import httpx

    from billing.tasks import every

    mailer = httpx.Client(base_url="https://mail.example.org")


    @every(seconds=3600)
    def send_reminders() -> None:
        mailer.post("/batches", json={"kind": "reminder"})
"""

MAIN = """\
    from billing import reports  # noqa: F401  (registers its jobs)
    from billing.tasks import forever

    if __name__ == "__main__":
        forever()
"""

DEPLOYED = {
    "pyproject.toml": "[project]\nname = 'billing'\n",
    "Dockerfile": "FROM python:3.12-slim\nCOPY . /app\nCMD [\"python\", \"-m\", \"billing.main\"]\n",
    "billing/__init__.py": "",
    "billing/tasks.py": TASKS,
    "billing/main.py": MAIN,
}


def test_a_job_a_project_decorator_puts_in_a_repeated_container_is_reported_where_it_is_defined(tmp_path):
    write(tmp_path, {**DEPLOYED, "billing/reports.py": REPORTS})
    assert findings(tmp_path, "billing/reports.py") == [(9, "OG201")]


def test_the_finding_names_the_registration_and_the_loop(tmp_path):
    from onceguard.config import from_mapping
    from onceguard.engine.check import check_source

    write(tmp_path, {**DEPLOYED, "billing/reports.py": REPORTS})
    path = tmp_path / "billing" / "reports.py"
    found = [d for d in check_source(path.read_bytes(), str(path), from_mapping({}, root=str(tmp_path)),
                                     cross_file=True) if d.code == "OG201"]
    assert len(found) == 1
    assert "`@every`" in found[0].message and "`forever`" in found[0].message
    assert any(place.path.endswith("tasks.py") and place.line == 25 and "`PLANNED`" in place.message
               for place in found[0].related)


def test_a_job_that_claims_its_period_first_is_silent(tmp_path):
    claimed = REPORTS.replace(
        '    def send_reminders() -> None:\n',
        '    def send_reminders() -> None:\n        if not claim_period("reminders", 3600):\n            return\n',
    ).replace("import httpx\n", "import httpx\nfrom onceguard.guards import claim_period\n")
    write(tmp_path, {**DEPLOYED, "billing/reports.py": claimed})
    assert findings(tmp_path, "billing/reports.py") == []


def test_a_loop_no_deployment_runs_is_not_every_replica(tmp_path):
    # Without a deployment file the program is one a person runs: the loop runs in that one process.
    files = {name: text for name, text in DEPLOYED.items() if name != "Dockerfile"}
    write(tmp_path, {**files, "billing/reports.py": REPORTS})
    assert findings(tmp_path, "billing/reports.py") == []


def test_a_container_nothing_repeats_registers_nothing(tmp_path):
    once = TASKS.replace("    while True:\n", "    for _ in range(1):\n")
    write(tmp_path, {**DEPLOYED, "billing/tasks.py": once, "billing/reports.py": REPORTS})
    assert findings(tmp_path, "billing/reports.py") == []


@pytest.mark.parametrize("reports", [
    # renamed and imported under an alias
    REPORTS.replace("from billing.tasks import every", "from billing.tasks import every as hourly")
           .replace("@every(", "@hourly("),
    # the module imported, the decorator read from it
    REPORTS.replace("from billing.tasks import every", "from billing import tasks").replace("@every(", "@tasks.every("),
    # the decorator called by hand
    REPORTS.replace("    @every(seconds=3600)\n", "") + "\n\n    every(seconds=3600)(send_reminders)\n",
])
def test_the_same_registration_in_other_words_is_reported(tmp_path, reports):
    write(tmp_path, {**DEPLOYED, "billing/reports.py": reports})
    assert [code for _, code in findings(tmp_path, "billing/reports.py")] == ["OG201"]


def test_a_keyed_registry_called_from_a_function_the_loop_calls(tmp_path):
    tasks = """\
        import time

        JOBS = {}


        def register(job):
            JOBS[job.__name__] = job
            return job


        def run_pending() -> None:
            for name, job in JOBS.items():
                job()


        def forever() -> None:
            while True:
                run_pending()
                time.sleep(60)
    """
    reports = REPORTS.replace("from billing.tasks import every", "from billing.tasks import register") \
                     .replace("@every(seconds=3600)", "@register")
    write(tmp_path, {**DEPLOYED, "billing/tasks.py": tasks, "billing/reports.py": reports})
    assert findings(tmp_path, "billing/reports.py") == [(9, "OG201")]


def test_a_registered_job_that_only_touches_its_own_process_is_silent(tmp_path):
    local = """\
        from billing.tasks import every

        seen = []


        @every(seconds=60)
        def trim_seen() -> None:
            del seen[:-100]
    """
    write(tmp_path, {**DEPLOYED, "billing/reports.py": local})
    assert findings(tmp_path, "billing/reports.py") == []


def test_the_registry_module_alone_in_one_file(tmp_path):
    # flake8 reads one file: a registry, its loop started at start-up and a job, all in one module.
    single = """\
        import threading
        import time

        import httpx
        from fastapi import FastAPI

        app = FastAPI()
        client = httpx.Client()
        ROUTINES = []


        def routine(job):
            ROUTINES.append(job)
            return job


        def cycle() -> None:
            while True:
                for job in ROUTINES:
                    job()
                time.sleep(30)


        @routine
        def push_totals() -> None:
            client.post("https://stats.example.org/totals", json={})


        @app.on_event("startup")
        def begin() -> None:
            threading.Thread(target=cycle, daemon=True).start()
    """
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'one'\n", "one.py": single})
    assert findings(tmp_path, "one.py", cross_file=False) == [(25, "OG201")]
    assert findings(tmp_path, "one.py") == [(25, "OG201")]


CLASS_TICKER = """\
    import time


    class Ticker:
        def __init__(self) -> None:
            self.entries = []

        def every(self, minutes: int):
            def attach(fn):
                self.entries.append((fn, minutes * 60))
                return fn

            return attach

        def run_forever(self) -> None:
            while True:
                for fn, period in self.entries:
                    fn()
                time.sleep(5)


    ticker = Ticker()
"""

CLASS_JOB = """\
    import httpx

    from billing.ticker import ticker


    @ticker.every(minutes=30)
    def charge_overdue() -> None:
        httpx.post("https://payments.example.org/charge-overdue")
"""

CLASS_MAIN = """\
    from billing import charges  # noqa: F401
    from billing.ticker import ticker

    if __name__ == "__main__":
        ticker.run_forever()
"""


def test_a_scheduler_object_whose_method_fills_its_own_list(tmp_path):
    # The container is an attribute of the instance; the decorator is a method of a module-level instance.
    write(tmp_path, {**DEPLOYED, "billing/ticker.py": CLASS_TICKER, "billing/charges.py": CLASS_JOB,
                     "billing/main.py": CLASS_MAIN})
    assert findings(tmp_path, "billing/charges.py") == [(7, "OG201")]


def test_a_scheduler_object_no_deployment_runs_is_silent(tmp_path):
    files = {name: text for name, text in DEPLOYED.items() if name != "Dockerfile"}
    write(tmp_path, {**files, "billing/ticker.py": CLASS_TICKER, "billing/charges.py": CLASS_JOB,
                     "billing/main.py": CLASS_MAIN})
    assert findings(tmp_path, "billing/charges.py") == []


def test_a_loop_that_hands_each_arriving_message_to_every_handler_is_a_consumer(tmp_path):
    # Its passes follow what arrives, not the clock: the handlers are event handlers, not scheduled jobs.
    dispatch = TASKS.replace("    def forever(pause: float = 1.0) -> None:\n        while True:\n",
                             "    def forever(pause: float = 1.0) -> None:\n        while True:\n"
                             "            message = inbox.get(timeout=pause)\n") \
                    .replace("    import time\n", "    import queue\n    import time\n\n    inbox = queue.Queue()\n", 1)
    assert "inbox.get(timeout=pause)" in dispatch and "    inbox = queue.Queue()" in dispatch
    write(tmp_path, {**DEPLOYED, "billing/tasks.py": dispatch, "billing/reports.py": REPORTS})
    assert findings(tmp_path, "billing/reports.py") == []


def test_a_loop_that_runs_until_a_shutdown_event_repeats_its_registry(tmp_path):
    until_stopped = TASKS.replace("    def forever(pause: float = 1.0) -> None:\n        while True:\n",
                                  "    def forever(pause: float = 1.0) -> None:\n        while not halt.is_set():\n") \
                         .replace("            time.sleep(pause)\n", "            halt.wait(pause)\n") \
                         .replace("    import time\n", "    import threading\n    import time\n\n    halt = threading.Event()\n", 1)
    assert "while not halt.is_set():" in until_stopped and "halt.wait(pause)" in until_stopped
    write(tmp_path, {**DEPLOYED, "billing/tasks.py": until_stopped, "billing/reports.py": REPORTS})
    assert findings(tmp_path, "billing/reports.py") == [(9, "OG201")]


def test_a_loop_in_another_module_that_imports_the_registry_of_a_src_layout(tmp_path):
    # The loop spells the container as its import does (``billing.tasks.PLANNED``), not as the path under the
    # project's root (``src.billing.tasks.PLANNED``): both name the same list.
    loop = """\
        import time

        from billing.tasks import PLANNED


        def forever(pause: float = 1.0) -> None:
            while True:
                for item in PLANNED:
                    item.run()
                time.sleep(pause)
    """
    write(tmp_path, {"pyproject.toml": DEPLOYED["pyproject.toml"], "Dockerfile": DEPLOYED["Dockerfile"],
                     "src/billing/__init__.py": "", "src/billing/tasks.py": TASKS.split("    def forever")[0],
                     "src/billing/loop.py": loop, "src/billing/reports.py": REPORTS,
                     "src/billing/main.py": MAIN.replace("billing.tasks import forever", "billing.loop import forever")})
    assert findings(tmp_path, "src/billing/reports.py") == [(9, "OG201")]
