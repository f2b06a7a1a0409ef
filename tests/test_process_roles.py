"""Jobs registered only where a setting says so (OG201): a process the project dedicates to them, or every
process with the setting on.  The shapes a rule doc cannot show in one file: the program that fixes the
setting is another file, and the deployment decides how many processes it is."""
from __future__ import annotations

import ast

import pytest

from onceguard.project.index import clear_cache
from onceguard.testing import findings_in_written_file, write_source as write

JOBS = """
    import httpx
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from shop.config import settings

    scheduler = AsyncIOScheduler(timezone="UTC")


    async def send_receipts() -> None:
        async with httpx.AsyncClient() as client:
            await client.post("https://mail.internal/receipts", json={})


    if {gate}:
        scheduler.add_job(send_receipts, "interval", minutes=5)
"""

CONFIG = """
    import os


    class Settings:
        role = os.environ.get("SHOP_ROLE", "web")
        receipts = os.environ.get("SHOP_RECEIPTS", "1") == "1"


    settings = Settings()
"""

# One asyncio loop, no server: one process.
JOBS_PROGRAM = """
    import asyncio

    from shop.config import settings

    settings.role = {value}

    from shop import jobs  # noqa: E402


    async def main() -> None:
        jobs.scheduler.start()
        await asyncio.Event().wait()


    if __name__ == "__main__":
        asyncio.run(main())
"""


def job_lines(tmp_path, gate: str, program: str = JOBS_PROGRAM, value: str = '"jobs"', extra=()):
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/config.py", CONFIG)
    if program:
        write(tmp_path, "run_jobs.py", program.replace("{value}", value))
    for path, text in extra:
        write(tmp_path, path, text)
    found = findings_in_written_file(tmp_path, "shop/jobs.py", JOBS.replace("{gate}", gate), "OG201",
                                     cross_file=True)
    return [d.line for d in found]


@pytest.mark.parametrize("gate", [
    'settings.role == "jobs"',
    'settings.role in ("jobs", "all")',
    'settings.receipts and settings.role != "web"',
    'not settings.role == "web" and settings.receipts',
])
def test_a_gate_that_passes_in_the_one_process_jobs_program_is_silent(tmp_path, gate):
    assert job_lines(tmp_path, gate) == []


@pytest.mark.parametrize("gate", [
    'settings.receipts',  # a flag no program fixes: every process with it on
    'settings.role == "web"',  # the program fixes another role: the gate selects the web workers
    'settings.receipts or settings.role == "jobs"',  # the flag alone lets every process pass
])
def test_a_gate_that_the_jobs_program_does_not_decide_is_flagged(tmp_path, gate):
    assert job_lines(tmp_path, gate) == [10]


def test_with_no_program_fixing_the_role_the_gate_says_nothing_about_how_many_processes(tmp_path):
    assert job_lines(tmp_path, 'settings.role == "jobs"', program="") == [10]


def test_a_program_that_starts_a_server_with_several_workers_is_not_one_process(tmp_path):
    program = """
        import uvicorn

        from shop.config import settings

        settings.role = "jobs"

        if __name__ == "__main__":
            uvicorn.run("shop.api:app", workers=4)
    """
    assert job_lines(tmp_path, 'settings.role == "jobs"', program=program) == [10]


def test_a_program_the_deployment_serves_through_gunicorn_is_not_one_process(tmp_path):
    program = """
        from flask import Flask

        from shop.config import settings

        settings.role = "jobs"
        app = Flask(__name__)

        if __name__ == "__main__":
            app.run()
    """
    dockerfile = ("Dockerfile", 'CMD ["gunicorn", "--workers", "8", "run_jobs:app"]\n')
    assert job_lines(tmp_path, 'settings.role == "jobs"', program=program, extra=[dockerfile]) == [10]


def test_a_role_fixed_through_the_environment_by_the_program(tmp_path):
    program = """
        import os
        import time

        os.environ["SHOP_ROLE"] = "jobs"

        from shop import jobs  # noqa: E402

        if __name__ == "__main__":
            jobs.scheduler.start()
            while True:
                time.sleep(60)
    """
    gate = 'os.environ.get("SHOP_ROLE") == "jobs"'
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/config.py", CONFIG)
    write(tmp_path, "run_jobs.py", program)
    source = JOBS.replace("{gate}", gate).replace("import httpx", "import os\n    import httpx")
    assert findings_in_written_file(tmp_path, "shop/jobs.py", source, "OG201", cross_file=True) == []
    # the same variable fixed to another value: the gate selects the processes that fix nothing
    write(tmp_path, "run_jobs.py", program.replace('"jobs"', '"mail"', 1))
    clear_cache()  # a new run: the project's programs are read again
    assert [d.line for d in findings_in_written_file(tmp_path, "shop/jobs.py", source, "OG201",
                                                     cross_file=True)] == [11]


def test_a_gate_in_the_caller_is_not_followed(tmp_path):
    """Only the conditions around the registration and the early exits before it in its own function count:
    a function registered under a role and called from elsewhere is judged where it registers."""
    source = JOBS.replace("if {gate}:\n        scheduler.add_job", "def register():\n        scheduler.add_job")
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/config.py", CONFIG)
    write(tmp_path, "run_jobs.py", JOBS_PROGRAM.replace("{value}", '"jobs"'))
    assert [d.line for d in findings_in_written_file(tmp_path, "shop/jobs.py", source, "OG201",
                                                     cross_file=True)] == [10]


def test_read_alone_only_the_module_itself_can_fix_the_role(tmp_path):
    """flake8 sees one file: the jobs module cannot see the program, so the gate decides nothing there."""
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/config.py", CONFIG)
    write(tmp_path, "run_jobs.py", JOBS_PROGRAM.replace("{value}", '"jobs"'))
    found = findings_in_written_file(tmp_path, "shop/jobs.py", JOBS.replace("{gate}", 'settings.role == "jobs"'),
                                     "OG201", cross_file=False)
    assert [d.line for d in found] == [10]


@pytest.mark.parametrize("test, positive, keys", [
    ('settings.role == "jobs" and settings.receipts', True, {"attr:shop.config.settings.role",
                                                            "attr:shop.config.settings.receipts"}),
    ('settings.role == "jobs" or settings.receipts', True, set()),
    ('settings.role == "jobs" or settings.role == "all"', True, {"attr:shop.config.settings.role"}),
    # ``not (a or b)`` needs both false: both constrain it
    ('settings.role == "web" or settings.receipts', False, {"attr:shop.config.settings.role",
                                                           "attr:shop.config.settings.receipts"}),
    ('os.environ.get("SHOP_ROLE") != "web"', True, {"env:SHOP_ROLE"}),
    ('"SHOP_JOBS" in os.environ', True, {"env:SHOP_JOBS"}),
])
def test_the_settings_a_condition_needs(tmp_path, test, positive, keys):
    from onceguard.analysis.context import FileContext
    from onceguard.analysis.facts import ModuleFacts
    from onceguard.config import Config
    from onceguard.project.process_roles import _necessary_keys

    source = f"import os\nfrom shop.config import settings\nok = {test}\n"
    tree = ast.parse(source)
    facts = ModuleFacts(tree, FileContext(str(tmp_path / "m.py"), Config(root=str(tmp_path)), False),
                        source.splitlines())
    assert _necessary_keys(tree.body[-1].value, positive, facts) == keys

