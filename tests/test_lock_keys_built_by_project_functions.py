"""OG103: a job-wide key may be built by a function of the project from what it is handed (``def key_for(job,
*scope): ...; return key``): called with fixed values, and made only of its parameters, constants and text
conversions, it returns the same key on every replica.  A lock helper with a ``*scope`` parameter is read as the
lock it returns, and a Celery task declared with ``bind=True`` has a fixed ``self.name`` (its registered name), not
a fixed ``self.request.id``.
"""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

KEYS = """\
    import redis

    client = redis.Redis.from_url("redis://cache:6379/2")


    def key_for(job: str, *scope: object) -> str:
        key = f"fleet:{job}"
        if scope:
            key += "/" + "/".join(str(part) for part in scope)
        return key


    def exclusive(job: str, *scope: object, ttl: int = 600):
        return client.lock(key_for(job, *scope), timeout=ttl)
"""

TASKS = """\
    from celery import shared_task

    from fleet.keys import exclusive


    @shared_task(bind=True, name="fleet.rebalance_depots")
    def rebalance_depots(self, depot_id: int = 0) -> None:
        with exclusive({args}):
            print("moved vans")
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, tasks: str, keys: str = KEYS):
    write(tmp_path, {"fleet/__init__.py": "", "fleet/keys.py": keys, "fleet/tasks.py": tasks})
    return findings(tmp_path, "fleet/tasks.py", codes=("OG103",))


@pytest.mark.parametrize("args", ['"rebalance"', "self.name", '"rebalance", "all-depots"', "self.name, ttl=900"],
                         ids=["literal", "bound-task-name", "fixed-scope", "bound-task-name-and-ttl"])
def test_a_key_built_from_fixed_parts_by_a_project_function_is_job_wide(tmp_path, args):
    tasks = TASKS.format(args=args)
    assert _check(tmp_path, tasks) == [(_line(tasks, "with exclusive("), "OG103")]


@pytest.mark.parametrize("args", ["self.name, depot_id", "self.request.id", 'f"rebalance:{depot_id}"'],
                         ids=["per-depot-scope", "the-runs-own-id", "per-depot-name"])
def test_a_key_with_a_part_of_the_call_is_left_alone(tmp_path, args):
    assert _check(tmp_path, TASKS.format(args=args)) == []


def test_a_first_parameter_of_an_unbound_task_is_an_argument(tmp_path):
    tasks = TASKS.format(args="self.name").replace("bind=True, ", "")
    assert _check(tmp_path, tasks) == []


def test_a_builder_that_adds_a_value_it_reads_elsewhere_is_not_fixed(tmp_path):
    keys = KEYS.replace('        key = f"fleet:{job}"\n',
                        '        key = f"fleet:{job}"\n        key += f":{client.incr(\'fleet:runs\')}"\n')
    assert _check(tmp_path, TASKS.format(args='"rebalance"'), keys) == []


def test_a_helper_that_does_not_wait_is_left_alone(tmp_path):
    tasks = TASKS.format(args='"rebalance"').replace(
        '        with exclusive("rebalance"):\n            print("moved vans")\n',
        '        held = exclusive("rebalance")\n        if not held.acquire(blocking=False):\n            return\n'
        '        try:\n            print("moved vans")\n        finally:\n            held.release()\n')
    assert _check(tmp_path, tasks) == []


# -- variants: the builder two calls deep, imported as a module, digested into an int ------------------------------
NESTED_KEYS = """\
    import hashlib

    import redis

    client = redis.Redis.from_url("redis://cache:6379/2")
    PREFIX = "fleet"


    def _slug(text: str) -> str:
        return text.strip().lower().replace(" ", "-")


    def key_for(job: str) -> str:
        digest = hashlib.blake2b(_slug(job).encode(), digest_size=8).hexdigest()
        return PREFIX + ":" + digest[:12]


    def exclusive(job: str, ttl: int = 600):
        return client.lock(key_for(job), timeout=ttl)
"""

MODULE_TASKS = """\
    from celery import Celery

    from fleet import keys

    app = Celery("fleet")


    @app.task(bind=True)
    def rebalance_depots(self) -> None:
        with keys.exclusive({args}):
            print("moved vans")
"""


def test_a_builder_calling_another_builder_through_a_module_import(tmp_path):
    tasks = MODULE_TASKS.format(args="self.name")
    assert _check(tmp_path, tasks, NESTED_KEYS) == [(_line(tasks, "with keys.exclusive("), "OG103")]


def test_the_same_builder_handed_a_per_call_value_is_left_alone(tmp_path):
    tasks = MODULE_TASKS.format(args="self.request.hostname")
    assert _check(tmp_path, tasks, NESTED_KEYS) == []
