"""What deployment files say about who runs a command: every replica, or once per deploy.

Read by ``project/deployment.py``.  A command in a container's start command, a Procfile web or worker
process, a compose service or a Kubernetes Deployment runs in every replica; a Procfile ``release:``
process, a Kubernetes Job or CronJob, a Helm hook and a compose service that other services wait for
(``condition: service_completed_successfully``) run once per deploy.
"""
from __future__ import annotations

from typing import FrozenSet, Tuple

# -- files ---------------------------------------------------------------------------------------------
#: Container build files (exact names; ``Dockerfile.web`` and ``web.Dockerfile`` count too).
DOCKERFILE_NAMES: FrozenSet[str] = frozenset({"Dockerfile", "Containerfile"})
DOCKERFILE_PREFIXES: Tuple[str, ...] = ("Dockerfile.", "Containerfile.")
DOCKERFILE_SUFFIXES: Tuple[str, ...] = (".Dockerfile", ".dockerfile", ".Containerfile")
#: Dockerfile instructions that run when a container starts (``RUN`` runs at build time).
DOCKERFILE_START_INSTRUCTIONS: FrozenSet[str] = frozenset({"CMD", "ENTRYPOINT"})
PROCFILE_NAMES: FrozenSet[str] = frozenset({"Procfile"})
#: Procfile process types that run once per deploy (Heroku, Dokku, Scalingo): the rest run per dyno.
PROCFILE_ONCE_TYPES: FrozenSet[str] = frozenset({"release", "predeploy", "postdeploy"})
#: The app manifest beside a Procfile (Heroku, Dokku) and its ``formation``: process type -> ``quantity``.
APP_MANIFEST = "app.json"
APP_FORMATION = "formation"
APP_QUANTITY = "quantity"
#: docker compose files by name (any ``.yml``/``.yaml`` whose name starts with one of these).
COMPOSE_PREFIXES: Tuple[str, ...] = ("docker-compose", "compose")
YAML_SUFFIXES: Tuple[str, ...] = (".yml", ".yaml")
SHELL_SUFFIXES: Tuple[str, ...] = (".sh", ".bash")
#: Bytes a YAML file must hold to be read as Kubernetes manifests.
KUBERNETES_MARKERS: Tuple[bytes, ...] = (b"kind:", b"ontainers:")  # containers: or initContainers:

# -- Kubernetes ------------------------------------------------------------------------------------------
#: Workloads whose pods are replicas: every container and init container runs in each pod.
KUBERNETES_REPLICATED_KINDS: FrozenSet[str] = frozenset({
    "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Rollout",
    "DeploymentConfig",
})
#: Workloads that run to completion once per deploy (or per schedule).
KUBERNETES_ONCE_KINDS: FrozenSet[str] = frozenset({"Job", "CronJob"})
#: ``metadata.annotations`` keys whose presence makes a resource a deploy hook (Helm, Argo CD).
HOOK_ANNOTATIONS: FrozenSet[str] = frozenset({"helm.sh/hook", "argocd.argoproj.io/hook"})

# -- compose ---------------------------------------------------------------------------------------------
#: ``depends_on: {migrate: {condition: service_completed_successfully}}``: the service waited for is a
#: one-shot job.
COMPOSE_COMPLETED_CONDITION = "service_completed_successfully"

