"""Deployment files read into launches: the command lines each file runs, and whether every replica runs them.

Dockerfile ``CMD`` / ``ENTRYPOINT`` (shell and exec forms), Procfile process types, docker compose services and
Kubernetes workloads (jobs and hooks run once), and the shell scripts those run or that end by starting a server.
What a launch does (``deployment.steps``) is read from its words elsewhere; here only where it comes from.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, replace
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..knowledge import deployment as known
from . import index as project

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
    #: a container that hands the image's entrypoint these arguments (Kubernetes ``args:`` without ``command:``)
    args_only: bool = False
    #: a container or service of the project's image that gives no command: the image's own runs (no words)
    image_default: bool = False
    #: the image a container or compose service runs ("" when built from the project, or not said)
    image: str = ""
    #: how many replicas the file asks for when it says so (a Deployment's ``replicas:``, compose's
    #: ``deploy.replicas``); None when it leaves the number to a default or an autoscaler
    replicas: Optional[int] = None

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)



# =====================================================================================================
# Finding the files
# =====================================================================================================
def is_dockerfile(name: str) -> bool:
    return (name in known.DOCKERFILE_NAMES or name.startswith(known.DOCKERFILE_PREFIXES)
            or name.endswith(known.DOCKERFILE_SUFFIXES))


def is_deployment_file(name: str) -> bool:
    lowered = name.lower()
    # (an app manifest only scales a Procfile's process types: listed so that a result depends on it)
    return (is_dockerfile(name) or name in known.PROCFILE_NAMES or lowered.endswith(known.YAML_SUFFIXES)
            or name == known.APP_MANIFEST
            or lowered.endswith(known.SHELL_SUFFIXES) or _may_be_uwsgi_config(lowered)
            or _may_be_supervisor_config(lowered))


def _may_be_supervisor_config(lowered: str) -> bool:
    """``supervisord.conf``, ``supervisor-web.conf``: a configuration named for supervisord (its
    ``[program:...]`` sections are read)."""
    return lowered.endswith(known.SUPERVISOR_SUFFIXES) and known.SUPERVISOR_WORD in lowered


def _may_be_uwsgi_config(lowered: str) -> bool:
    """``uwsgi.ini``, ``docker/uwsgi-prod.ini``: an ini file named for uWSGI (its ``[uwsgi]`` section is read)."""
    return lowered.endswith(".ini") and "uwsgi" in lowered


def read_text(path: str) -> str:
    try:
        if os.path.getsize(path) > _MAX_FILE_BYTES:
            return ""
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    project.record_dependency(path)
    return data.decode("utf-8", "replace")



# =====================================================================================================
# Reading each kind of file
# =====================================================================================================
class Scanner:
    """Every launch of the files, and of the scripts they run (to a depth); ``starts_server`` tells a script that
    starts a server, whose commands before it are the container's start when nothing else runs it."""

    def __init__(self, files: Sequence[str], starts_server: Callable[[Sequence[str]], bool],
                 for_development: Callable[[str], bool] = lambda path: False) -> None:
        self.files = list(files)
        self.starts_server = starts_server
        #: a file that describes a developer's machine (``docker-compose.dev.yml``, ``.devcontainer/``): one
        #: instance, whatever it runs
        self.for_development = for_development
        self.scripts = [p for p in files if p.lower().endswith(known.SHELL_SUFFIXES)]
        self.found: List[Launch] = []
        self._script_modes: Dict[str, bool] = {}  # script -> per replica, as the files that run it say
        #: the first arguments a replicated container may hand an entrypoint script (filled by ``scan``)
        self.replica_arguments: Set[str] = set()

    def scan(self) -> List[Launch]:
        direct: List[Launch] = []
        for path in self.files:
            name = os.path.basename(path)
            if is_dockerfile(name):
                direct.extend(_dockerfile(path))
            elif name in known.PROCFILE_NAMES:
                direct.extend(_procfile(path))
            elif name.lower().endswith(known.YAML_SUFFIXES):
                direct.extend(_yaml_file(path))
            elif _may_be_uwsgi_config(name.lower()):
                direct.extend(_uwsgi_config(path))
            elif _may_be_supervisor_config(name.lower()):
                direct.extend(_supervisor_config(path))
        direct = [replace(launch, per_replica=False) if launch.per_replica and self.for_development(launch.path)
                  else launch for launch in _as_the_image_runs(direct)]
        # The words a replicated container may hand an entrypoint script as its first argument (its command or
        # arguments, first words and the word after a script): a branch of the script another value selects is
        # run by the one-off containers that pass that value, not by every replica.
        self.replica_arguments = {word for launch in direct if launch.per_replica
                                  for index, word in enumerate(launch.words)
                                  if index == 0 or launch.words[index - 1].lower().endswith(known.SHELL_SUFFIXES)}
        for launch in direct:
            self._add(launch, 0)
        # A script nothing above runs, that starts a server: the container's start command.
        for script in self.scripts:
            if script in self._script_modes:
                continue
            commands = _selected_commands(script)
            if any(self.starts_server(words) for _, words, _ in commands):
                replicated = not self.for_development(script)
                self._script_modes[script] = replicated
                for line, words, selected in commands:
                    self._add(Launch(words, script, line, self._per_replica(replicated, selected),
                                     os.path.basename(script)), 1)
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
            for line, words, selected in _selected_commands(script):
                self._add(Launch(words, script, line, self._per_replica(launch.per_replica, selected), where),
                          depth + 1)

    def _per_replica(self, script_per_replica: bool, selected: Optional[FrozenSet[str]]) -> bool:
        """A command of a script run per replica is, unless only a first argument no replica passes selects it."""
        if not script_per_replica or selected is None:
            return script_per_replica
        return bool(selected & self.replica_arguments)

    def _scripts_run(self, launch: Launch) -> List[str]:
        words = list(launch.words)
        if words and os.path.basename(words[0]) in known.SHELLS and len(words) > 1:
            words = [w for w in words[1:] if not w.startswith("-")]
        if not words or not words[0].lower().endswith(known.SHELL_SUFFIXES):
            return []
        return resolve_file(words[0], launch.directory, self.scripts)


