"""OG201: a scheduler handed a task's enqueue method runs the task's function each tick of each replica.

``scheduler.add_job(publish_rosters.send, CronTrigger(...))`` (Dramatiq), ``add_job(task.delay, ...)`` (Celery):
every replica's scheduler enqueues the task on each tick and a worker runs it each time: the job is the task's
function, judged for a claim where it is defined.  A lock made not to wait (``client.lock(name, blocking=False)``)
whose plain ``acquire()`` is tested is that claim.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TASKS = """\
    import dramatiq
    import httpx
    import redis

    client = redis.Redis(host="redis")


    @dramatiq.actor(queue_name="rosters")
    def publish_rosters() -> None:
        httpx.put("https://rota.example.org/rosters", json={})
"""

CLOCK = """\
    from apscheduler.schedulers.blocking import BlockingScheduler

    from pool.tasks import publish_rosters


    def main() -> None:
        scheduler = BlockingScheduler(timezone="UTC")
        scheduler.add_job(publish_rosters.send, "cron", day_of_week="sun", hour=18)
        scheduler.start()


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path, tasks: str = TASKS, clock: str = CLOCK) -> None:
    write(tmp_path, {"pool/__init__.py": "", "pool/tasks.py": tasks, "pool/clock.py": clock})
    (tmp_path / "Procfile").write_text("worker: dramatiq pool.tasks\nclock: python -m pool.clock\n")


@pytest.mark.parametrize("method", ["send", "send_with_options"])
def test_an_enqueue_method_handed_to_a_scheduler_schedules_the_task(tmp_path, method):
    _project(tmp_path, clock=CLOCK.replace("publish_rosters.send", f"publish_rosters.{method}"))
    assert findings(tmp_path, "pool/clock.py") == [(8, "OG201")]


def test_a_task_that_claims_with_a_lock_made_not_to_wait_is_claimed(tmp_path):
    claimed = TASKS.replace("""    def publish_rosters() -> None:
""", """    def publish_rosters() -> None:
        lock = client.lock("rosters:publish", timeout=900, blocking=False)
        if not lock.acquire():
            return
""")
    _project(tmp_path, tasks=claimed)
    assert findings(tmp_path, "pool/clock.py") == []


def test_the_same_lock_left_to_wait_claims_nothing(tmp_path):
    waiting = TASKS.replace("""    def publish_rosters() -> None:
""", """    def publish_rosters() -> None:
        lock = client.lock("rosters:publish", timeout=900)
        if not lock.acquire():
            return
""")
    _project(tmp_path, tasks=waiting)
    assert findings(tmp_path, "pool/clock.py") == [(8, "OG201")]
