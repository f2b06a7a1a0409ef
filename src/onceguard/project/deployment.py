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
``run_by``).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import threading
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..config import Config
from ..knowledge import deployment as known
from ..knowledge import schema as schema_known
from . import index as project

# -- what a step is ------------------------------------------------------------------------------------
ALEMBIC_UPGRADE = "alembic-upgrade"
FLASK_DB_UPGRADE = "flask-db-upgrade"
DJANGO_MIGRATE = "django-migrate"
PYTHON_MODULE = "python-module"
PYTHON_SCRIPT = "python-script"
SERVER = "server"

_MAX_FILE_BYTES = 1_000_000
_MAX_SCRIPT_DEPTH = 4


@dataclass(frozen=True)
class Launch:
    """One command line a deployment file runs."""

    words: Tuple[str, ...]
    path: str  # the file that says it (absolute)
    line: int
    per_replica: bool
    where: str  # "Dockerfile CMD", "Procfile release", "Kubernetes Job db-migrate", "entrypoint.sh"

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


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


# =====================================================================================================
# Finding the files
# =====================================================================================================
def _is_dockerfile(name: str) -> bool:
    return (name in known.DOCKERFILE_NAMES or name.startswith(known.DOCKERFILE_PREFIXES)
            or name.endswith(known.DOCKERFILE_SUFFIXES))


def _is_deployment_file(name: str) -> bool:
    lowered = name.lower()
    return (_is_dockerfile(name) or name in known.PROCFILE_NAMES or lowered.endswith(known.YAML_SUFFIXES)
            or lowered.endswith(known.SHELL_SUFFIXES))


def _read(path: str) -> str:
    try:
        if os.path.getsize(path) > _MAX_FILE_BYTES:
            return ""
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    project.record_dependency(path)
    return data.decode("utf-8", "replace")


def deployment_bases(config: Config, search_root: str = "") -> List[str]:
    """Where deployment files are looked for: the source tree of the checked code, then the project root."""
    bases = []
    for base in (search_root, config.root):
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
            for path in project.files_named(base, _is_deployment_file, config, key="deployment"):
                if path not in files:
                    files.append(path)
        return _Scanner(files).scan(), tuple(files)

    return project.scan_once(_scans, bases, scan)


def clear_cache() -> None:
    with _lock:
        _scans.clear()
        _steps.clear()


project.on_clear(clear_cache)


# =====================================================================================================
# Reading each kind of file
# =====================================================================================================
class _Scanner:
    def __init__(self, files: Sequence[str]) -> None:
        self.files = list(files)
        self.scripts = [p for p in files if p.lower().endswith(known.SHELL_SUFFIXES)]
        self.found: List[Launch] = []
        self._script_modes: Dict[str, bool] = {}  # script -> per replica, as the files that run it say

    def scan(self) -> List[Launch]:
        direct: List[Launch] = []
        for path in self.files:
            name = os.path.basename(path)
            if _is_dockerfile(name):
                direct.extend(_dockerfile(path))
            elif name in known.PROCFILE_NAMES:
                direct.extend(_procfile(path))
            elif name.lower().endswith(known.YAML_SUFFIXES):
                direct.extend(_yaml_file(path))
        for launch in direct:
            self._add(launch, 0)
        # A script nothing above runs, that starts a server: the container's start command.
        for script in self.scripts:
            if script in self._script_modes:
                continue
            commands = _script_commands(script)
            if any(_starts_server(words) for _, words in commands):
                self._script_modes[script] = True
                for line, words in commands:
                    self._add(Launch(words, script, line, True, os.path.basename(script)), 1)
        return self.found

    def _add(self, launch: Launch, depth: int) -> None:
        self.found.append(launch)
        if depth >= _MAX_SCRIPT_DEPTH:
            return
        for script in self._scripts_run(launch):
            if self._script_modes.get(script) is not None and (self._script_modes[script] or not launch.per_replica):
                continue  # already read with this mode (or per replica, which wins)
            self._script_modes[script] = launch.per_replica
            where = f"{os.path.basename(script)} (run by {launch.where})"
            for line, words in _script_commands(script):
                self._add(Launch(words, script, line, launch.per_replica, where), depth + 1)

    def _scripts_run(self, launch: Launch) -> List[str]:
        words = list(launch.words)
        if words and os.path.basename(words[0]) in known.SHELLS and len(words) > 1:
            words = [w for w in words[1:] if not w.startswith("-")]
        if not words or not words[0].lower().endswith(known.SHELL_SUFFIXES):
            return []
        return _resolve_file(words[0], launch.directory, self.scripts)


