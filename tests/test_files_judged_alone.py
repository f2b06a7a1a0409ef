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


AWARDS = """
    from .models import Member


    class Members:
        def store(self, member):
            member.save()


    def award(member_id, points, members: Members):
        member = Member.objects.get(pk=member_id)
        member.points = member.points + points
        members.store(member)
    """

HOLDER = """
    import time


    class SeenIds:
        def __init__(self):
            self._seen = {}

        def __contains__(self, key):
            return key in self._seen

        def add(self, key):
            self._seen[key] = time.monotonic()


    SEEN = SeenIds()


    def once(key, send):
        if key in SEEN:
            return
        SEEN.add(key)
        send(key)
    """


def test_judged_alone_a_file_lists_none_of_the_project_files(tmp_path, monkeypatch):
    """The words a whole-project run learns from every file's text (defs that save a row they are handed,
    classes that wrap a container) are, for a file judged alone, its own: the project is not listed or read."""
    from onceguard.project import index

    write(tmp_path, {"club/__init__.py": "", "club/models.py": "", "club/awards.py": AWARDS,
                     "club/seen.py": HOLDER, "club/other.py": "def store(row):\n    row.save()\n"})
    listed = []
    monkeypatch.setattr(index, "project_files", lambda root: listed.append(root) or [])
    config = from_mapping({}, root=str(tmp_path))
    for name in ("awards.py", "seen.py"):
        path = os.path.join(str(tmp_path), "club", name)
        with open(path, "rb") as handle:
            check_source(handle.read(), path, config, cross_file=False)
    assert listed == []