# -- commands --------------------------------------------------------------------------------------------
#: Words that only prefix the real command: ``exec gunicorn ...``, ``env X=1 python ...``.
COMMAND_PREFIX_WORDS: FrozenSet[str] = frozenset({
    "exec", "env", "nohup", "time", "then", "do", "else", "!", "command", "gosu", "su-exec", "tini", "--",
    "dumb-init", "poetry", "pipenv", "uv", "pdm", "hatch", "rye",
})
#: After one of the tool prefixes above, ``run`` is part of the prefix (``poetry run alembic upgrade``).
TOOL_RUN_WORD = "run"
#: Shells whose ``-c "<script>"`` is a command line of its own.
SHELLS: FrozenSet[str] = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env", "ash", "dash", "zsh"})
#: Python interpreters (``python3.12`` too: any name starting with ``python``).
PYTHON_PREFIX = "python"
#: Commands that start a long-running server or worker: a script that reaches one of them is the
#: container's start command, so what it runs before runs in every replica.
SERVER_COMMANDS: FrozenSet[str] = frozenset({
    "uvicorn", "gunicorn", "hypercorn", "daphne", "granian", "waitress-serve", "uwsgi", "celery", "dramatiq",
    "rq", "huey_consumer", "huey_consumer.py", "arq", "fastapi", "streamlit", "twistd", "supervisord",
})
#: huey's consumer runs the periodic scheduler too, unless told not to (``-n`` / ``--no-periodic``): a consumer
#: so told only runs what the one scheduling consumer enqueues. ``manage.py run_huey`` is django-huey's.
HUEY_CONSUMER_COMMANDS: FrozenSet[str] = frozenset({"huey_consumer", "huey_consumer.py", "run_huey"})
HUEY_NO_PERIODIC_FLAGS: FrozenSet[str] = frozenset({"-n", "--no-periodic"})
#: The process that enqueues Dramatiq's periodic actors (each one started enqueues every tick).
PERIODIQ_COMMANDS: FrozenSet[str] = frozenset({"periodiq"})
#: ``deploy: replicas: 1`` (compose) or ``spec.replicas: 1`` (Kubernetes): a service the project pins to one
#: process, as a single scheduler is.
SINGLE_REPLICA = "1"
#: Folders and file-name words of deployment files made for a developer's machine (one instance).
DEVELOPMENT_FOLDERS: FrozenSet[str] = frozenset({"dev", ".devcontainer", "devcontainer", "development", "local"})
DEVELOPMENT_WORDS: FrozenSet[str] = frozenset({"dev", "devcontainer", "development", "developer", "local"})
#: A compose service with a fixed container name runs one container (``--scale`` refuses to make a second).
COMPOSE_CONTAINER_NAME = "container_name"
#: A service or workload that applies migrations says so in its name or command (``migrate``, ``migrations``,
#: ``manage.py migrate``), or runs one of these programs with ``upgrade`` (``alembic upgrade head``).
MIGRATION_WORD = "migrat"
MIGRATION_PROGRAMS = frozenset({"alembic", "flask", "db"})
#: How a launch of a container file is labelled (``Dockerfile CMD``, ``docker-compose.yml service web``,
#: ``Kubernetes Deployment web``): what runs there runs in the project's image.
CONTAINER_FILE_WORDS: Tuple[str, ...] = ("dockerfile", "docker-compose", "compose", "kubernetes", "containerfile")
#: uWSGI options that run a command as the server starts, and daemons it keeps running beside its workers.
UWSGI_SECTION = "uwsgi"
UWSGI_HOOK_PREFIX = "hook-"
UWSGI_EXEC_ACTIONS: FrozenSet[str] = frozenset({"exec"})
UWSGI_EXEC_PREFIX = "exec-"
UWSGI_DAEMON_OPTIONS: FrozenSet[str] = frozenset({"attach-daemon", "attach-control-daemon", "attach-daemon2"})
UWSGI_PIDFILE_DAEMON_OPTIONS: FrozenSet[str] = frozenset({"smart-attach-daemon", "smart-attach-daemon2"})
#: supervisord configurations: a ``.conf``/``.ini`` file whose name says supervisor, its ``[program:name]``
#: sections each a process every container running supervisord starts (not one with ``autostart=false``).
SUPERVISOR_WORD = "supervisor"
SUPERVISOR_SUFFIXES: Tuple[str, ...] = (".conf", ".ini")
SUPERVISOR_PROGRAM_PREFIX = "program:"
SUPERVISOR_FALSE_VALUES: FrozenSet[str] = frozenset({"false", "no", "off", "0"})
#: Folders a project keeps its Dockerfile in, below the project's own directory (``docker/Dockerfile``).
DOCKERFILE_FOLDERS: FrozenSet[str] = frozenset({"docker", "build", "deploy", "deployment", ".docker", "container",
                                                "containers", "images"})
#: Words in the image name of a compose service that runs a server of its own (the database, its pooler, a
#: broker, a proxy) rather than the project's code: its environment configures that server.
INFRASTRUCTURE_IMAGE_WORDS: Tuple[str, ...] = (
    "postgres", "pgbouncer", "pgcat", "odyssey", "supavisor", "pgpool", "redis", "valkey", "memcached", "mysql",
    "mariadb", "mongo", "rabbitmq", "nginx", "traefik", "haproxy", "minio", "elasticsearch", "opensearch",
)
#: ``python -m <module>`` for these modules starts a server.
SERVER_MODULES: FrozenSet[str] = frozenset({
    "uvicorn", "gunicorn", "hypercorn", "daphne", "granian", "celery", "flask", "waitress", "twisted",
})
#: ``flask run``, ``python manage.py runserver``/``runworker``, ``fastapi run``.
SERVER_SUBCOMMANDS: FrozenSet[str] = frozenset({"run", "runserver", "runworker", "worker", "serve"})

