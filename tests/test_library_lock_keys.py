"""OG104 for lock libraries: a Redis lock (or another library's lock) named from a value that differs between
processes is no mutex.

The name may come through a settings object: a module-level instance of a project class whose field default
reads the environment and falls back on this host's name.  Where the deployment files set that variable, the
default never runs and the name is the deployment's; a per-host value used as the lock's token (who holds it)
is what a token is for.
"""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    import os
    import socket
    from dataclasses import dataclass


    @dataclass(frozen=True)
    class Config:
        redis_url: str = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
        namespace: str = os.environ.get("LOCK_NAMESPACE", f"kiln:{socket.gethostname()}")
        holder: str = socket.gethostname()


    config = Config()
"""

LOCKS = """\
    import redis

    from kiln.settings import config

    client = redis.Redis.from_url(config.redis_url)


    def fire_batch(batch: str) -> bool:
        guard = client.lock(f"{config.namespace}:firing", timeout=600)
        if not guard.acquire(blocking=False, token=config.holder):
            return False
        try:
            client.rpush("kiln:fired", batch)
        finally:
            guard.release()
        return True
"""

COMPOSE = """\
    services:
      worker:
        image: kiln
        command: python -m kiln.worker
        deploy:
          replicas: 3
        environment:
          LOCK_NAMESPACE: kiln
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, settings=SETTINGS, locks=LOCKS, extra=None):
    write(tmp_path, {"kiln/__init__.py": "", "kiln/settings.py": settings, "kiln/locks.py": locks, **(extra or {})})
    return findings(tmp_path, "kiln/locks.py", codes=("OG104",))


def test_a_redis_lock_named_from_a_settings_default_of_the_host_name_is_reported(tmp_path):
    assert _check(tmp_path) == [(_line(LOCKS, "client.lock("), "OG104")]


def test_the_deployment_setting_the_variable_makes_the_name_its_own(tmp_path):
    assert _check(tmp_path, extra={"docker-compose.yml": COMPOSE}) == []


def test_a_constant_default_and_a_per_host_token_are_left_alone(tmp_path):
    settings = SETTINGS.replace('f"kiln:{socket.gethostname()}"', '"kiln"')
    assert _check(tmp_path, settings=settings) == []


def test_a_name_built_here_from_the_process_id_is_reported_at_the_call(tmp_path):
    locks = LOCKS.replace("import redis\n", "import os\n\n    import redis\n").replace(
        'f"{config.namespace}:firing"', 'f"kiln:{os.getpid()}:firing"')
    assert _check(tmp_path, locks=locks) == [(_line(locks, "client.lock("), "OG104")]


# -- a key read off a typed parameter: the class's field default ---------------------------------------------
TICKS = """\
    import random
    from dataclasses import dataclass, field

    import psycopg


    @dataclass
    class Tick:
        name: str
        key: int = field(default_factory=lambda: random.getrandbits(60))


    TICKS = [Tick("rollup"), Tick("purge")]


    def run_tick(conn: psycopg.Connection, tick: Tick) -> None:
        with conn.transaction():
            if conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (tick.key,)).fetchone()[0]:
                conn.execute("DELETE FROM events WHERE kind = %s", (tick.name,))
"""


def test_a_key_from_a_typed_parameters_field_default_is_reported_at_the_default(tmp_path):
    write(tmp_path, {"kiln/__init__.py": "", "kiln/ticks.py": TICKS})
    assert findings(tmp_path, "kiln/ticks.py", codes=("OG104",)) == [(_line(TICKS, "default_factory"), "OG104")]


def test_a_field_every_construction_passes_is_the_callers_value(tmp_path):
    ticks = TICKS.replace('Tick("rollup"), Tick("purge")', 'Tick("rollup", 11), Tick("purge", key=12)')
    write(tmp_path, {"kiln/__init__.py": "", "kiln/ticks.py": ticks})
    assert findings(tmp_path, "kiln/ticks.py", codes=("OG104",)) == []
