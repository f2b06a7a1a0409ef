"""Deployment files as facts (onceguard.project.deployment), and OG403 on an Alembic env.py judged by who
runs it: start-up code, a deployment file in every replica (flagged), or only an operator (clean)."""
from __future__ import annotations

import os
import textwrap

import pytest

from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.project import deployment, index, migration_locations


@pytest.fixture(autouse=True)
def fresh_caches():
    index.clear_cache()
    yield
    index.clear_cache()


def write(root, files: dict) -> None:
    for name, text in files.items():
        full = os.path.join(str(root), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))


def check(root, path: str, cross_file: bool = True, code: str = "OG403"):
    full = os.path.join(str(root), path)
    with open(full, "rb") as handle:
        source = handle.read()
    return [d for d in check_source(source, full, from_mapping({}, root=str(root)), cross_file=cross_file)
            if d.code == code]


def related_places(root, finding):
    return [(os.path.relpath(r.path, str(root)), r.line) for r in finding.related]


def steps(root):
    return [(s.kind, s.target, s.launch.per_replica) for s in deployment.steps(from_mapping({}, root=str(root)))]


ENV = """
    from alembic import context
    from sqlalchemy import engine_from_config, pool

    config = context.config


    def run_migrations_online():
        connectable = engine_from_config(config.get_section(config.config_ini_section, {}), poolclass=pool.NullPool)
        with connectable.connect() as connection:
            context.configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()


    run_migrations_online()
"""
ENV_LINE = 13
INI = "[alembic]\nscript_location = %(here)s/alembic\n"


# -- reading deployment files ---------------------------------------------------------------------------
def test_dockerfile_exec_and_shell_forms_and_the_entrypoint_script(tmp_path):
    write(tmp_path, {
        "Dockerfile": """
            FROM python:3.12
            RUN alembic upgrade head
            COPY docker/start.sh /start.sh
            ENTRYPOINT ["/start.sh"]
            CMD python -m app.bootstrap && exec gunicorn app.wsgi:app
        """,
        "docker/start.sh": "#!/bin/sh\nset -e\nflask db upgrade --directory db/migrations\nexec \"$@\"\n",
        "app/__init__.py": "",
        "app/bootstrap.py": "",
    })
    found = steps(tmp_path)
    assert (deployment.FLASK_DB_UPGRADE, "db/migrations", True) in found
    assert (deployment.PYTHON_MODULE, "app.bootstrap", True) in found
    assert (deployment.SERVER, "app.wsgi:app", True) in found
    # RUN is build time: no step for the alembic line
    assert not any(kind == deployment.ALEMBIC_UPGRADE for kind, _, _ in found)


def test_procfile_release_runs_once_and_web_per_replica(tmp_path):
    write(tmp_path, {"Procfile": "release: alembic -c deploy/alembic.ini upgrade head\nweb: python manage.py migrate && gunicorn shop.wsgi\n"})
    found = steps(tmp_path)
    assert (deployment.ALEMBIC_UPGRADE, "deploy/alembic.ini", False) in found
    assert (deployment.DJANGO_MIGRATE, "", True) in found


def test_compose_one_shot_service_and_kubernetes_kinds(tmp_path):
    write(tmp_path, {
        "docker-compose.yml": """
            services:
              migrate:
                command: ["sh", "-c", "alembic upgrade head"]
              web:
                command: uvicorn app.main:app
                depends_on:
                  migrate:
                    condition: service_completed_successfully
              worker:
                entrypoint: ["python", "-m", "app.worker"]
        """,
        "k8s/all.yaml": """
            apiVersion: apps/v1
            kind: StatefulSet
            metadata: {name: api}
            spec:
              template:
                spec:
                  initContainers:
                    - name: migrate
                      command: ["flask", "db", "upgrade"]
                  containers:
                    - name: api
                      image: "{{ .Values.image }}"
                      args: ["gunicorn", "app:app"]
            ---
            apiVersion: batch/v1
            kind: CronJob
            metadata: {name: nightly}
            spec:
              jobTemplate:
                spec:
                  template:
                    spec:
                      containers:
                        - name: m
                          command: ["python", "-m", "app.nightly"]
            ---
            apiVersion: v1
            kind: Pod
            metadata:
              name: hook
              annotations: {"helm.sh/hook": "pre-upgrade"}
            spec:
              containers:
                - name: m
                  command: ["alembic", "upgrade", "head"]
        """,
    })
    found = steps(tmp_path)
    assert (deployment.ALEMBIC_UPGRADE, "alembic.ini", False) in found  # compose one-shot and the hook Pod
    assert (deployment.ALEMBIC_UPGRADE, "alembic.ini", True) not in found
    assert (deployment.PYTHON_MODULE, "app.worker", True) in found
    assert (deployment.FLASK_DB_UPGRADE, "migrations", True) in found
    assert (deployment.SERVER, "app:app", True) in found
    assert (deployment.PYTHON_MODULE, "app.nightly", False) in found