#: ``alembic [-c file.ini] upgrade head``: the Alembic subcommands that run env.py.
ALEMBIC_RUNNING_SUBCOMMANDS: FrozenSet[str] = frozenset({"upgrade", "downgrade"})
ALEMBIC_CONFIG_OPTIONS: FrozenSet[str] = frozenset({"-c", "--config"})
ALEMBIC_DEFAULT_INI = "alembic.ini"
#: ``flask db upgrade [-d migrations]`` (Flask-Migrate) and the directory it uses by default.
FLASK_MIGRATE_SUBCOMMANDS: FrozenSet[str] = frozenset({"upgrade", "downgrade"})
FLASK_MIGRATE_DIRECTORY_OPTIONS: FrozenSet[str] = frozenset({"-d", "--directory"})
FLASK_MIGRATE_DEFAULT_DIRECTORY = "migrations"
#: ``python manage.py migrate`` / ``django-admin migrate``.
DJANGO_MIGRATE_SUBCOMMANDS: FrozenSet[str] = frozenset({"migrate"})
DJANGO_ADMIN_COMMANDS: FrozenSet[str] = frozenset({"django-admin", "django-admin.py"})
DJANGO_MANAGE_SCRIPTS: FrozenSet[str] = frozenset({"manage.py"})
#: The variable that names the Django settings module a process runs with.
DJANGO_SETTINGS_VARIABLE = "DJANGO_SETTINGS_MODULE"
#: The Dockerfile instruction that sets variables for the image's processes.
DOCKERFILE_ENV = "ENV"

#: Other tools' commands that write schema, as the words they start with (the program's base name first):
#: run from a deployment file or a subprocess.
SCHEMA_TOOL_COMMANDS: Tuple[Tuple[str, ...], ...] = (
    ("prisma", "db", "push"), ("prisma", "migrate", "deploy"), ("prisma", "migrate", "reset"),
    ("aerich", "upgrade"), ("yoyo", "apply"), ("piccolo", "migrations", "forwards"), ("dbmate", "up"),
    ("dbmate", "migrate"), ("goose", "up"), ("flyway", "migrate"), ("liquibase", "update"),
)
#: Programs that run the next word as the command (``npx prisma db push``).
RUNNER_PROGRAMS: FrozenSet[str] = frozenset({"npx", "pnpx", "bunx", "yarn", "pnpm"})
#: Calls that run a command line (``subprocess.run([...])``, a project's own ``run_prisma([...])``): the
#: qualified names, and words a wrapper's name holds.
SUBPROCESS_CALLS: FrozenSet[str] = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
    "os.system", "os.execvp", "os.execv", "os.spawnvp", "asyncio.create_subprocess_exec",
    "asyncio.create_subprocess_shell",
})
SUBPROCESS_NAME_WORDS: Tuple[str, ...] = ("run", "exec", "call", "popen", "system", "spawn", "subprocess", "shell")

#: Files that mark the top directory of a project (or of one service of a monorepo): deployment files and
#: runners are looked for from there.
PROJECT_MARKERS: Tuple[str, ...] = (
    "pyproject.toml", "setup.py", "setup.cfg", "alembic.ini", "Dockerfile", "Containerfile", "Procfile",
    "docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml", "requirements.txt", "manage.py",
    ".git",
)

#: Celery: a worker started with one of these options runs the beat scheduler inside it (``celery -A app
#: worker -B``), so every replica of that worker fires every beat entry.
CELERY_PROGRAM = "celery"
CELERY_WORKER_SUBCOMMAND = "worker"
CELERY_BEAT_SUBCOMMAND = "beat"
CELERY_EMBEDDED_BEAT_OPTIONS: FrozenSet[str] = frozenset({"-B", "--beat"})

# -- how many processes a program is ------------------------------------------------------------------------
#: Calls that start more processes of the program (``project/process_roles``: a program that makes them is
#: not one process).
PROCESS_SPAWNERS: FrozenSet[str] = frozenset({
    "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.pool.Pool",
    "concurrent.futures.ProcessPoolExecutor", "os.fork", "os.forkpty",
})
#: Keywords of a server runner (``uvicorn.run(app, workers=4)``) that set how many worker processes it
#: starts.
SERVER_WORKER_KEYWORDS: FrozenSet[str] = frozenset({"workers", "processes"})
#: Calls that replace the program with a command (``os.execvp("gunicorn", [...])``).
PROCESS_REPLACERS: FrozenSet[str] = frozenset({"os.execvp", "os.execv", "os.execlp", "os.execl", "os.execvpe"})

#: Programs that run a crontab's lines on their schedule: started in every replica's container, each container
#: runs every line (``cron`` in an entrypoint before the server, ``supercronic /app/crontab``).
CRON_DAEMONS = frozenset({"cron", "crond", "supercronic", "go-crond", "yacron"})
#: Names of the files that hold crontab lines: ``crontab``, ``app.cron``, ``jobs.crontab``.
CRONTAB_NAMES = frozenset({"crontab", "cronjobs", "cron.txt"})
CRONTAB_SUFFIXES = (".cron", ".crontab")
#: A line's schedule: five fields, or one of cron's shorthands.
CRON_SHORTHANDS = frozenset({"@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                             "@hourly"})