def logical_lines(text: str) -> Iterable[Tuple[int, str]]:
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


def infrastructure_image(image: Optional[str]) -> bool:
    """``edoburu/pgbouncer:1.23``, ``postgres:16``: the image of a server a project runs beside its code."""
    name = (image or "").rsplit("/", 1)[-1].split(":", 1)[0].lower()
    return bool(name) and any(word in name for word in known.INFRASTRUCTURE_IMAGE_WORDS)


def _as_the_image_runs(launches: List[Launch]) -> List[Launch]:
    """The launches as the containers of the project's image run them.  A Kubernetes container that gives
    only ``args:`` runs the image's ENTRYPOINT with them; when the replicated workloads shown, and every other
    container and compose service of the image, give their own command or arguments, the Dockerfile's CMD (and
    its ENTRYPOINT on its own) is a default nothing runs.  A workload is the image's when its file lies in the
    Dockerfile's project (its directory, or the one above a ``docker/`` folder) and no other Dockerfile is there:
    with several, which image a workload runs is not known, and the files are left as written."""
    dockerfiles = sorted({launch.path for launch in launches if is_dockerfile(os.path.basename(launch.path))})
    found = [launch for launch in launches if not launch.image_default]
    for dockerfile in dockerfiles:
        base = os.path.dirname(dockerfile)
        if os.path.basename(base).lower() in known.DOCKERFILE_FOLDERS:
            base = os.path.dirname(base)
        inside = base + os.sep
        if any(other != dockerfile and other.startswith(inside) for other in dockerfiles):
            continue
        entry = next((launch for launch in launches if launch.path == dockerfile
                      and launch.where.endswith(" ENTRYPOINT")), None)
        # (a service of a database's or a broker's image runs that server, not the project's image)
        orchestrated = [launch for launch in launches if launch.path != dockerfile and launch.path.startswith(inside)
                        and not is_dockerfile(os.path.basename(launch.path)) and not infrastructure_image(launch.image)]
        if entry is not None:
            found = [Launch(entry.words + launch.words, launch.path, launch.line, launch.per_replica,
                            f"{launch.where} (arguments to the image's ENTRYPOINT)")
                     if launch.args_only and launch in orchestrated else launch for launch in found]
        # Only a replicated workload shown giving its own command says the servers do not run the image's own;
        # a one-off Job handing it arguments leaves the default to whatever runs the replicas.
        if any(launch.per_replica for launch in orchestrated) and not any(
                launch.image_default for launch in orchestrated) and all(
                not launch.args_only or entry is not None for launch in orchestrated):
            found = [launch for launch in found if launch.path != dockerfile]
    return found


