"""Deployment files as facts: which commands run in every replica, and which run once per deploy.

Read from the project's own files (the CLI only; flake8 sees one Python file):

- Dockerfile ``CMD`` / ``ENTRYPOINT`` (shell and exec forms): every container of the image runs them;
- Procfile: ``release:`` runs once per deploy, ``web:`` / ``worker:`` / any other process per dyno;
- docker compose ``command:`` / ``entrypoint:`` of each service: every container of the service, except a
  one-shot service that others wait for (``condition: service_completed_successfully``);
- Kubernetes manifests: a Deployment/StatefulSet/DaemonSet container's ``command`` + ``args`` and every
  ``initContainers`` entry run in each pod; a Job, a CronJob, or anything annotated as a Helm / Argo CD hook
  runs once;
- shell scripts those run (``/docker-entrypoint.sh``), and any shell script that ends by starting a server
  (``exec gunicorn ...``): the commands before the server run in every replica.

Each command becomes a ``Step``: Alembic ``upgrade`` (and the ``.ini`` it reads), Flask-Migrate ``flask db
upgrade`` (and its directory), Django ``migrate``, a Python module or script run as a program, a server.
A Python module run as a program in every replica is start-up code (``Reach`` and ``StartupMap`` ask
``run_by``).  The files are read into launches in ``deployment_files``; which migrations directory a run
applies, in ``migration_locations``.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..config import Config, run_directory_above
from ..knowledge import deployment as known
from ..knowledge import schema as schema_known
from . import index as project
from .deployment_files import Launch, Scanner, is_deployment_file, logical_lines, read_text, resolve_file

# -- what a step is ------------------------------------------------------------------------------------
ALEMBIC_UPGRADE = "alembic-upgrade"
FLASK_DB_UPGRADE = "flask-db-upgrade"
DJANGO_MIGRATE = "django-migrate"
PYTHON_MODULE = "python-module"
PYTHON_SCRIPT = "python-script"
SERVER = "server"

@dataclass(frozen=True)
class Step:
    """What a launch does that matters here."""

    kind: str
    target: str  # the .ini, the migrations directory, the module, the script path; "" when not given
    launch: Launch
    #: files the target may be (resolved against the deployment file's directory and the ones above it)
    files: Tuple[str, ...] = ()

    def describe(self) -> str:
        how = "in every replica" if self.launch.per_replica else "once per deploy"
        return f"{self.launch.where} runs `{' '.join(self.launch.words)}` {how}"

    def arguments(self) -> Tuple[str, ...]:
        """The words the launch hands a Python program after naming it (``clock`` of ``python -m tally
        clock``, of ``python worker.py clock``); empty for any other step."""
        words = self.launch.words
        if self.kind == PYTHON_MODULE:
            named = next((i + 1 for i in range(len(words) - 1) if words[i] == "-m" and words[i + 1] == self.target),
                         None)
        elif self.kind == PYTHON_SCRIPT:
            named = next((i for i, word in enumerate(words) if word == self.target), None)
        else:
            named = None
        return tuple(words[named + 1:]) if named is not None else ()


def deployment_bases(config: Config, search_root: str = "") -> List[str]:
    """Where deployment files are looked for: the source tree of the checked code, then the project root, then
    the directory the run started in when the project lies a few levels below it (``app/pyproject.toml`` with
    the Dockerfile and compose file at the repository's root, checked from there)."""
    bases = []
    for base in (search_root, config.root, run_directory_above(config.root)):
        if base and os.path.isdir(base) and os.path.abspath(base) not in bases:
            bases.append(os.path.abspath(base))
    return bases


_lock = threading.Lock()
#: bases -> (launches, files read)
_scans: Dict[Tuple[str, ...], Tuple[List[Launch], Tuple[str, ...]]] = {}


def launches(config: Config, search_root: str = "") -> List[Launch]:
    """Every command the project's deployment files run, once per run and set of bases."""
    bases = tuple(deployment_bases(config, search_root))
    if not bases:
        return []

    def scan() -> Tuple[List[Launch], Tuple[str, ...]]:
        files: List[str] = []
        for base in bases:
            for path in project.files_named(base, is_deployment_file, config, key="deployment"):
                if path not in files:
                    files.append(path)
        return Scanner(files, _starts_server, lambda path: for_development(path, bases)).scan(), tuple(files)

    return project.scan_once(_scans, bases, scan)


def for_development(path: str, bases: Sequence[str]) -> bool:
    """A deployment file for a developer's machine, by its name or folder within the project
    (``docker-compose.dev.yml``, ``Dockerfile.local``, ``dev/docker/startup.sh``, ``.devcontainer/``)."""
    relative = next((os.path.relpath(path, base) for base in bases if path.startswith(base + os.sep)),
                    os.path.basename(path))
    parts = relative.lower().split(os.sep)
    return (any(part in known.DEVELOPMENT_FOLDERS for part in parts[:-1])
            or bool(set(re.split(r"[._-]", parts[-1])) & known.DEVELOPMENT_WORDS))


def clear_cache() -> None:
    _cron_lines.clear()
    _directories.clear()
    with _lock:
        _scans.clear()
        _steps.clear()


project.on_clear(clear_cache)


# =====================================================================================================
# What a launch does
# =====================================================================================================
def _starts_server(words: Sequence[str]) -> bool:
    step = _step_kind(words)
    return step is not None and step[0] == SERVER


def _step_kind(words: Sequence[str]) -> Optional[Tuple[str, str]]:
    """(kind, target) of a command line, or None."""
    if not words:
        return None
    program = os.path.basename(words[0])
    rest = list(words[1:])
    if program.startswith(known.PYTHON_PREFIX):
        return _python_step(rest)
    if program == "alembic":
        return _alembic_step(rest)
    if program == "flask":
        return _flask_step(rest)
    if program in known.DJANGO_ADMIN_COMMANDS:
        positional = [w for w in rest if not w.startswith("-")]
        if positional and positional[0] in known.DJANGO_MIGRATE_SUBCOMMANDS and not _reports_only(rest):
            return DJANGO_MIGRATE, ""
        return None
    if program in known.SERVER_COMMANDS:
        positional = [w for w in rest if not w.startswith("-")]
        return SERVER, positional[0] if positional else ""
    if program.endswith(".py"):
        return _python_step([words[0]] + rest)
    return None


def _python_step(rest: List[str]) -> Optional[Tuple[str, str]]:
    index = 0
    while index < len(rest):
        word = rest[index]
        if word == "-m" and index + 1 < len(rest):
            module = rest[index + 1]
            after = rest[index + 2:]
            top = module.split(".", 1)[0]
            if module == "alembic":
                return _alembic_step(after)
            if module == "flask":
                return _flask_step(after)
            if module == "django":
                positional = [w for w in after if not w.startswith("-")]
                return (DJANGO_MIGRATE, "") if positional[:1] == ["migrate"] and not _reports_only(after) else None
            if top in known.SERVER_MODULES:
                return SERVER, module
            return PYTHON_MODULE, module
        if word == "-c":
            return None
        if word in ("-W", "-X") and index + 1 < len(rest):
            index += 2
            continue
        if word.startswith("-"):
            index += 1
            continue
        script = word
        positional = [w for w in rest[index + 1:] if not w.startswith("-")]
        if os.path.basename(script) in known.DJANGO_MANAGE_SCRIPTS and positional:
            if positional[0] in known.DJANGO_MIGRATE_SUBCOMMANDS and not _reports_only(rest):
                return DJANGO_MIGRATE, ""
            if positional[0] in known.SERVER_SUBCOMMANDS:
                return SERVER, script
        return PYTHON_SCRIPT, script
    return None


def _reports_only(words: List[str]) -> bool:
    """``migrate --check`` / ``--plan``: the command reads the migration state and applies nothing."""
    return any(word in schema_known.DJANGO_MIGRATE_READ_ONLY_OPTIONS for word in words)


def _alembic_step(rest: List[str]) -> Optional[Tuple[str, str]]:
    ini = known.ALEMBIC_DEFAULT_INI
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in known.ALEMBIC_CONFIG_OPTIONS and index + 1 < len(rest):
            ini = rest[index + 1]
            index += 2
            continue
        if word.startswith("--config="):
            ini = word.split("=", 1)[1]
        elif word in ("-n", "--name", "-x") and index + 1 < len(rest):
            index += 2
            continue
        elif not word.startswith("-"):
            return (ALEMBIC_UPGRADE, ini) if word in known.ALEMBIC_RUNNING_SUBCOMMANDS else None
        index += 1
    return None


def _flask_step(rest: List[str]) -> Optional[Tuple[str, str]]:
    positional = []
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in ("-A", "--app", "-e", "--env-file") and index + 1 < len(rest):
            index += 2
            continue
        if not word.startswith("-"):
            positional.append(word)
        index += 1
    if positional[:1] == ["run"]:
        return SERVER, ""
    if len(positional) >= 2 and positional[0] == "db" and positional[1] in known.FLASK_MIGRATE_SUBCOMMANDS:
        directory = known.FLASK_MIGRATE_DEFAULT_DIRECTORY
        for index, word in enumerate(rest):
            if word in known.FLASK_MIGRATE_DIRECTORY_OPTIONS and index + 1 < len(rest):
                directory = rest[index + 1]
            elif word.startswith("--directory="):
                directory = word.split("=", 1)[1]
        return FLASK_DB_UPGRADE, directory
    return None




_steps: Dict[Tuple[str, ...], List[Step]] = {}


def steps(config: Config, search_root: str = "") -> List[Step]:
    """What the project's deployment files run, with the files each target may be."""
    everything = launches(config, search_root)  # records the files read, cached or not
    bases = tuple(deployment_bases(config, search_root))
    with _lock:
        cached = _steps.get(bases)
    if cached is not None:
        return cached
    found = _steps_of(everything, config, search_root)
    with _lock:
        _steps[bases] = found
    return found


def _steps_of(everything: List[Launch], config: Config, search_root: str) -> List[Step]:
    found = []
    python_files: Optional[List[str]] = None
    for launch in everything:
        kind_target = _step_kind(launch.words)
        if kind_target is None:
            continue
        kind, target = kind_target
        files: Tuple[str, ...] = ()
        if kind == PYTHON_MODULE:
            files = tuple(_module_files(target, launch.directory))
        elif kind == PYTHON_SCRIPT:
            if python_files is None:
                python_files = []
                for base in deployment_bases(config, search_root):
                    python_files.extend(project.project_files(base))
            files = tuple(resolve_file(target, launch.directory, python_files))
        elif kind == ALEMBIC_UPGRADE:
            files = tuple(resolve_file(target, launch.directory, ()))
        found.append(Step(kind, target, launch, files))
    return found


def _module_files(module: str, directory: str) -> List[str]:
    current = directory
    while True:
        path = project.module_path(module, current)
        if path is not None:
            # ``python -m pkg`` runs the package's ``__main__.py`` (after importing the package itself).
            main = os.path.join(os.path.dirname(path), "__main__.py")
            if os.path.basename(path) == "__init__.py" and os.path.isfile(main):
                return [os.path.abspath(main), os.path.abspath(path)]
            return [os.path.abspath(path)]
        above = os.path.dirname(current)
        if above == current:
            return []
        current = above


def run_by(path: str, config: Config, search_root: str = "") -> List[Step]:
    """The steps that run the Python file ``path`` as a program (``python -m pkg.mod``, ``python x.py``)."""
    wanted = os.path.abspath(path)
    return [step for step in steps(config, search_root)
            if step.kind in (PYTHON_MODULE, PYTHON_SCRIPT) and wanted in (os.path.abspath(f) for f in step.files)]


# =====================================================================================================
# Command lines that write schema (from a deployment file, or run by a subprocess call)
# =====================================================================================================
def schema_command(words: Sequence[str]) -> Optional[Tuple[str, str]]:
    """(tool, the words that say it) when a command line applies migrations or pushes a schema: Alembic
    ``upgrade``, ``flask db upgrade``, Django ``migrate``, ``prisma db push``, ..."""
    words = [w for w in words if w]
    while words and os.path.basename(words[0]) in known.RUNNER_PROGRAMS:
        words = words[1:]
        if words and words[0] in ("exec", "dlx", "run"):
            words = words[1:]
    if not words:
        return None
    kind_target = _step_kind(words)
    if kind_target is not None and kind_target[0] in (ALEMBIC_UPGRADE, FLASK_DB_UPGRADE, DJANGO_MIGRATE):
        return kind_target[0], " ".join(words[:4])
    program = os.path.basename(words[0])
    rest = [w for w in words[1:] if not w.startswith("-")]
    for pattern in known.SCHEMA_TOOL_COMMANDS:
        if program == pattern[0] and tuple(rest[:len(pattern) - 1]) == pattern[1:]:
            return pattern[0], " ".join(pattern)
    return None


def project_directory(path: str, config: Config, fallback: str = "") -> str:
    """The top directory of the project (or service) that holds ``path``: the nearest directory above it
    with a project marker (pyproject.toml, alembic.ini, Dockerfile, Procfile, ...), never above the
    configuration's root; else ``fallback`` or the configuration's root."""
    root = os.path.abspath(config.root) if config.root else ""
    current = os.path.dirname(os.path.abspath(path))
    # (asked for many files of one directory: each answer stats every marker in every directory above)
    key = (current, root)
    found = _directories.get(key)
    if found is None:
        found = _directories[key] = _marked_directory(current, root)
    return found or fallback or root


#: (directory, root) -> the nearest directory at or above it with a project marker ("" for none)
_directories: Dict[Tuple[str, str], str] = {}


def _marked_directory(current: str, root: str) -> str:
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in known.PROJECT_MARKERS):
            return current
        if root and os.path.normpath(current) == os.path.normpath(root):
            break
        above = os.path.dirname(current)
        if above == current:
            break
        current = above
    return ""


