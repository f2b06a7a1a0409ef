"""Making an instance of a module's private class (``_Snapshot(...)``, a frozen dataclass with no ``__init__`` of its
own) changes nothing outside the process: a ticker that fetches a catalogue and swaps the process's own copy for a
new snapshot object refreshes a per-process cache, which every replica must do for itself."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

TICKER = """
    import httpx
    from apscheduler.schedulers.background import BackgroundScheduler

    from tariffs import table


    def reload_tariffs() -> None:
        response = httpx.get("https://tariffs.example.com/v2/list", timeout=10)
        response.raise_for_status()
        table.install(response.json()["tariffs"])


    def start() -> BackgroundScheduler:
        scheduler = BackgroundScheduler(timezone="UTC")
        scheduler.add_job(reload_tariffs, "interval", minutes=5)
        scheduler.start()
        return scheduler
    """

TABLE = """
    from dataclasses import dataclass, field
    {imports}

    @dataclass(frozen=True)
    class {cls}:
        rows: tuple = ()
        by_code: dict = field(default_factory=dict)


    _installed = {cls}()


    def install(rows) -> None:
        global _installed
        _installed = {cls}(rows=tuple(rows), by_code={{r["code"]: r for r in rows}}){extra}


    def lookup(code: str):
        return _installed.by_code.get(code)
    """

PUSHED = "\n        redis.Redis().set(\"tariffs:version\", len(rows))"


@pytest.mark.parametrize("cls", ["_Snapshot", "__TariffSnapshot"])
def test_a_private_snapshot_swapped_in_is_the_process_own_copy(tmp_path, cls):
    write(tmp_path, {"tariffs/__init__.py": "", "tariffs/ticker.py": TICKER,
                     "tariffs/table.py": TABLE.format(imports="", cls=cls, extra="")})
    assert findings(tmp_path, "tariffs/ticker.py") == []


def test_a_snapshot_built_by_a_helper_module(tmp_path):
    snapshots = "from dataclasses import dataclass\n\n\n@dataclass\nclass _Built:\n    rows: tuple\n"
    table = ("from tariffs import snapshots\n\n_installed = None\n\n\ndef install(rows) -> None:\n"
             "    global _installed\n    _installed = snapshots._Built(tuple(rows))\n")
    write(tmp_path, {"tariffs/__init__.py": "", "tariffs/ticker.py": TICKER, "tariffs/snapshots.py": snapshots,
                     "tariffs/table.py": table})
    assert findings(tmp_path, "tariffs/ticker.py") == []


def test_a_swap_that_also_writes_a_shared_store_is_work(tmp_path):
    write(tmp_path, {"tariffs/__init__.py": "", "tariffs/ticker.py": TICKER,
                     "tariffs/table.py": TABLE.format(imports="import redis", cls="_Snapshot", extra=PUSHED)})
    assert [code for _, code in findings(tmp_path, "tariffs/ticker.py")] == ["OG201"]