def _dockerfile(path: str) -> List[Launch]:
    found = []
    name = os.path.basename(path)
    per_replica = known.MIGRATION_WORD not in name.lower()  # ``Dockerfile.migrate``: an image for the one-off job
    for line, text in logical_lines(read_text(path)):
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


def _ini_entries(path: str) -> Iterator[Tuple[int, str, str, str]]:
    """(line, section as written, key, value) of each ``key = value`` line of an ini-style file, comments and
    lines before the first section left out."""
    section = ""
    for line, text in logical_lines(read_text(path)):
        stripped = text.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip()
            continue
        if not section or "=" not in stripped or stripped.startswith(("#", ";")):
            continue
        key, _, value = (part.strip() for part in stripped.partition("="))
        yield line, section, key, value


def _uwsgi_config(path: str) -> List[Launch]:
    """The commands a uWSGI server runs as it starts (``hook-pre-app = exec:./manage.py migrate``,
    ``exec-asap = ...``) and the daemons it keeps up beside its workers (``attach-daemon = ./manage.py
    sendalerts``), from the ``[uwsgi]`` section: every replica whose server loads the file runs them."""
    found: List[Launch] = []
    name = os.path.basename(path)
    per_replica = known.MIGRATION_WORD not in name.lower()
    for line, section, key, value in _ini_entries(path):
        if section.lower() != known.UWSGI_SECTION:
            continue
        key = key.lower()
        if key.startswith(known.UWSGI_HOOK_PREFIX):
            action, _, command = value.partition(":")
            if action.strip() not in known.UWSGI_EXEC_ACTIONS:
                continue
        elif key.startswith(known.UWSGI_EXEC_PREFIX) or key in known.UWSGI_DAEMON_OPTIONS:
            command = value
        elif key in known.UWSGI_PIDFILE_DAEMON_OPTIONS:
            command = value.partition(" ")[2]  # (its first word is the daemon's pidfile)
        else:
            continue
        for words in _shell_words(command.strip()):
            found.append(Launch(words, path, line, per_replica, f"{name} {key}"))
    return found


def _supervisor_config(path: str) -> List[Launch]:
    """The programs supervisord starts (``[program:web]`` ``command = ...``): every container whose start
    command is supervisord runs each of them, a one-shot ``migrate`` as much as the server, unless the program
    is not started with supervisord (``autostart = false``)."""
    found: List[Launch] = []
    name = os.path.basename(path)
    programs: Dict[str, Tuple[int, str]] = {}
    manual: Set[str] = set()
    for line, section, key, value in _ini_entries(path):
        if not section.startswith(known.SUPERVISOR_PROGRAM_PREFIX):
            continue
        value = value.split(" ;", 1)[0].strip()  # (an inline comment follows a blank and a semicolon)
        if key.lower() == "command":
            programs[section] = (line, value)
        elif key.lower() == "autostart" and value.lower() in known.SUPERVISOR_FALSE_VALUES:
            manual.add(section)
    per_replica = known.MIGRATION_WORD not in name.lower()
    for section, (line, command) in programs.items():
        if section in manual:
            continue
        for words in _shell_words(command):
            found.append(Launch(words, path, line, per_replica, f"{name} [{section}]"))
    return found