# =====================================================================================================
# Schedulers the deployment runs in every replica
# =====================================================================================================
def _runs_celery(words: Sequence[str]) -> bool:
    """``celery ...``, ``python -m celery ...``."""
    if not words:
        return False
    if os.path.basename(words[0]) == known.CELERY_PROGRAM:
        return True
    return (os.path.basename(words[0]).startswith(known.PYTHON_PREFIX) and len(words) > 2
            and words[1] == "-m" and words[2] == known.CELERY_PROGRAM)


def _beat_option(word: str) -> bool:
    return word in known.CELERY_EMBEDDED_BEAT_OPTIONS or word.startswith("--beat=")


def _script_tokens(path: str) -> Set[str]:
    """Every word of a shell script, quotes taken off: the options an argument array may gather."""
    tokens: Set[str] = set()
    for _, text in logical_lines(read_text(path)):
        for word in re.split(r"[\s()\[\]=]+", text):
            word = word.strip("\"'")
            if word:
                tokens.add(word)
    return tokens


def embeds_beat(launch: Launch) -> bool:
    """Whether this command runs a Celery beat in every replica: a worker with the beat scheduler inside it
    (``-B``/``--beat`` on the worker's command line, or a script that names both ``worker`` and ``--beat`` for
    the celery command it runs with its arguments in a variable), or ``celery beat`` itself in a service the
    file asks several replicas of."""
    words = launch.words
    if not _runs_celery(words):
        return False
    if known.CELERY_BEAT_SUBCOMMAND in words and known.CELERY_WORKER_SUBCOMMAND not in words:
        # ``celery -A app beat`` in a service the file runs as several replicas: a beat in each
        return launch.replicas is not None and launch.replicas > 1
    if known.CELERY_WORKER_SUBCOMMAND in words:
        return any(_beat_option(w) for w in words)
    if launch.path.lower().endswith(known.SHELL_SUFFIXES) and any(w.startswith("$") for w in words):
        tokens = _script_tokens(launch.path)
        return known.CELERY_WORKER_SUBCOMMAND in tokens and any(_beat_option(t) for t in tokens)
    return False


