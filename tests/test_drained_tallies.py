"""Per-key counts in process memory that request code adds to and a request hands out and empties (a drain:
``report = dict(_tally)`` … ``_tally.clear()`` … ``return report``): the request lands on one worker process of
one replica, which answers with only what it counted, and the other copies' counts are never handed out (OG608).
Counts only read (a scrape of each process, never reset), or drained by a job each process runs to hand its own
share on, are left alone."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TALLY = """
    from collections import Counter

    _tally: Counter = Counter()


    def count(project: str, kind: str) -> None:
        _tally[(project, kind)] += 1


    def {reader}() -> dict:
        report = {{f"{{project}}/{{kind}}": n for (project, kind), n in _tally.items()}}
        {empties}
        return report
    """

TALLY_ON_AN_OBJECT = """
    from collections import defaultdict


    class Tally:
        def __init__(self) -> None:
            self._counts = defaultdict(int)

        def count(self, project: str, kind: str) -> None:
            self._counts[(project, kind)] += 1

        def take(self) -> dict:
            taken = dict(self._counts)
            self._counts.clear()
            return taken


    tally = Tally()
    """

ROUTES = """
    from flask import Flask, jsonify

    from {imports}

    app = Flask(__name__)


    @app.post("/render/<project>")
    def render(project: str):
        {counts}(project, "render")
        return jsonify(ok=True)


    @app.post("/internal/usage")
    def usage():
        return jsonify({reads}())
    """


@pytest.mark.parametrize("imports, counts, reads", [
    ("metering.tally import count, drain", "count", "drain"),
    ("metering import tally as metering_tally", "metering_tally.count", "metering_tally.drain"),
])
def test_counts_a_request_drains_are_one_replicas_share(tmp_path, imports, counts, reads):
    write(tmp_path, {"metering/__init__.py": "",
                     "metering/tally.py": TALLY.format(reader="drain", empties="_tally.clear()"),
                     "metering/app.py": ROUTES.format(imports=imports, counts=counts, reads=reads)})
    assert findings(tmp_path, "metering/tally.py", codes=("OG608",)) == [(4, "OG608")]


def test_counts_kept_on_a_module_level_object_drained_by_a_request(tmp_path):
    write(tmp_path, {"metering/__init__.py": "", "metering/tally.py": TALLY_ON_AN_OBJECT,
                     "metering/app.py": ROUTES.format(imports="metering.tally import tally", counts="tally.count",
                                                      reads="tally.take")})
    assert findings(tmp_path, "metering/tally.py", codes=("OG608",)) == [(7, "OG608")]


def test_counts_only_read_for_a_scrape_of_each_process_are_left_alone(tmp_path):
    write(tmp_path, {"metering/__init__.py": "",
                     "metering/tally.py": TALLY.format(reader="snapshot", empties="pass"),
                     "metering/app.py": ROUTES.format(imports="metering.tally import count, snapshot",
                                                      counts="count", reads="snapshot")})
    assert findings(tmp_path, "metering/tally.py", codes=("OG608",)) == []


FLUSHER = """
    import threading
    import time

    import httpx

    from metering.tally import drain


    def _flush_forever() -> None:
        while True:
            time.sleep(60)
            httpx.post("https://usage.example/add", json=drain())


    threading.Thread(target=_flush_forever, daemon=True).start()
    """

ROUTE_ONLY_COUNTS = """
    from flask import Flask, jsonify

    from metering.tally import count
    import metering.flusher  # noqa: F401

    app = Flask(__name__)


    @app.post("/render/<project>")
    def render(project: str):
        count(project, "render")
        return jsonify(ok=True)
    """


def test_each_process_flushing_its_own_counts_is_left_alone(tmp_path):
    write(tmp_path, {"metering/__init__.py": "",
                     "metering/tally.py": TALLY.format(reader="drain", empties="_tally.clear()"),
                     "metering/flusher.py": FLUSHER, "metering/app.py": ROUTE_ONLY_COUNTS})
    assert findings(tmp_path, "metering/tally.py", codes=("OG608",)) == []