def _procfile(path: str) -> List[Launch]:
    found = []
    quantities = _formation(os.path.join(os.path.dirname(path), known.APP_MANIFEST))
    for line, text in logical_lines(read_text(path)):
        process, colon, command = text.partition(":")
        process = process.strip()
        if not colon or not process or process.startswith("#") or " " in process:
            continue
        # a process type the manifest scales to one dyno (a ``clock``) runs once, as a one-replica workload does
        quantity = quantities.get(process)
        per_replica = process not in known.PROCFILE_ONCE_TYPES and quantity != 1
        for words in _shell_words(command):
            found.append(Launch(words, path, line, per_replica, f"Procfile {process}", replicas=quantity))
    return found


def _formation(path: str) -> Dict[str, int]:
    """process type -> the dyno count an app manifest's ``formation`` gives it (none when there is no manifest)."""
    import json

    text = read_text(path) if os.path.isfile(path) else ""
    try:
        formation = json.loads(text).get(known.APP_FORMATION) if text else None
    except (ValueError, AttributeError):
        return {}
    if not isinstance(formation, dict):
        return {}
    return {str(process): entry[known.APP_QUANTITY] for process, entry in formation.items()
            if isinstance(entry, dict) and type(entry.get(known.APP_QUANTITY)) is int}


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
    return [(line, words) for line, words, _ in _selected_commands(path)]


#: ``if [ "$1" = "migrate" ]; then`` / ``elif [[ "${1:-serve}" == worker ]]``: a branch the script's first argument
#: selects.
_IF_ARGUMENT = re.compile(r'^(el)?if\s+\[\[?\s*"?\$\{?1(?::-([^}"]*))?\}?"?\s*==?\s*[\'"]?([\w.:-]+)[\'"]?\s*\]\]?\s*;?\s*(then)?$')
#: ``case "$1" in``
_CASE_ARGUMENT = re.compile(r'^case\s+"?\$\{?1(?::-([^}"]*))?\}?"?\s+in$')
#: ``migrate|upgrade)`` (a command may follow on the same line)
_CASE_PATTERN = re.compile(r'^\(?([\w.:|*"\'-]+)\)\s*(.*)$')


def _selected_commands(path: str) -> List[Tuple[int, Tuple[str, ...], Optional[FrozenSet[str]]]]:
    """(line, words, the values of the script's first argument that run it, or None when any does) for each
    command of a shell script: an entrypoint that dispatches on its argument (``if [ "$1" = "migrate" ]``,
    ``case "$1" in migrate) ...``) runs the branch a container's arguments choose, not all of them."""
    found: List[Tuple[int, Tuple[str, ...], Optional[FrozenSet[str]]]] = []
    # One frame per open ``if``/``case``: [kind, the values the current branch takes, whether it tests $1]
    frames: List[list] = []

    defaults: List[str] = []  # ``${1:-web}``: the branch a container given no argument runs

    def selector() -> Optional[FrozenSet[str]]:
        for kind, values, on_argument in reversed(frames):
            if on_argument:
                return None if values is None or set(values) & set(defaults) else values
        return None

    for line, text in logical_lines(read_text(path)):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        chosen = _IF_ARGUMENT.match(stripped)
        if chosen:
            if chosen.group(2):
                defaults.append(chosen.group(2))
            value = frozenset({chosen.group(3)})
            if chosen.group(1) and frames and frames[-1][0] == "if":
                frames[-1][1], frames[-1][2] = value, True
            else:
                frames.append(["if", value, True])
            continue
        if re.match(r"^if\b", stripped) and not stripped.endswith("fi"):
            frames.append(["if", None, False])  # (its test may run a command: ``if ! alembic upgrade head; then``)
        elif re.match(r"^elif\b", stripped) and frames and frames[-1][0] == "if":
            frames[-1][1] = None  # a branch some other test selects: whatever the argument is
        if stripped in ("else", "else;") and frames and frames[-1][0] == "if":
            frames[-1][1] = None  # (the other values: a default branch)
            continue
        if stripped in ("fi", "fi;") and frames and frames[-1][0] == "if":
            frames.pop()
            continue
        case = _CASE_ARGUMENT.match(stripped)
        if case:
            if case.group(1):
                defaults.append(case.group(1))
            frames.append(["case", None, True])
            continue
        if frames and frames[-1][0] == "case":
            if stripped == "esac":
                frames.pop()
                continue
            pattern = _CASE_PATTERN.match(stripped)
            if pattern and not stripped.startswith(("exec ", "python")):
                values = {v.strip("\"'") for v in pattern.group(1).split("|")}
                frames[-1][1] = None if "*" in values else frozenset(values)
                stripped = pattern.group(2).strip()
                if not stripped:
                    continue
            if stripped.endswith(";;"):
                stripped = stripped[:-2].strip()
                if not stripped:
                    continue
        for words in _shell_words(stripped):
            found.append((line, words, selector()))
    return found


