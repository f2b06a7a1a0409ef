"""OG608: a registry whose entries are stored under a key the writer mints, on a long-lived object of one module,
written and read by request code of another module.

``job = Job(id=uuid4().hex, ...)`` then ``self._jobs[job.id] = job`` in a method a route calls, and a status route
that reads the entry back by the id the client was handed: the status request may land on a replica that never
saw the write.  The key is minted (no other process can compute it), so the callers of both methods are followed
across the project; the instance may be imported under another name.  Left alone: an entry only the writer's own
work reads back, and a key every replica computes alike (a name from the request: a per-process cache of it may
be what it is for).
"""
from __future__ import annotations

import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BOARD = """\
    import threading
    import uuid
    from dataclasses import dataclass


    @dataclass
    class Print:
        id: str
        copies: int
        state: str = "queued"


    class PrintBoard:
        def __init__(self) -> None:
            self._prints: dict[str, Print] = {}
            self._mutex = threading.Lock()

        def open(self, copies: int) -> Print:
            job = Print(id=uuid.uuid4().hex, copies=copies)
            with self._mutex:
                self._prints[job.id] = job
            return job

        def find(self, print_id: str) -> Print | None:
            with self._mutex:
                return self._prints.get(print_id)


    board = PrintBoard()
"""

ROUTES = """\
    from fastapi import FastAPI, HTTPException

    from shop.board import board as prints

    api = FastAPI()


    @api.post("/prints")
    def start(copies: int) -> dict:
        return {"id": prints.open(copies).id}


    @api.get("/prints/{print_id}")
    def status(print_id: str) -> dict:
        found = prints.find(print_id)
        if found is None:
            raise HTTPException(status_code=404)
        return {"state": found.state}
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def _check(tmp_path, board=BOARD, routes=ROUTES):
    write(tmp_path, {"shop/__init__.py": "", "shop/board.py": board, "shop/routes.py": routes})
    return findings(tmp_path, "shop/board.py", codes=("OG608",))


def test_an_entry_under_a_minted_key_read_back_by_another_request_is_reported(tmp_path):
    assert _check(tmp_path) == [(_line(BOARD, "self._prints: dict"), "OG608")]


def test_the_key_minted_in_the_write_itself(tmp_path):
    board = BOARD.replace(
        "job = Print(id=uuid.uuid4().hex, copies=copies)",
        "key = uuid.uuid4().hex\n            job = Print(id=key, copies=copies)",
    ).replace("self._prints[job.id] = job", "self._prints[key] = job")
    assert _check(tmp_path, board=board) == [(_line(board, "self._prints: dict"), "OG608")]


def test_a_key_every_replica_computes_alike_is_left_alone(tmp_path):
    board = BOARD.replace("id=uuid.uuid4().hex, ", 'id=f"p{copies}", ')
    assert _check(tmp_path, board=board) == []


def test_an_entry_no_request_reads_back_is_left_alone(tmp_path):
    routes = ROUTES.replace("found = prints.find(print_id)", "found = None")
    assert _check(tmp_path, routes=routes) == []