def embedded_beat(config: Config, search_root: str = "") -> Optional[Launch]:
    """The first command run in every replica that starts a Celery worker with beat embedded, or None.
    With ``search_root`` (one service of a monorepo) only commands in files under it count: another
    service's worker runs another app's beat."""
    top = os.path.abspath(search_root) if search_root else ""
    for launch in launches(config, search_root):
        if top and not os.path.abspath(launch.path).startswith(top + os.sep):
            continue
        if launch.per_replica and embeds_beat(launch):
            return launch
    return None


def embedded_beat_for(facts) -> Optional[Launch]:
    """``embedded_beat`` for the project that holds this module (the CLI only: flake8 sees no deployment
    files)."""

    def build(_facts) -> Optional[Launch]:
        context = facts.context
        if not context.cross_file or not context.path or context.is_test:
            return None
        top = project_directory(context.path, facts.config, project.search_root(facts))
        return embedded_beat(facts.config, top)

    return facts.cached("deployment:embedded-beat", build)


def huey_schedulers(facts) -> Optional[List[Launch]]:
    """The huey consumers the deployment runs in every replica that also run the periodic scheduler (no ``-n``
    / ``--no-periodic``); None when the deployment runs no huey consumer at all (nothing known)."""
    consumers = _running(facts, known.HUEY_CONSUMER_COMMANDS)
    if not consumers:
        return None
    return [launch for launch in consumers
            if launch.per_replica and not any(word in known.HUEY_NO_PERIODIC_FLAGS for word in launch.words)]


