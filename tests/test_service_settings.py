"""OG201: a ticker started only when an environment variable says so, where the deployment files set that
variable on for one service pinned to one process (``replicas: 1``, a command that starts one process) and off
elsewhere: the deployment dedicates a process to it.  The variable may be read in the gate itself, by a settings
loader the gate's object comes from, or as a field of a pydantic ``BaseSettings`` class.  A service with more
replicas, or a server with several workers, is no dedicated process."""
from __future__ import annotations

import textwrap

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

from onceguard.project.service_settings import _one_process

TICKERS = """\
    import asyncio

    import httpx


    async def push_utilisation() -> None:
        async with httpx.AsyncClient() as client:
            while True:
                await client.post("https://erp.example/hooks/utilisation", json={"ok": True})
                await asyncio.sleep(3600)


    def start() -> list:
        return [asyncio.create_task(push_utilisation())]
"""

LOADER = """\
    import os
    from dataclasses import dataclass


    @dataclass(frozen=True)
    class Settings:
        database_url: str
        run_tickers: bool


    def load() -> Settings:
        return Settings(
            database_url=os.environ["DEPOT_DATABASE_URL"],
            run_tickers=os.environ.get("DEPOT_RUN_TICKERS", "0") == "1",
        )
"""

PYDANTIC = """\
    from pydantic_settings import BaseSettings, SettingsConfigDict


    class Settings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="DEPOT_")

        database_url: str = "postgresql://db/depot"
        run_tickers: bool = False


    def load() -> Settings:
        return Settings()
"""

APP = """\
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette

    import depot.settings as cfg
    from depot import tickers


    def create_app() -> Starlette:
        settings = cfg.load()

        @asynccontextmanager
        async def lifespan(app: Starlette):
            tasks = tickers.start() if settings.run_tickers else []
            yield
            for task in tasks:
                task.cancel()

        return Starlette(lifespan=lifespan)
"""

DOCKERFILE = 'FROM python:3.12-slim\nCMD ["uvicorn", "--factory", "depot.app:create_app", "--host", "0.0.0.0"]\n'

COMPOSE = """\
    services:
      api:
        build: .
        environment:
          DEPOT_RUN_TICKERS: "0"
        deploy:
          replicas: 3
      ticker:
        build: .
        environment:
          DEPOT_RUN_TICKERS: "1"
        deploy:
          replicas: {replicas}
{command}"""

KUBERNETES = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: depot-ticker
    spec:
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: ticker
              image: depot:latest
              env:
                - name: DEPOT_RUN_TICKERS
                  value: "1"
"""


def _check(tmp_path, settings=LOADER, replicas=1, command="", deployment="compose"):
    files = {"depot/__init__.py": "", "depot/tickers.py": TICKERS, "depot/settings.py": settings,
             "depot/app.py": APP, "Dockerfile": DOCKERFILE}
    if deployment == "compose":
        files["docker-compose.yml"] = COMPOSE.format(replicas=replicas, command=command)
    else:
        files["deploy/ticker.yaml"] = KUBERNETES.format(replicas=replicas)
        files["deploy/Dockerfile"] = DOCKERFILE
    write(tmp_path, files)
    return findings(tmp_path, "depot/tickers.py")


def _ticker_line() -> int:
    return next(i for i, line in enumerate(textwrap.dedent(TICKERS).splitlines(), 1) if "async def push" in line)


@pytest.mark.parametrize("settings", [LOADER, PYDANTIC], ids=["loader", "pydantic-settings"])
def test_a_ticker_only_a_one_replica_service_turns_on_runs_once(tmp_path, settings):
    assert _check(tmp_path, settings=settings) == []


def test_the_same_gate_pinned_in_a_kubernetes_deployment_of_one_replica(tmp_path):
    assert _check(tmp_path, deployment="kubernetes") == []


@pytest.mark.parametrize("settings", [LOADER, PYDANTIC], ids=["loader", "pydantic-settings"])
def test_a_service_with_more_replicas_runs_it_in_each(tmp_path, settings):
    assert _check(tmp_path, settings=settings, replicas=2) == [(_ticker_line(), "OG201")]


def test_a_service_of_one_replica_serving_with_several_workers_runs_it_in_each(tmp_path):
    command = '        command: ["gunicorn", "-k", "uvicorn.workers.UvicornWorker", "-w", "4", "depot.app:create_app()"]\n'
    assert _check(tmp_path, command=command) == [(_ticker_line(), "OG201")]


@pytest.mark.parametrize("command, one", [
    (("python", "-m", "depot.worker"), True),
    (("uvicorn", "depot.app:app"), True),
    (("uvicorn", "depot.app:app", "--workers", "1"), True),
    (("uvicorn", "depot.app:app", "--workers", "3"), False),
    (("gunicorn", "--workers=2", "depot.wsgi"), False),
    (("celery", "-A", "depot", "worker"), False),
    (None, False),
])
def test_which_commands_start_one_process(command, one):
    assert _one_process(command, {}, configured=False) is one


def test_a_server_told_its_worker_count_by_the_environment_is_not_known_to_be_one():
    assert _one_process(("uvicorn", "depot.app:app"), {"WEB_CONCURRENCY": ("4", 3)}, configured=False) is False
    assert _one_process(("gunicorn", "depot.wsgi"), {}, configured=True) is False