def test_ini_script_location_forms(tmp_path):
    config = from_mapping({}, root=str(tmp_path))
    write(tmp_path, {
        "here.ini": "[alembic]\nscript_location = %(here)s/db/alembic\n",
        "relative.ini": "[alembic]\nscript_location = migrations\n",
        "package.ini": "[alembic]\nscript_location = shop:migrations\n",
        "shop/__init__.py": "",
        "empty.ini": "[loggers]\nkeys = root\n",
    })
    here = migration_locations.script_location_of_ini(str(tmp_path / "here.ini"), config)
    assert os.path.normpath(here.path) == str(tmp_path / "db" / "alembic")
    relative = migration_locations.script_location_of_ini(str(tmp_path / "relative.ini"), config)
    assert os.path.normpath(relative.path) == str(tmp_path / "migrations")
    package = migration_locations.script_location_of_ini(str(tmp_path / "package.ini"), config)
    assert os.path.normpath(package.path) == str(tmp_path / "shop" / "migrations")
    assert migration_locations.script_location_of_ini(str(tmp_path / "empty.ini"), config).path is None


def test_schema_commands():
    assert deployment.schema_command(["prisma", "db", "push", "--accept-data-loss"])[0] == "prisma"
    assert deployment.schema_command(["npx", "prisma", "migrate", "deploy"])[0] == "prisma"
    assert deployment.schema_command(["alembic", "-c", "x.ini", "upgrade", "head"])[0] == deployment.ALEMBIC_UPGRADE
    assert deployment.schema_command(["python", "manage.py", "migrate"])[0] == deployment.DJANGO_MIGRATE
    assert deployment.schema_command(["prisma", "generate"]) is None
    assert deployment.schema_command(["alembic", "history"]) is None


# -- OG403 on env.py ------------------------------------------------------------------------------------
def test_env_reached_from_startup_in_another_module_is_flagged_with_the_path(tmp_path):
    write(tmp_path, {
        "alembic.ini": INI,
        "alembic/env.py": ENV,
        "app/__init__.py": "",
        "app/db.py": """
            from alembic import command
            from alembic.config import Config


            def migrate():
                command.upgrade(Config("alembic.ini"), "head")
        """,
        "app/main.py": """
            from fastapi import FastAPI

            from app.db import migrate

            app = FastAPI()


            @app.on_event("startup")
            def boot():
                migrate()
        """,
    })
    # One root cause, one finding: OG401 at the upgrade that start-up reaches, with the way there and the
    # unlocked env.py it runs as related places; env.py itself gets no second (OG403) finding.
    assert check(tmp_path, "alembic/env.py") == []
    found = check(tmp_path, os.path.join("app", "db.py"), code="OG401")
    assert [d.line for d in found] == [7]
    related = related_places(tmp_path, found[0])
    assert related[0] == (os.path.join("app", "main.py"), 10)  # the start-up hook first
    assert (os.path.join("app", "main.py"), 11) in related  # the call on the way
    assert related[-1] == (os.path.join("alembic", "env.py"), ENV_LINE)  # the unlocked run of env.py last
    assert "pg_advisory_lock" in found[0].suggestion


