"""A file judged alone (flake8, ``--no-project``) says what that file proves: a class of another module is not
read to decide what an assignment in this one does."""
from __future__ import annotations

import os

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project.index import recording
from test_job_discovery import fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BOARD = """
    import redis


    class HashBoard:
        def __init__(self, name):
            self.name = name
            self.client = redis.Redis(host="cache")

        def __setitem__(self, key, value):
            self.client.hset(self.name, key, value)

        def get(self, key, default=None):
            return self.client.hget(self.name, key) or default
    """

SEATS = """
    from .board import HashBoard

    TAKEN = HashBoard("taken-seats")


    def take(show, seat, holder):
        TAKEN[show] = {**(TAKEN.get(show) or {}), seat: holder}
    """


def _found(root, cross_file):
    path = os.path.join(str(root), "hall", "seats.py")
    with open(path, "rb") as handle:
        source = handle.read()
    config = from_mapping({}, root=str(root))
    with recording() as read:
        found = [(d.line, d.code) for d in check_source(source, path, config, cross_file=cross_file)
                 if d.code == "OG301"]
    return found, {os.path.relpath(p, str(root)) for p in read}


def test_a_hash_backed_class_of_another_module_is_read_with_the_project(tmp_path):
    write(tmp_path, {"hall/__init__.py": "", "hall/board.py": BOARD, "hall/seats.py": SEATS})
    found, read = _found(tmp_path, cross_file=True)
    assert found == [(8, "OG301")]
    assert os.path.join("hall", "board.py") in read


def test_judged_alone_the_file_reads_no_other_module(tmp_path):
    write(tmp_path, {"hall/__init__.py": "", "hall/board.py": BOARD, "hall/seats.py": SEATS})
    found, read = _found(tmp_path, cross_file=False)
    assert found == [] and read == set()
