"""OG302 on a model class's own query (Peewee ``Task.select().where(Task.done == False)``, Tortoise
``Note.filter(sent=False)``): rows picked by their state, worked on and saved, in a worker every replica runs;
a lock that skips rows another replica holds claims them."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PEEWEE_WORKER = """\
    import time

    import httpx

    from .models import Task, db


    def work_once() -> int:
        done = 0
        with db.atomic():
            for task in Task.select().where(Task.done == False){lock}.limit(20):  # noqa: E712
                httpx.post("https://render.example/jobs", json={{"id": task.id}})
                task.done = True
                task.save()
                done += 1
        return done


    def main() -> None:
        while True:
            if not work_once():
                time.sleep(5)


    if __name__ == "__main__":
        main()
"""

TORTOISE_TASK = """\
    import asyncio

    import httpx
    from fastapi import FastAPI
    from tortoise.transactions import in_transaction

    from .models import Note

    app = FastAPI()


    async def send_notes() -> None:
        while True:
            async with in_transaction() as conn:
                for note in await Note.filter(sent=False){lock}.limit(50).using_db(conn):
                    await httpx.AsyncClient().post("https://push.example/send", json={{"id": note.id}})
                    note.sent = True
                    await note.save(using_db=conn)
            await asyncio.sleep(10)


    @app.on_event("startup")
    async def start() -> None:
        asyncio.create_task(send_notes())
"""


@pytest.mark.parametrize("lock, expected", [
    ("", [(11, "OG302")]),
    ('.for_update("FOR UPDATE SKIP LOCKED")', []),
])
def test_a_peewee_pickup(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'render'\n",
                     "Dockerfile": 'FROM python:3.12\nCMD ["python", "-m", "render.worker"]\n',
                     "render/__init__.py": "", "render/models.py": "Task = db = None\n",
                     "render/worker.py": PEEWEE_WORKER.format(lock=lock)})
    assert findings(tmp_path, "render/worker.py", codes=("OG302",)) == expected


@pytest.mark.parametrize("lock, expected", [
    ("", [(15, "OG302")]),
    (".select_for_update(skip_locked=True)", []),
])
def test_a_tortoise_pickup(tmp_path, lock, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'push'\n", "push/__init__.py": "",
                     "push/models.py": "Note = None\n", "push/app.py": TORTOISE_TASK.format(lock=lock)})
    assert findings(tmp_path, "push/app.py", codes=("OG302",)) == expected
