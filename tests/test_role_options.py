"""OG201: a program whose command-line option picks its role (``--mode timer``, read as ``opts.mode`` from
``parser.parse_args(argv)`` with ``argv`` left at None), started by Procfile process types that an app manifest
scales (``"formation": {"timer": {"quantity": 1}}``).  The timer role runs in one dyno; a role that starts the
timer too (handed to a thread) in a scaled process type, or a timer type scaled past one, runs it in each."""
from __future__ import annotations

import json
import textwrap

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project import deployment, index

TIMER = """\
    import time

    import requests
    import schedule


    def post_report() -> None:
        requests.post("https://reports.example/daily", json={"kind": "usage"}, timeout=20)


    def start_timer() -> None:
        schedule.every(10).minutes.do(post_report)
        while True:
            schedule.run_pending()
            time.sleep(1)
"""

CLI = """\
    import argparse
    import threading

    from relay.pump import run_pump
    from relay.timer import start_timer


    def main(argv=None) -> None:
        parser = argparse.ArgumentParser(prog="relay")
        parser.add_argument("-m", "--mode", choices=("serve", "timer", "both"), default="serve")
        opts = parser.parse_args(argv)
        if opts.mode == "timer":
            start_timer()
            return
        if opts.mode == "both":
            threading.Thread(target=start_timer, daemon=True).start()
        run_pump()


    if __name__ == "__main__":
        main()
"""

PUMP = """\
    import time


    def run_pump() -> None:
        while True:
            time.sleep(5)
"""

PROCFILE = "web: gunicorn relay.web:app\npump: python -m relay.cli{pump}\ntimer: python -m relay.cli --mode=timer\n"


def _check(tmp_path, pump="", timers=1, manifest=True):
    index.clear_cache()
    deployment.clear_cache()
    files = {"relay/__init__.py": "", "relay/timer.py": TIMER, "relay/cli.py": CLI, "relay/pump.py": PUMP,
             "relay/web.py": "from flask import Flask\n\napp = Flask(__name__)\n",
             "Procfile": PROCFILE.format(pump=pump)}
    if manifest:
        files["app.json"] = json.dumps({"name": "relay", "formation": {
            "web": {"quantity": 2}, "pump": {"quantity": 4}, "timer": {"quantity": timers}}})
    write(tmp_path, files)
    return findings(tmp_path, "relay/timer.py")


def _job_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(TIMER).splitlines(), 1) if "def post_report" in line)


def test_a_role_option_only_a_one_dyno_process_type_gives(tmp_path):
    assert _check(tmp_path / "given", pump=" --mode serve") == []
    assert _check(tmp_path / "default") == []  # (the option's default: the pump role)
    assert _check(tmp_path / "short", pump=" -m serve") == []


def test_a_scaled_process_type_whose_role_also_starts_the_timer(tmp_path):
    assert _check(tmp_path / "serve", pump=" --mode serve") == []
    assert _check(tmp_path / "both", pump=" --mode both") == [(_job_line(), "OG201")]


def test_a_timer_type_scaled_past_one_or_not_scaled_by_a_manifest(tmp_path):
    assert _check(tmp_path / "one") == []
    assert _check(tmp_path / "two", timers=2) == [(_job_line(), "OG201")]
    assert _check(tmp_path / "bare", manifest=False) == [(_job_line(), "OG201")]


def test_an_abbreviated_option_is_not_read(tmp_path):
    assert _check(tmp_path / "full", pump=" --mode serve") == []
    assert _check(tmp_path / "abbreviated", pump=" --mo both") == [(_job_line(), "OG201")]