def test_env_reached_only_from_a_click_command_is_clean(tmp_path):
    write(tmp_path, {
        "alembic.ini": INI,
        "alembic/env.py": ENV,
        "app/__init__.py": "",
        "app/cli.py": """
            import click
            from alembic import command
            from alembic.config import Config


            @click.command()
            def upgrade():
                command.upgrade(Config("alembic.ini"), "head")
        """,
    })
    assert check(tmp_path, "alembic/env.py") == []


def test_a_command_that_starts_the_server_is_startup(tmp_path):
    write(tmp_path, {
        "alembic.ini": INI,
        "alembic/env.py": ENV,
        "app/__init__.py": "",
        "app/cli.py": """
            import click
            import uvicorn
            from alembic import command
            from alembic.config import Config


            @click.command()
            def serve():
                command.upgrade(Config("alembic.ini"), "head")
                uvicorn.run("app.main:app")
        """,
    })
    # The command starts the server, so every replica runs its upgrade: OG401 there, with env.py related.
    found = check(tmp_path, os.path.join("app", "cli.py"), code="OG401")
    assert [d.line for d in found] == [10]
    assert "starts the server" in found[0].message
    assert related_places(tmp_path, found[0]) == [(os.path.join("alembic", "env.py"), ENV_LINE)]
    assert check(tmp_path, "alembic/env.py") == []


def test_env_of_another_directory_is_not_flagged(tmp_path):
    write(tmp_path, {
        "alembic.ini": INI,
        "alembic/env.py": ENV,
        "plugins/env.py": ENV,
        "app/__init__.py": "",
        "app/main.py": """
            from pathlib import Path

            from alembic import command
            from alembic.config import Config

            ROOT = Path(__file__).resolve().parent.parent


            def run_migrations():
                cfg = Config(str(ROOT / "alembic.ini"))
                cfg.set_main_option("script_location", str(ROOT / "plugins"))
                command.upgrade(cfg, "head")


            run_migrations()
        """,
    })
    # The upgrade runs the env.py of the directory its Config names (plugins/), not alembic/env.py.
    found = check(tmp_path, os.path.join("app", "main.py"), code="OG401")
    assert [d.line for d in found] == [13]
    assert related_places(tmp_path, found[0]) == [(os.path.join("plugins", "env.py"), ENV_LINE)]
    assert check(tmp_path, "plugins/env.py") == []
    assert check(tmp_path, "alembic/env.py") == []


@pytest.mark.parametrize("files, flagged", [
    ({"Dockerfile": "FROM python:3.12\nCMD alembic upgrade head && exec gunicorn app:app\n"}, True),
    ({"Dockerfile": "FROM python:3.12\nENTRYPOINT [\"/entrypoint.sh\"]\n",
      "docker/entrypoint.sh": "#!/bin/sh\nalembic upgrade head\nexec \"$@\"\n"}, True),
    ({"scripts/start.sh": "#!/bin/bash\nset -e\nalembic upgrade head\nexec uvicorn app.main:app\n"}, True),
    ({"scripts/migrate.sh": "#!/bin/bash\nset -e\nalembic upgrade head\n"}, False),
    ({"Procfile": "release: alembic upgrade head\nweb: gunicorn app:app\n"}, False),
    ({"Procfile": "web: alembic upgrade head && gunicorn app:app\n"}, True),
    ({"compose.yaml": "services:\n  api:\n    command: sh -c 'alembic upgrade head && uvicorn app.main:app'\n"}, True),
    ({"compose.yaml": "services:\n  migrate:\n    command: alembic upgrade head\n  api:\n    command: uvicorn app.main:app\n"
                      "    depends_on:\n      migrate:\n        condition: service_completed_successfully\n"}, False),
    ({"k8s/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n"
                         "    spec:\n      initContainers:\n        - name: m\n          command: [alembic, upgrade, head]\n"}, True),
    ({"k8s/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: m\n  annotations:\n"
                      "    helm.sh/hook: pre-install,pre-upgrade\nspec:\n  template:\n    spec:\n      containers:\n"
                      "        - name: m\n          command: [alembic, upgrade, head]\n"}, False),
], ids=["dockerfile-cmd", "entrypoint-script", "server-script", "migrate-script-alone", "procfile-release",
        "procfile-web", "compose-service", "compose-one-shot", "k8s-init-container", "helm-hook-job"])