def periodiq_schedulers(facts) -> Optional[List[Launch]]:
    """The ``periodiq`` processes the deployment runs in every replica of a service that may have several; None
    when it runs none at all (nothing enqueues the periodic actors, or the deployment is not in view)."""
    running = _running(facts, known.PERIODIQ_COMMANDS)
    if not running:
        return None
    return [launch for launch in running if launch.per_replica and launch.replicas != 1]


def _running(facts, commands) -> List[Launch]:
    """The deployment's commands that start one of ``commands`` (named in their first words, any path)."""
    return [launch for launch in launches_for(facts)
            if any(os.path.basename(word) in commands for word in launch.words[:3])]


# =====================================================================================================
# Operator code the deployment does not run
# =====================================================================================================
_WORD_PARTS = re.compile(r"[/:=.,\s\"']+")


def launches_for(facts) -> List[Launch]:
    """Every command the deployment files of the project that holds this module run (per replica or once;
    the CLI only: flake8 sees no deployment files)."""

    def build(_facts) -> List[Launch]:
        context = facts.context
        if not context.cross_file or not context.path or context.is_test:
            return []
        top = project_directory(context.path, facts.config, project.search_root(facts))
        return launches(facts.config, top)

    return facts.cached("deployment:launches", build)


def replica_start_shown(facts) -> bool:
    """Whether the deployment files of this module's own project (or service of a monorepo) say how a
    replica starts (a command run in every replica): only then does a command they never run tell
    anything."""
    context = facts.context
    if not context.cross_file or not context.path:
        return False
    top = os.path.abspath(project_directory(context.path, facts.config, project.search_root(facts)))
    return any(launch.per_replica and os.path.abspath(launch.path).startswith(top + os.sep)
               for launch in launches_for(facts))