def _logical_lines(text: str) -> Iterable[Tuple[int, str]]:
    """(first line number, text) with backslash continuations joined."""
    pending: List[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        yield start, " ".join(pending)
        pending = []
    if pending:
        yield start, " ".join(pending)


def _dockerfile(path: str) -> List[Launch]:
    found = []
    name = os.path.basename(path)
    per_replica = "migrat" not in name.lower()  # ``Dockerfile.migrate``: an image for the one-off job
    for line, text in _logical_lines(_read(path)):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        instruction, _, rest = stripped.partition(" ")
        instruction = instruction.upper()
        if instruction not in known.DOCKERFILE_START_INSTRUCTIONS:
            continue
        where = f"{name} {instruction}"
        for words in _command_words(rest.strip()):
            found.append(Launch(words, path, line, per_replica, where))
        if instruction == "CMD" and rest.strip().startswith("["):
            cmd = found[-1] if found and found[-1].where == where else None
            entry = next((launch for launch in reversed(found) if launch.where == f"{name} ENTRYPOINT"), None)
            if cmd is not None and entry is not None:
                # exec-form ENTRYPOINT and CMD: the container runs the one with the other as its arguments
                found.append(Launch(entry.words + cmd.words, path, line, per_replica, f"{name} ENTRYPOINT + CMD"))
    return found


def _procfile(path: str) -> List[Launch]:
    found = []
    for line, text in _logical_lines(_read(path)):
        process, colon, command = text.partition(":")
        process = process.strip()
        if not colon or not process or process.startswith("#") or " " in process:
            continue
        per_replica = process not in known.PROCFILE_ONCE_TYPES
        for words in _shell_words(command):
            found.append(Launch(words, path, line, per_replica, f"Procfile {process}"))
    return found


# -- shell -------------------------------------------------------------------------------------------------
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case",
                             "esac", "{", "}", "function"})


def _command_words(text: str) -> List[Tuple[str, ...]]:
    """A Dockerfile/compose/Kubernetes command: an exec-form JSON array, or shell form."""
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return _expand_shell_c(tuple(value))
    return _shell_words(text)


def _expand_shell_c(words: Tuple[str, ...]) -> List[Tuple[str, ...]]:
    """``["sh", "-c", "alembic upgrade head && exec gunicorn app:app"]``: the commands of the script."""
    if words and os.path.basename(words[0]) in known.SHELLS:
        for index, word in enumerate(words[1:], start=1):
            if word.startswith("-") and "c" in word[1:] and index + 1 < len(words):
                return _shell_words(words[index + 1])
    return [words] if words else []