# -- YAML: compose and Kubernetes ---------------------------------------------------------------------------


def _yaml_file(path: str) -> List[Launch]:
    import yaml  # a dependency; imported here so the plugin's import stays cheap

    name = os.path.basename(path).lower()
    text = read_text(path)
    if not text:
        return []
    compose = name.startswith(known.COMPOSE_PREFIXES)
    if not compose and not all(marker.decode() in text for marker in known.KUBERNETES_MARKERS):
        return []
    # Helm templates: drop whole-line directives, write in the chart's values, stand in a word for other inline
    # expressions (line numbers kept).
    from .helm_values import yaml_documents

    documents = yaml_documents(text, path)
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
        # A fixed ``container_name`` is one container: compose cannot scale such a service past one.
        per_replica = (name not in one_shot and known.MIGRATION_WORD not in name.lower()
                       and replicas != known.SINGLE_REPLICA and _get(service, known.COMPOSE_CONTAINER_NAME) is None)
        image = "" if _get(service, "build") is not None else (_scalar(_get(service, "image")) or "")
        count = _count(replicas)
        if _get(service, "entrypoint") is None and _get(service, "command") is None:
            found.append(Launch((), path, _line(name_node), per_replica, f"{file_name} service {name}",
                                image_default=True, image=image, replicas=count))
        for key in ("entrypoint", "command"):
            node = _get(service, key)
            if node is None:
                continue
            for words in _words_of(node) or ():
                found.append(Launch(words, path, _line(node), per_replica, f"{file_name} service {name} {key}",
                                    image=image, replicas=count))
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
    replicas = _scalar(_get(spec, "replicas"))
    per_replica = kind in known.KUBERNETES_REPLICATED_KINDS and not hook and replicas != known.SINGLE_REPLICA
    count = _count(replicas) if kind in known.KUBERNETES_REPLICATED_KINDS else None
    where = f"Kubernetes {kind} {name}" + (" (a deploy hook)" if hook else "")
    found = []
    for list_key in ("initContainers", "containers"):
        for container in _sequence(_get(pod, list_key)):
            command = _get(container, "command")
            args = _get(container, "args")
            words: List[str] = []
            node = command if command is not None else args
            label = f"{where} {'init container' if list_key == 'initContainers' else 'container'}"
            image = _scalar(_get(container, "image")) or ""
            if node is None:
                found.append(Launch((), path, _line(container), per_replica, label, image_default=True,
                                    image=image, replicas=count))
                continue
            for part in (command, args):
                if part is None:
                    continue
                scalar = _scalar(part)
                if scalar is not None:
                    words.extend(scalar.split())
                else:
                    words.extend(_scalar(item) or "" for item in _sequence(part))
            for command_words in _expand_shell_c(tuple(words)):
                found.append(Launch(command_words, path, _line(node), per_replica, label,
                                    args_only=command is None, image=image, replicas=count))
    return found


def _count(text: Optional[str]) -> Optional[int]:
    """A replica count written as a number (a template or a variable says nothing)."""
    return int(text) if text is not None and text.strip().isdigit() else None


def resolve_file(name: str, directory: str, candidates: Sequence[str]) -> List[str]:
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