def launch_naming(facts, names: Iterable[str]) -> Optional[Launch]:
    """The first deployment command one of whose words names one of ``names`` (a script's file stem, a
    management or CLI command; ``snake_case`` and ``dash-case`` alike), or None: the deployment may run
    that code.  Words are split at path, module and option separators, so ``scripts/seed.py``,
    ``python -m app.seed`` and ``manage.py seed`` all name ``seed``."""
    return next(launches_naming(facts, names), None)


def launches_naming(facts, names: Iterable[str]) -> Iterator[Launch]:
    """Every deployment command naming one of ``names`` (as ``launch_naming`` reads a command's words)."""
    wanted = set()
    for name in names:
        if name:
            wanted.update({name, name.replace("_", "-"), name.replace("-", "_")})
    if not wanted:
        return
    for launch in launches_for(facts):
        for word in launch.words:
            if set(_WORD_PARTS.split(word)) & wanted:
                yield launch
                break


# =====================================================================================================
# Crontab lines a cron daemon runs in every replica
# =====================================================================================================
_cron_lines: Dict[str, List[Launch]] = {}


def cron_launches_under(top: str, config: Config) -> List[Launch]:
    """The commands of the crontab files of the project in ``top``, when a command run in every replica starts a
    cron daemon (``cron`` in the entrypoint before gunicorn): each replica's cron runs every line on its schedule
    (once per run)."""
    key = os.path.abspath(top)
    if key in _cron_lines:
        return _cron_lines[key]
    found: List[Launch] = []
    running = [launch for launch in launches(config, top) if launch.per_replica and _starts_cron(launch.words)]
    if running:
        for path in project.files_named(top, _is_crontab, config, key="crontab"):
            for line, words in _crontab_commands(path):
                found.append(Launch(words, path, line, True, f"crontab, run by `{running[0].words[0]}` in every "
                                                             f"replica ({os.path.basename(running[0].path)})"))
    _cron_lines[key] = found
    return found