def _shell_words(text: str) -> List[Tuple[str, ...]]:
    """The simple commands of one shell line, their prefixes (``exec``, ``env X=1``, ``poetry run``) taken
    off."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        tokens = text.split()
    commands: List[Tuple[str, ...]] = []
    current: List[str] = []
    for token in tokens + [";"]:
        if token in _OPERATORS:
            words = _strip_prefixes(current)
            if words:
                commands.extend(_expand_shell_c(tuple(words)))
            current = []
        else:
            current.append(token)
    return commands


def _strip_prefixes(words: List[str]) -> List[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if word in _SHELL_KEYWORDS or _ASSIGNMENT.match(word) or word.startswith("-") and index > 0 and words[index - 1] in ("env", "exec"):
            index += 1
            continue
        if word in known.COMMAND_PREFIX_WORDS:
            index += 1
            if index < len(words) and words[index] == known.TOOL_RUN_WORD:
                index += 1
            continue
        break
    return words[index:]


def _script_commands(path: str) -> List[Tuple[int, Tuple[str, ...]]]:
    found = []
    for line, text in _logical_lines(_read(path)):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        for words in _shell_words(stripped):
            found.append((line, words))
    return found


# -- YAML: compose and Kubernetes ---------------------------------------------------------------------------
_TEMPLATE_LINE = re.compile(r"^\s*\{\{-?.*-?\}\}\s*$")
_TEMPLATE = re.compile(r"\{\{-?.*?-?\}\}")


def _yaml_file(path: str) -> List[Launch]:
    import yaml  # a dependency; imported here so the plugin's import stays cheap

    name = os.path.basename(path).lower()
    text = _read(path)
    if not text:
        return []
    compose = name.startswith(known.COMPOSE_PREFIXES)
    if not compose and not all(marker.decode() in text for marker in known.KUBERNETES_MARKERS):
        return []
    # Helm templates: drop whole-line directives, stand in a word for inline ones (line numbers kept).
    lines = ["" if _TEMPLATE_LINE.match(line) else _TEMPLATE.sub("TEMPLATE", line) for line in text.splitlines()]
    try:
        documents = list(yaml.compose_all("\n".join(lines), Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return []
    except RecursionError:
        return []
    found: List[Launch] = []
    for document in documents:
        if not isinstance(document, yaml.MappingNode):
            continue
        if compose or _get(document, "services") is not None and _get(document, "kind") is None:
            found.extend(_compose(document, path))
        else:
            found.extend(_kubernetes(document, path))
    return found


def _get(node, key: str):
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value
    return None


def _scalar(node) -> Optional[str]:
    import yaml

    return node.value if isinstance(node, yaml.ScalarNode) else None


def _sequence(node) -> list:
    import yaml

    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _mapping_items(node) -> list:
    import yaml

    return list(node.value) if isinstance(node, yaml.MappingNode) else []


def _line(node) -> int:
    return node.start_mark.line + 1


def _words_of(node) -> Optional[List[Tuple[str, ...]]]:
    """A command given as a YAML string (shell form) or list (exec form)."""
    scalar = _scalar(node)
    if scalar is not None:
        return _shell_words(scalar)
    items = [_scalar(item) for item in _sequence(node)]
    if items and all(item is not None for item in items):
        return _expand_shell_c(tuple(items))  # type: ignore[arg-type]
    return None


def _compose(document, path: str) -> List[Launch]:
    services = _mapping_items(_get(document, "services"))
    one_shot: Set[str] = set()
    for _, service in services:
        for name_node, condition in _mapping_items(_get(service, "depends_on")):
            if _scalar(_get(condition, "condition")) == known.COMPOSE_COMPLETED_CONDITION:
                one_shot.add(name_node.value)
    found = []
    file_name = os.path.basename(path)
    for name_node, service in services:
        name = str(name_node.value)
        replicas = _scalar(_get(_get(service, "deploy"), "replicas"))
        per_replica = name not in one_shot and "migrat" not in name.lower() and replicas != known.SINGLE_REPLICA
        for key in ("entrypoint", "command"):
            node = _get(service, key)
            if node is None:
                continue
            for words in _words_of(node) or ():
                found.append(Launch(words, path, _line(node), per_replica, f"{file_name} service {name} {key}"))
    return found


def _kubernetes(document, path: str) -> List[Launch]:
    kind = _scalar(_get(document, "kind")) or ""
    metadata = _get(document, "metadata")
    name = _scalar(_get(metadata, "name")) or kind
    annotations = {_scalar(key) for key, _ in _mapping_items(_get(metadata, "annotations"))}
    hook = bool(annotations & known.HOOK_ANNOTATIONS)
    spec = _get(document, "spec")
    if kind in known.KUBERNETES_REPLICATED_KINDS or kind == "Job":
        pod = _get(_get(spec, "template"), "spec")
    elif kind == "CronJob":
        pod = _get(_get(_get(_get(spec, "jobTemplate"), "spec"), "template"), "spec")
    elif kind == "Pod":
        pod = spec
    else:
        return []
    per_replica = (kind in known.KUBERNETES_REPLICATED_KINDS and not hook
                   and _scalar(_get(spec, "replicas")) != known.SINGLE_REPLICA)
    where = f"Kubernetes {kind} {name}" + (" (a deploy hook)" if hook else "")
    found = []
    for list_key in ("initContainers", "containers"):
        for container in _sequence(_get(pod, list_key)):
            command = _get(container, "command")
            args = _get(container, "args")
            words: List[str] = []
            node = command if command is not None else args
            if node is None:
                continue
            for part in (command, args):
                if part is None:
                    continue
                scalar = _scalar(part)
                if scalar is not None:
                    words.extend(scalar.split())
                else:
                    words.extend(_scalar(item) or "" for item in _sequence(part))
            label = f"{where} {'init container' if list_key == 'initContainers' else 'container'}"
            for command_words in _expand_shell_c(tuple(words)):
                found.append(Launch(command_words, path, _line(node), per_replica, label))
    return found


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


def _resolve_file(name: str, directory: str, candidates: Sequence[str]) -> List[str]:
    """The project files a path written in a deployment file may be: relative to that file's directory and
    the directories above it (a container path ``/app/scripts/x.sh`` loses its leading parts one by one),
    or else the one project file with that base name."""
    parts = [p for p in name.replace("\\", "/").split("/") if p and p != "."]
    if not parts:
        return []
    found: List[str] = []
    current = directory
    while True:
        for start in range(len(parts)):
            candidate = os.path.normpath(os.path.join(current, *parts[start:]))
            if os.path.isfile(candidate) and candidate not in found:
                found.append(candidate)
                break
        if found:
            return found
        above = os.path.dirname(current)
        if above == current:
            break
        current = above
    same_name = [c for c in candidates if os.path.basename(c) == parts[-1]]
    return same_name if len(same_name) == 1 else []


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
            files = tuple(_resolve_file(target, launch.directory, python_files))
        elif kind == ALEMBIC_UPGRADE:
            files = tuple(_resolve_file(target, launch.directory, ()))
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
# Which migrations directory an Alembic / Flask-Migrate command runs
# =====================================================================================================
_PATH_CONSTRUCTORS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path", "PurePath"})
_PATH_IDENTITY_CALLS = frozenset({"str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                                  "os.path.expanduser"})
_PATH_IDENTITY_METHODS = frozenset({"resolve", "absolute", "expanduser"})
_MAX_PATH_DEPTH = 8


def static_path(expr, facts, depth: int = 0) -> Optional[str]:
    """The path an expression spells, when the code fixes it: a string, ``__file__``, ``Path(...)`` and
    ``/``, ``.parent``, ``os.path.join``/``dirname``, ``str(...)``, a name bound once in the function or
    the module, or a module constant of another project module.  Relative paths stay relative."""
    import ast

    from ..analysis.executed_sql import bound_value

    if depth > _MAX_PATH_DEPTH or expr is None:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr):
        parts = []
        for value in expr.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                part = static_path(value.value, facts, depth + 1)
                if part is None:
                    return None
                parts.append(part)
        return "".join(parts)
    if isinstance(expr, ast.Name):
        if expr.id == "__file__":
            return os.path.abspath(facts.context.path) if facts.context.path else None
        value = bound_value(expr, facts)
        if value is not None:
            return static_path(value, facts, depth + 1)
        qualified = facts.imports.aliases.get(expr.id)
        return _imported_constant(qualified, facts, depth) if qualified else None
    if isinstance(expr, ast.Attribute):
        if expr.attr == "parent":
            inner = static_path(expr.value, facts, depth + 1)
            return os.path.dirname(inner.rstrip("/")) if inner else None
        qualified = facts.qualify(expr)
        return _imported_constant(qualified, facts, depth) if qualified else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.Add)):
        left = static_path(expr.left, facts, depth + 1)
        right = static_path(expr.right, facts, depth + 1)
        if left is None or right is None:
            return None
        return os.path.join(left, right) if isinstance(expr.op, ast.Div) else left + right
    if isinstance(expr, ast.Call):
        callee = facts.callee(expr) or ""
        func = expr.func
        if callee in _PATH_CONSTRUCTORS or callee in _PATH_IDENTITY_CALLS:
            if not expr.args:
                return None
            parts = [static_path(a, facts, depth + 1) for a in expr.args]
            return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if callee == "os.path.join" and expr.args:
            parts = [static_path(a, facts, depth + 1) for a in expr.args]
            return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if callee == "os.path.dirname" and expr.args:
            inner = static_path(expr.args[0], facts, depth + 1)
            return os.path.dirname(inner) if inner is not None else None
        if isinstance(func, ast.Attribute):
            if func.attr in _PATH_IDENTITY_METHODS and not expr.args:
                return static_path(func.value, facts, depth + 1)
            if func.attr == "joinpath" and expr.args:
                parts = [static_path(func.value, facts, depth + 1)] + [static_path(a, facts, depth + 1) for a in expr.args]
                return os.path.join(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


def _imported_constant(qualified: str, facts, depth: int) -> Optional[str]:
    if not facts.context.cross_file:
        return None
    found = project.find_assignment(qualified, facts.config, project.roots_for(facts))
    if found is None:
        return None
    value, other = found
    return static_path(value, other, depth + 1)


@dataclass(frozen=True)
class MigrationsLocation:
    """Where a migration command's env.py lives: ``path`` absolute, or relative to a directory the command
    runs from (``relative=True``); ``path`` None when the code does not fix it."""

    path: Optional[str]
    relative: bool = False
    how: str = ""

    def matches(self, env_directory: str, near: str) -> bool:
        """Whether this is ``env_directory``; a relative location may start from ``near`` or any directory
        above it."""
        if self.path is None:
            return False
        target = os.path.normpath(os.path.abspath(env_directory))
        if not self.relative:
            return os.path.normpath(self.path) == target
        current = os.path.abspath(near)
        while True:
            if os.path.normpath(os.path.join(current, self.path)) == target:
                return True
            above = os.path.dirname(current)
            if above == current:
                return False
            current = above


def script_location_of_ini(ini_path: str, config: Config) -> MigrationsLocation:
    """``[alembic] script_location`` of an .ini file (``%(here)s`` is the file's directory; a relative
    location starts from the directory Alembic runs in, normally the file's own; ``pkg:dir`` is a
    directory of a package)."""
    import configparser

    text = _read(ini_path)
    if not text:
        return MigrationsLocation(None)
    parser = configparser.ConfigParser(defaults={"here": os.path.dirname(os.path.abspath(ini_path))},
                                       interpolation=configparser.BasicInterpolation(), strict=False)
    try:
        parser.read_string(text)
        location = parser.get("alembic", "script_location", fallback=None)
    except (configparser.Error, ValueError):
        return MigrationsLocation(None)
    if not location:
        return MigrationsLocation(None)
    return location_from_text(location.strip(), os.path.dirname(os.path.abspath(ini_path)), config,
                              f"script_location in {os.path.basename(ini_path)}")


def location_from_text(text: str, directory: str, config: Config, how: str) -> MigrationsLocation:
    if ":" in text and not os.path.isabs(text) and not re.match(r"^[A-Za-z]:[\\/]", text):
        package, _, inner = text.partition(":")
        for base in (directory, config.root):
            current = base
            while current:
                path = project.module_path(package, current)
                if path is not None:
                    return MigrationsLocation(os.path.join(os.path.dirname(path), inner), False, how)
                above = os.path.dirname(current)
                if above == current:
                    break
                current = above
        return MigrationsLocation(None)
    if os.path.isabs(text):
        return MigrationsLocation(text, False, how)
    return MigrationsLocation(os.path.normpath(os.path.join(directory, text)), False, how)


def ini_files_for(name: str, near: str) -> List[str]:
    """The .ini files a relative or container path may be, from ``near`` and the directories above it."""
    return _resolve_file(name, near, ())


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
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in known.PROJECT_MARKERS):
            return current
        if root and os.path.normpath(current) == os.path.normpath(root):
            break
        above = os.path.dirname(current)
        if above == current:
            break
        current = above
    return fallback or root


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
    for _, text in _logical_lines(_read(path)):
        for word in re.split(r"[\s()\[\]=]+", text):
            word = word.strip("\"'")
            if word:
                tokens.add(word)
    return tokens


def embeds_beat(launch: Launch) -> bool:
    """Whether this command starts a Celery worker with the beat scheduler inside it: ``-B``/``--beat`` on
    the worker's command line, or (a worker started from a script with its arguments in a variable) a
    script that names both ``worker`` and ``--beat`` for the celery command it runs."""
    words = launch.words
    if not _runs_celery(words):
        return False
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
    consumers = [launch for launch in launches_for(facts)
                 if any(os.path.basename(word) in known.HUEY_CONSUMER_COMMANDS for word in launch.words[:3])]
    if not consumers:
        return None
    return [launch for launch in consumers
            if launch.per_replica and not any(word in known.HUEY_NO_PERIODIC_FLAGS for word in launch.words)]


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
    wanted = set()
    for name in names:
        if name:
            wanted.update({name, name.replace("_", "-"), name.replace("-", "_")})
    if not wanted:
        return None
    for launch in launches_for(facts):
        for word in launch.words:
            if set(_WORD_PARTS.split(word)) & wanted:
                return launch
    return None