def test_deployment_evidence_each_way(tmp_path, files, flagged):
    write(tmp_path, {"alembic.ini": INI, "alembic/env.py": ENV, **files})
    found = check(tmp_path, "alembic/env.py")
    assert [d.line for d in found] == ([ENV_LINE] if flagged else [])
    if flagged:
        assert found[0].related and not found[0].related[0].path.endswith(".py")


def test_module_run_per_replica_by_deployment_is_startup(tmp_path):
    write(tmp_path, {
        "alembic.ini": INI,
        "alembic/env.py": ENV,
        "Procfile": "web: python -m app.migrate_then_serve\n",
        "app/__init__.py": "",
        "app/migrate_then_serve.py": """
            import os

            from alembic import command
            from alembic.config import Config

            HERE = os.path.dirname(os.path.abspath(__file__))


            def main():
                command.upgrade(Config(os.path.join(HERE, "..", "alembic.ini")), "head")


            if __name__ == "__main__":
                main()
        """,
    })
    found = check(tmp_path, "alembic/env.py")
    assert [d.line for d in found] == [ENV_LINE]
    assert found[0].related[0].path.endswith("Procfile")


def test_no_runner_in_the_project_or_flake8_is_clean(tmp_path):
    write(tmp_path, {"alembic.ini": INI, "alembic/env.py": ENV,
                     "Dockerfile": "FROM python:3.12\nCMD alembic upgrade head && exec gunicorn app:app\n"})
    assert check(tmp_path, "alembic/env.py", cross_file=False) == []  # flake8: one file proves nothing
    os.remove(tmp_path / "Dockerfile")
    index.clear_cache()
    assert check(tmp_path, "alembic/env.py") == []


def test_an_entrypoint_dispatching_on_its_argument_runs_the_branch_the_container_selects(tmp_path):
    write(tmp_path, {
        "Dockerfile": 'FROM python:3.12\nCOPY entrypoint.sh /entrypoint.sh\nENTRYPOINT ["/entrypoint.sh"]\nCMD ["serve"]\n',
        "entrypoint.sh": """\
            #!/bin/sh
            set -e
            if ! alembic -c deploy/alembic.ini upgrade head; then
                echo "migration failed" >&2
                exit 1
            fi
            case "$1" in
              release)
                exec python -m app.seed
                ;;
              serve)
                exec uvicorn app.main:app
                ;;
            esac
        """,
        "app/__init__.py": "", "app/seed.py": "", "app/main.py": "",
        "k8s/job.yaml": """
            apiVersion: batch/v1
            kind: Job
            metadata: {name: release}
            spec:
              template:
                spec:
                  containers:
                    - name: release
                      args: ["release"]
        """,
    })
    found = steps(tmp_path)
    # a command in an ``if``'s test runs as any other line of the script: in every replica
    assert (deployment.ALEMBIC_UPGRADE, "deploy/alembic.ini", True) in found
    assert (deployment.SERVER, "app.main:app", True) in found
    # only the Job passes ``release``: its branch runs once
    assert (deployment.PYTHON_MODULE, "app.seed", False) in found
    assert (deployment.PYTHON_MODULE, "app.seed", True) not in found


def test_a_branch_an_elif_selects_by_something_else_than_the_argument_runs_in_every_replica(tmp_path):
    write(tmp_path, {
        "Dockerfile": 'FROM python:3.12\nCOPY entrypoint.sh /entrypoint.sh\nENTRYPOINT ["/entrypoint.sh"]\nCMD ["serve"]\n',
        "entrypoint.sh": """\
            #!/bin/sh
            set -e
            if [ "$1" = "release" ]; then
                python -m app.seed
            elif [ -n "$MIGRATE_ON_START" ]; then
                alembic -c deploy/alembic.ini upgrade head
            fi
            exec uvicorn app.main:app
        """,
        "app/__init__.py": "", "app/seed.py": "", "app/main.py": "",
    })
    found = steps(tmp_path)
    assert (deployment.PYTHON_MODULE, "app.seed", False) in found
    # not the ``release`` branch: any replica whose environment says so runs it
    assert (deployment.ALEMBIC_UPGRADE, "deploy/alembic.ini", True) in found