def cron_line_of_command(path: str, top: str, config: Config) -> Optional[Launch]:
    """The crontab line that runs the Django management command in ``path`` (``python manage.py <name>``), when a
    command run in every replica of the project in ``top`` starts a cron daemon; None otherwise."""
    if not _is_command_file(path):
        return None
    name = os.path.basename(path)[:-3]
    for launch in cron_launches_under(top, config):
        bases = [os.path.basename(w) for w in launch.words]
        if any(word in ("manage.py", "django-admin") and bases[index + 1] == name
               for index, word in enumerate(bases[:-1])):
            return launch
    return None


def cron_runs_command_file(config: Config, path: str) -> bool:
    """``path`` is a Django management command a crontab line runs in every replica (a prefilter's question)."""
    # (the path's shape first: finding the project's directory stats its markers in every directory above)
    if not _is_command_file(path):
        return False
    return cron_line_of_command(path, project_directory(path, config, config.root or ""), config) is not None


def _is_command_file(path: str) -> bool:
    parts = os.path.normpath(path).split(os.sep)
    return len(parts) >= 3 and parts[-3:-1] == ["management", "commands"]


def _starts_cron(words: Sequence[str]) -> bool:
    names = [os.path.basename(w) for w in words[:3]]
    return bool(names) and (names[0] in known.CRON_DAEMONS
                            or (names[0] in ("service", "busybox") and len(names) > 1
                                and names[1] in known.CRON_DAEMONS))


def _is_crontab(name: str) -> bool:
    lowered = name.lower()
    return lowered in known.CRONTAB_NAMES or lowered.endswith(known.CRONTAB_SUFFIXES)


def _crontab_commands(path: str) -> List[Tuple[int, Tuple[str, ...]]]:
    """(line, words) of each command a crontab line runs (each of ``a; b && c``), its schedule (and the user
    field of an ``/etc/cron.d`` file) left out."""
    found: List[Tuple[int, Tuple[str, ...]]] = []
    for number, raw in enumerate(read_text(path).splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", text):
            continue  # (a comment, or an environment line such as ``SHELL=/bin/sh``)
        fields = text.split()
        rest = fields[1:] if fields[0] in known.CRON_SHORTHANDS else fields[5:] if len(fields) > 5 else []
        if rest and re.fullmatch(r"[a-z_][a-z0-9_-]*", rest[0]) and len(rest) > 1 and not _is_program(rest[0]):
            rest = rest[1:]  # (the user an ``/etc/cron.d`` line runs as)
        for segment in re.split(r";|&&|\|\|", " ".join(rest)):
            words = tuple(w for w in segment.split() if w)
            if words and not words[0].startswith((".", ">")) and words[0] not in ("cd", "export", "source"):
                found.append((number, words))
    return found


def _is_program(word: str) -> bool:
    return word in ("python", "python3", "flask", "celery", "cd", "sh", "bash") or word.endswith(".py")
