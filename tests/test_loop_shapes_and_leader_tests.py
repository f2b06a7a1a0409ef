"""Loops a program repeats, and the tests that let only a lease's holder through.

- ``if lease.try_acquire():`` / ``if lease.held or lease.try_acquire():`` on a project lease that leads with its
  claim: the branch runs on the holder only (the lease's own state stands for what an earlier pass won).
- A ``for`` over what a claim hands back guards its own body, not what follows the loop.
- ``if relay(conn) < batch: time.sleep(idle)``: the call whose result decides the pause is the pass's work.
- A click/Flask command looping forever, run by a deployment's command in every replica.
- Start-up seeding after ``if not rows: return`` is not seeding of missing rows; a commit inside ``try ... except
  IntegrityError`` lets the loser skip.
"""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import redis


    class Lease:
        def __init__(self, client: redis.Redis, key: str) -> None:
            self.client = client
            self.key = key
            self.mine = False

        @property
        def held(self) -> bool:
            return self.mine

        def try_acquire(self) -> bool:
            if self.client.set(self.key, "me", nx=True, ex=30):
                self.mine = True
            return self.mine
"""

MAIN = """\
    import time

    import httpx
    import redis

    from .lease import Lease


    def publish() -> None:
        httpx.post("https://social.example/post")


    def main() -> None:
        lease = Lease(redis.Redis(host="cache"), "poster")
        while True:
            if {test}:
                publish()
            time.sleep(30)


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("test, expected", [
    ("lease.try_acquire()", []),
    ("lease.held or lease.try_acquire()", []),
    ("lease.held or time.time() > 0", [(9, "OG201")]),  # a part that is no claim lets every replica through
])
def test_a_lease_holders_branch(tmp_path, test, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'poster'\n",
                     "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "poster.main"]\n',
                     "poster/__init__.py": "", "poster/lease.py": LEASE, "poster/main.py": MAIN.format(test=test)})
    assert findings(tmp_path, "poster/main.py") == expected


TICKER = """\
    import asyncio

    import httpx
    from fastapi import FastAPI

    from .repo import claim_due

    app = FastAPI()


    async def tick() -> None:
        while True:
            for item in await claim_due(10):
                await httpx.AsyncClient().post("https://hooks.example/item", json=item)
            {after}
            await asyncio.sleep(10)


    @app.on_event("startup")
    async def start() -> None:
        asyncio.create_task(tick())
"""

REPO = """\
    async def claim_due(limit: int):
        return await POOL.fetch("SELECT id FROM items WHERE due LIMIT $1 FOR UPDATE SKIP LOCKED", limit)


    POOL = None
"""


@pytest.mark.parametrize("after, expected", [
    ("pass", []),
    ('await httpx.AsyncClient().post("https://hooks.example/heartbeat")', [(11, "OG201")]),
])
def test_a_loop_over_claimed_rows_guards_only_its_body(tmp_path, after, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'items'\n", "items/__init__.py": "",
                     "items/app.py": TICKER.format(after=after), "items/repo.py": REPO})
    assert findings(tmp_path, "items/app.py") == expected


RELAY = """\
    import time

    import psycopg

    from .outbox import relay_once


    def main() -> None:
        with psycopg.connect("postgresql://db/app", autocommit=True) as conn:
            while True:
                if relay_once(conn) < 100:
                    time.sleep(5)


    if __name__ == "__main__":
        main()
"""

OUTBOX = """\
    import httpx


    def relay_once(conn) -> int:
        rows = conn.execute("SELECT id, body FROM outbox ORDER BY id LIMIT 100").fetchall()
        for row in rows:
            httpx.post("https://bus.example/publish", json=row[1])
        return len(rows)
"""


def test_a_call_whose_result_decides_the_pause_is_the_pass(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'relay'\n",
                     "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "relay.main"]\n',
                     "relay/__init__.py": "", "relay/main.py": RELAY, "relay/outbox.py": OUTBOX})
    assert findings(tmp_path, "relay/main.py") == [(11, "OG201")]


COMMANDS = """\
    import time

    import click
    import httpx
    from flask import Flask


    def send_leads() -> None:
        httpx.post("https://crm.example/leads")


    def register(app: Flask) -> None:
        @app.cli.command("push-leads")
        @click.option("--every", default=60)
        def push_leads(every: int) -> None:
            while True:
                send_leads()
                time.sleep(every)
"""

COMPOSE = """\
    services:
      web:
        image: shop
        command: gunicorn "shop:create_app()"
      leads:
        image: shop
        command: flask --app shop {command}
        deploy:
          replicas: 2
"""


@pytest.mark.parametrize("command, expected", [
    ("push-leads --every 30", [(8, "OG201")]),
    ("routes", []),  # the deployment never runs the loop
])
def test_a_command_line_loop_a_deployment_runs(tmp_path, command, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'shop'\n", "shop/__init__.py": "",
                     "shop/commands.py": COMMANDS, "docker-compose.yml": COMPOSE.format(command=command)})
    assert findings(tmp_path, "shop/commands.py") == expected


SEEDING = """\
    from django.apps import AppConfig
    from django.db import IntegrityError, transaction


    class TagsConfig(AppConfig):
        name = "tags"

        def ready(self):
            from .models import Tag

            for label in ("news", "sport"):
                if {test}:
                    continue
                {insert}
"""


@pytest.mark.parametrize("test, insert, expected", [
    ("Tag.objects.filter(label=label).exists()", "Tag.objects.create(label=label)", [(12, "OG603")]),
    ("not Tag.objects.filter(label=label).exists()", "Tag.objects.filter(label=label).update(seen=True)", []),
    ("Tag.objects.filter(label=label).exists()",
     "try:\n                    with transaction.atomic():\n                        Tag.objects.create(label=label)\n"
     "                except IntegrityError:\n                    pass", []),
])
def test_seeding_after_a_skip_by_its_polarity(tmp_path, test, insert, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'tags'\n", "tags/__init__.py": "",
                     "tags/apps.py": SEEDING.format(test=test, insert=insert),
                     "tags/models.py": "from django.db import models\n\n\nclass Tag(models.Model):\n"
                                       "    label = models.CharField(max_length=40)\n"
                                       "    seen = models.BooleanField(default=False)\n"})
    assert findings(tmp_path, "tags/apps.py", codes=("OG603",)) == expected
