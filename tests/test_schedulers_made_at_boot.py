"""A scheduler kept on an object that holds ``None`` until the process boots (``self._clock = None`` in
``__init__``, ``self._clock = BackgroundScheduler()`` in a worker's boot hook): the placeholder is no second
value for ``self._clock.add_job(...)``, which ``None`` would not answer, so the job is found as any other.

And an ``assert`` of something the job was handed (``assert self._broker is not None``) before a claim acts on
nothing: the claim still leads the job."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HOOKS = """
    import logging

    from apscheduler.schedulers.background import BackgroundScheduler

    log = logging.getLogger(__name__)


    class TickerHooks:
        def __init__(self, crons):
            self._crons = crons
            self._clock = None
            self._queue = None

        def _fire(self, name):{guard}
            self._queue.enqueue(name)

        def on_boot(self, queue):
            self._queue = queue
            self._clock = BackgroundScheduler(timezone="UTC")
            for name, spec in self._crons:
                self._clock.add_job(self._fire, "cron", args=[name], **spec)
            self._clock.start()
    """

CLAIM = """
            if not self._redis.set(f"tick:{name}", "1", nx=True, ex=300):
                return"""

ASSERTED_CLAIM = """
            assert self._queue is not None
            if not self._redis.set(f"tick:{name}", "1", nx=True, ex=300):
                return"""

# The scheduler's class reached through its module, the boot hook a coroutine.
MODULE_IMPORT = HOOKS.replace(
    "from apscheduler.schedulers.background import BackgroundScheduler",
    "from apscheduler.schedulers import asyncio as aps").replace(
    "BackgroundScheduler(timezone", "aps.AsyncIOScheduler(timezone").replace(
    "def on_boot(self, queue)", "async def on_boot(self, queue)")


def _fire_line(source: str) -> int:
    import textwrap

    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "def _fire" in line)


@pytest.mark.parametrize("hooks", [HOOKS, MODULE_IMPORT], ids=["by-name", "through-module"])
def test_a_scheduler_made_in_a_boot_hook_schedules_its_jobs(tmp_path, hooks):
    write(tmp_path, {"ticks/__init__.py": "", "ticks/hooks.py": hooks.format(guard="")})
    assert findings(tmp_path, "ticks/hooks.py") == [(_fire_line(hooks), "OG201")]


def test_a_claim_leading_the_job_is_clean(tmp_path):
    source = HOOKS.replace("        self._crons = crons\n", "        self._crons = crons\n"
                           "        self._redis = redis.Redis()\n").replace("import logging\n",
                                                                           "import logging\n\n    import redis\n")
    write(tmp_path, {"ticks/__init__.py": "", "ticks/hooks.py": source.format(guard=CLAIM)})
    assert findings(tmp_path, "ticks/hooks.py") == []


JOBS = """
    import redis
    from apscheduler.schedulers.background import BackgroundScheduler

    r = redis.Redis()
    clock = BackgroundScheduler(timezone="UTC")


    def settle(ledger):{guard}
        ledger.post_interest()


    clock.add_job(settle, "cron", hour=1, args=[object()])
    """

ASSERTED = """
        assert ledger is not None, "no ledger configured"
        if not r.set("settle", "1", nx=True, ex=3600):
            return"""


def test_an_assert_before_the_claim_is_preamble(tmp_path):
    write(tmp_path, {"bank/__init__.py": "", "bank/jobs.py": JOBS.format(guard=ASSERTED)})
    assert findings(tmp_path, "bank/jobs.py") == []


def test_an_assert_that_calls_something_is_not_preamble(tmp_path):
    guard = ASSERTED.replace("assert ledger is not None", "assert ledger.open_day()")
    write(tmp_path, {"bank/__init__.py": "", "bank/jobs.py": JOBS.format(guard=guard)})
    assert findings(tmp_path, "bank/jobs.py") == [(9, "OG201")]


def test_an_assert_before_the_claim_in_a_boot_hook_scheduler(tmp_path):
    source = HOOKS.replace("        self._crons = crons\n", "        self._crons = crons\n"
                           "        self._redis = redis.Redis()\n").replace("import logging\n",
                                                                           "import logging\n\n    import redis\n")
    write(tmp_path, {"ticks/__init__.py": "", "ticks/hooks.py": source.format(guard=ASSERTED_CLAIM)})
    assert findings(tmp_path, "ticks/hooks.py") == []
