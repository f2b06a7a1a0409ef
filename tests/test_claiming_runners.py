"""A project runner the scheduler is handed with the work as an argument (``.do(leased, "name", ttl, work)``):
when the runner takes a claim before it calls what it is handed, the runner is the job, claim and all -- not the
work it calls.  A claim it gives back after the work still lets a later tick of another replica run again, unless
the work it is handed marks what it did in the rows it picks."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

JOBS = """
    import threading
    import time
    import secrets

    import redis
    import schedule

    from {work_module} import {work}

    store = redis.Redis()


    def _quietly(target, *args):
        try:
            target(*args)
        except Exception:
            pass


    def leased(name, ttl_ms, target, *args):
        key = f"lease:{{name}}"
        me = secrets.token_hex(8)
        {claim}
        {run}


    def start():
        schedule.every(2).minutes.do(leased, "invoices", 90_000, {work}, 50)
        threading.Thread(target=lambda: [schedule.run_pending() or time.sleep(1) for _ in iter(int, 1)]).start()
    """

CLAIM = "if not store.set(key, me, nx=True, px=ttl_ms):\n            return"
NO_CLAIM = "store.incr(key)"
DIRECT = "target(*args)"
RELEASED = ("try:\n            _quietly(target, *args)\n        finally:\n"
            "            store.register_script(GIVE_BACK)(keys=[key], args=[me])")

GIVE_BACK = """
GIVE_BACK = \"\"\"
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
\"\"\"
"""

WORK = """
    import requests
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql://billing@db/billing")


    def push_invoices(limit):
        with engine.begin() as conn:
            rows = conn.execute(text("SELECT id FROM invoices WHERE pushed_at IS NULL LIMIT :n"), {"n": limit}).all()
        for row in rows:
            requests.post("https://erp.example.com/invoices", json={"id": row.id}, timeout=10)
            {mark}
    """

MARK = ('with engine.begin() as conn:\n                conn.execute(text("UPDATE invoices SET pushed_at = now() '
        'WHERE id = :i"), {"i": row.id})')


def _project(tmp_path, claim: str, run: str, mark: str = "pass") -> None:
    jobs = JOBS.format(work_module="billing.push", work="push_invoices", claim=claim, run=run)
    if "GIVE_BACK" in run:
        jobs = jobs.replace("store = redis.Redis()\n", "store = redis.Redis()\n" + GIVE_BACK.replace("\n", "\n    "))
    write(tmp_path, {"billing/__init__.py": "", "billing/jobs.py": jobs,
                     "billing/push.py": WORK.replace("{mark}", mark)})


def _reported(tmp_path):
    return [code for _, code in findings(tmp_path, "billing/jobs.py")]


def test_a_runner_that_claims_before_calling_the_work_is_the_job(tmp_path):
    _project(tmp_path, CLAIM, DIRECT)
    assert _reported(tmp_path) == []


def test_a_runner_without_a_claim_runs_the_work_on_every_replica(tmp_path):
    _project(tmp_path, NO_CLAIM, DIRECT)
    assert _reported(tmp_path) == ["OG201"]


def test_a_lease_given_back_around_work_that_marks_its_rows(tmp_path):
    # through a helper the runner hands the work on to, the lease released by compare-and-delete
    _project(tmp_path, CLAIM, RELEASED, MARK)
    assert _reported(tmp_path) == []


def test_a_lease_given_back_around_work_that_marks_nothing(tmp_path):
    _project(tmp_path, CLAIM, RELEASED)
    assert _reported(tmp_path) == ["OG201"]


def test_rows_the_work_picks_under_the_runners_lease(tmp_path):
    # OG302: the work runs only where the runner the scheduler is handed first won its lease
    _project(tmp_path, CLAIM, RELEASED, MARK)
    assert findings(tmp_path, "billing/push.py", codes=("OG302",)) == []


def test_rows_the_work_picks_under_a_runner_without_a_claim(tmp_path):
    _project(tmp_path, NO_CLAIM, RELEASED, MARK)
    assert findings(tmp_path, "billing/push.py", codes=("OG302",)) == [(10, "OG302")]
