"""Settings a deployment file fixes for the processes of one service, and whether that service is one process.

A compose service or a Kubernetes container sets environment variables for every process it runs
(``RUN_TICKERS: "1"`` on a ``ticker`` service, ``"0"`` on the ``api`` one).  Code gated on such a variable runs
only in the services that set it so; when each of those is pinned to one replica (``deploy.replicas: 1``,
``spec.replicas: 1``) and its command starts one process (a plain program, or a server left at one worker),
the deployment dedicates one process to the gated code, as a program that fixes the setting for itself does
(``process_roles``).  Nothing here is assumed: a service without an explicit single replica, or whose command is
not known, is not one process.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..config import Config
from ..knowledge import deployment as known
from . import index as project
from .deployment import deployment_bases
from .helm_values import UNKNOWN, yaml_documents
from .deployment_files import (_dockerfile, _get, _line, _mapping_items, _scalar, _sequence, _words_of,
                               infrastructure_image, is_dockerfile, read_text)

#: Options that set a server's number of worker processes.
_WORKER_OPTIONS = ("--workers", "-w", "--processes")
#: The variable a server reads its worker count from when no option or configuration file gives one.
_CONCURRENCY_VARIABLE = "WEB_CONCURRENCY"
#: The variable gunicorn reads more command-line options from.
_COMMAND_ARGUMENTS_VARIABLE = "GUNICORN_CMD_ARGS"
#: The setting of a gunicorn configuration file that gives the worker count.
_WORKERS_SETTING = "workers"
#: Servers whose worker count, when nothing sets it, is one.
_GUNICORN_CONFIGS = frozenset({"gunicorn.conf.py", "gunicorn_config.py", "gunicorn.py"})
_ONE_WORKER_SERVERS = frozenset({"uvicorn", "hypercorn", "gunicorn", "daphne", "granian", "fastapi", "waitress-serve"})


@dataclass(frozen=True)
class ServicePin:
    """One environment variable a service sets for its processes."""

    variable: str
    value: str
    path: str  # the deployment file
    line: int
    single: bool  # the service runs one process
    where: str  # "docker-compose.yml service ticker"
    #: the service applies migrations (its name or command says so): a one-off step, not the application
    migrates: bool = False
    #: a compose service that runs a server's image (``image: edoburu/pgbouncer``, no ``build:``): its variables
    #: configure that server, not the project's code
    foreign: bool = False


_scans: Dict[Tuple[str, ...], Tuple[List[ServicePin], Tuple[str, ...]]] = {}
project.on_clear(_scans.clear)


def service_pins(config: Config, search_root: str = "") -> List[ServicePin]:
    """Every environment variable the project's compose and Kubernetes files set, per service (once per run)."""
    bases = tuple(deployment_bases(config, search_root))
    if not bases:
        return []

    def scan() -> Tuple[List[ServicePin], Tuple[str, ...]]:
        files: List[str] = []
        for base in bases:
            files.extend(p for p in project.files_named(base, _is_yaml_or_dockerfile, config, key="service-settings")
                         if p not in files)
        dockerfiles = [p for p in files if is_dockerfile(os.path.basename(p))]
        # gunicorn reads ``gunicorn.conf.py`` from where it starts: its worker count is then the file's
        config_files: List[str] = []
        for base in bases:
            config_files.extend(p for p in project.files_named(base, _GUNICORN_CONFIGS.__contains__, config,
                                                               key="gunicorn-config") if p not in config_files)
        found: List[ServicePin] = []
        for path in files:
            if not is_dockerfile(os.path.basename(path)):
                found.extend(_pins_of_file(path, dockerfiles, bool(config_files), config_files))
        return found, tuple(files)

    return project.scan_once(_scans, bases, scan)


def _is_yaml_or_dockerfile(name: str) -> bool:
    return is_dockerfile(name) or name.lower().endswith(known.YAML_SUFFIXES)


def _pins_of_file(path: str, dockerfiles: Sequence[str], configured: bool,
                  config_files: Sequence[str] = ()) -> List[ServicePin]:
    text = read_text(path)
    if not text or "replicas" not in text:
        return []  # (no service of it is pinned to one process: its settings say nothing about one)
    documents = yaml_documents(text, path)
    found: List[ServicePin] = []
    name = os.path.basename(path)
    for document in documents:
        services = _get(document, "services")
        if services is not None:
            for service_name, service in _mapping_items(services):
                replicas = _scalar(_get(_get(service, "deploy"), "replicas")) or _scalar(_get(service, "scale"))
                command = _command(service, ("entrypoint", "command")) or _image_command(path, dockerfiles)
                # ``environment:`` wins over what an ``env_file:`` gives the same variable
                own = _environment(_get(service, "environment"))
                from_files = {v: entry for v, entry in _env_file_variables(path, _get(service, "env_file")).items()
                              if v not in own}
                variables = {**{v: (value, line) for v, (value, line, _) in from_files.items()}, **own}
                single = ((replicas == known.SINGLE_REPLICA or _get(service, known.COMPOSE_CONTAINER_NAME) is not None)
                          and _one_process(command, variables, configured, config_files))
                where = f"{name} service {service_name.value}"
                migrates = _migrates(str(service_name.value), command)
                foreign = _get(service, "build") is None and infrastructure_image(_scalar(_get(service, "image")))
                found.extend(ServicePin(v, value, from_files[v][2] if v in from_files else path, line, single, where,
                                        migrates, foreign) for v, (value, line) in variables.items())
            continue
        spec = _get(document, "spec")
        pod = _get(_get(spec, "template"), "spec")
        if pod is None:
            continue
        replicas = _scalar(_get(spec, "replicas"))
        for container in _sequence(_get(pod, "containers")):
            variables = _kubernetes_environment(_get(container, "env"))
            command = _command(container, ("command", "args")) or _image_command(path, dockerfiles)
            single = replicas == known.SINGLE_REPLICA and _one_process(command, variables, configured, config_files)
            workload = _scalar(_get(_get(document, 'metadata'), 'name')) or 'workload'
            where = f"{name} {workload}"
            migrates = _migrates(workload, command)
            found.extend(ServicePin(v, value, path, line, single, where, migrates)
                         for v, (value, line) in variables.items())
    return found


def _migrates(name: str, command: Optional[Tuple[str, ...]]) -> bool:
    """A service or workload that applies migrations: named for them, or started with ``manage.py migrate``,
    ``alembic upgrade``, ``flask db upgrade``."""
    words = [os.path.basename(word).lower() for word in command or ()]
    return known.MIGRATION_WORD in name.lower() or any(known.MIGRATION_WORD in word for word in words) or (
        "upgrade" in words and any(word in known.MIGRATION_PROGRAMS for word in words))


def _command(node, keys: Tuple[str, ...]) -> Optional[Tuple[str, ...]]:
    words: List[str] = []
    for key in keys:
        part = _get(node, key)
        if part is None:
            continue
        given = _words_of(part)
        if not given:
            return None  # (a command written some other way: not known)
        words.extend(given[-1])
    return tuple(words) or None


def _image_command(path: str, dockerfiles: Sequence[str]) -> Optional[Tuple[str, ...]]:
    """The start command of the image a service without one of its own runs: the one Dockerfile beside the
    deployment file (or the project's only one)."""
    beside = [d for d in dockerfiles if os.path.dirname(d) == os.path.dirname(path)]
    candidates = beside or list(dockerfiles)
    if len(candidates) != 1:
        return None
    launches = _dockerfile(candidates[0])
    return launches[-1].words if launches else None


def _environment(node) -> Dict[str, Tuple[str, int]]:
    """``environment:`` as a mapping (merge keys followed) or as a list of ``NAME=value``."""
    found: Dict[str, Tuple[str, int]] = {}
    for key, value in _mapping_items(node):
        if key.value == "<<":
            merged = [value] if _mapping_items(value) else _sequence(value)
            for part in merged:
                for name, (text, line) in _environment(part).items():
                    found.setdefault(name, (text, line))
            continue
        text = _scalar(value)
        if _known(text):  # (a value the shell fills in is not known here)
            found[str(key.value)] = (text, _line(value))
    for item in _sequence(node):
        text = _scalar(item)
        if text and "=" in text and _known(text):
            name, _, value = text.partition("=")
            found[name.strip()] = (value.strip(), _line(item))
    return found


def _env_file_variables(compose_path: str, node) -> Dict[str, Tuple[str, int, str]]:
    """What a compose service's ``env_file:`` files set (one path, a list of paths, or ``- path: ...`` entries),
    each as (value, line, file): ``NAME=value`` lines, relative to the compose file; later files win."""
    found: Dict[str, Tuple[str, int, str]] = {}
    entries = [node] if _scalar(node) is not None else _sequence(node)
    for entry in entries:
        relative = _scalar(entry) if _scalar(entry) is not None else _scalar(_get(entry, "path"))
        if not relative or not _known(relative):
            continue
        file = os.path.normpath(os.path.join(os.path.dirname(compose_path), relative))
        for number, line in enumerate(read_text(file).splitlines(), 1):
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export "):].lstrip()
            name, equals, value = line.partition("=")
            name, value = name.strip(), value.strip()
            if not equals or not name or name.startswith("#") or not name.isidentifier():
                continue
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            elif " #" in value:
                value = value.split(" #", 1)[0].rstrip()  # (an unquoted value's trailing comment)
            if _known(value):
                found[name] = (value, number, file)
    return found


def _kubernetes_environment(node) -> Dict[str, Tuple[str, int]]:
    found: Dict[str, Tuple[str, int]] = {}
    for item in _sequence(node):
        name, value = _scalar(_get(item, "name")), _get(item, "value")
        if name and _known(_scalar(value)):
            found[name] = (_scalar(value) or "", _line(value))
    return found


def _known(text: Optional[str]) -> bool:
    """A value written out: not one the shell fills in (``${...}``), nor a template expression not read here."""
    return text is not None and "${" not in text and UNKNOWN not in text


def _one_process(command: Optional[Tuple[str, ...]], variables: Dict[str, Tuple[str, int]], configured: bool,
                 config_files: Sequence[str] = ()) -> bool:
    """The command starts one process: not a server, or a server left at one worker (no option, no variable and
    no configuration file that could give it more; or ones that give it one).  gunicorn takes its count from
    its options, then from its configuration file's ``workers``, then from ``WEB_CONCURRENCY``."""
    if not command:
        return False
    program = os.path.basename(command[0])
    if program.startswith(known.PYTHON_PREFIX) and len(command) > 2 and command[1] == "-m":
        program = command[2]
    if program not in known.SERVER_COMMANDS:
        return True
    if program not in _ONE_WORKER_SERVERS:
        return False
    for index, word in enumerate(command):
        option, _, inline = word.partition("=")
        if option in _WORKER_OPTIONS:
            count = inline or (command[index + 1] if index + 1 < len(command) else "")
            return count == "1"
    if _COMMAND_ARGUMENTS_VARIABLE in variables:
        return False
    configured_here = program == "gunicorn" and (configured or any(
        word in ("-c", "--config") or word.startswith("--config=") for word in command))
    if configured_here:
        counts = {_configured_workers(path, variables) for path in config_files}
        if not counts or None in counts or counts - {1, _UNSET}:
            return False  # (a file that may give more, or one the command names and the project does not show)
        if counts == {1}:
            return True
    concurrency = variables.get(_CONCURRENCY_VARIABLE)
    return concurrency is None or concurrency[0].strip() == "1"


#: A configuration file that does not set ``workers``: the server's own default decides.
_UNSET = 0


def _configured_workers(path: str, variables: Dict[str, Tuple[str, int]]) -> Optional[int]:
    """The ``workers`` a gunicorn configuration file sets, with the service's variables (``workers =
    int(os.environ.get("WEB_CONCURRENCY", "2"))``): a count, ``_UNSET``, or None when not known here (a variable
    the service does not set, a computed count)."""
    try:
        tree = ast.parse(read_text(path))
    except (SyntaxError, ValueError):
        return None
    values = [node.value for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
              and node.value is not None and any(isinstance(t, ast.Name) and t.id == _WORKERS_SETTING
                                                 for t in (node.targets if isinstance(node, ast.Assign)
                                                           else [node.target]))]
    if not values:
        return _UNSET
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int" \
            and len(value.args) == 1:
        value = value.args[0]
    if isinstance(value, ast.Constant):
        text = str(value.value)
    else:
        variable = _environment_read(value)
        if variable is None or variable not in variables:
            return None  # (set by the image or a secret, or not read from the environment: not known)
        text = variables[variable][0]
    try:
        return int(text.strip())
    except ValueError:
        return None


def _environment_read(value: ast.AST) -> Optional[str]:
    """The variable ``os.environ.get("X", ...)``, ``os.getenv("X")`` or ``os.environ["X"]`` reads (as written
    in a configuration file, ``import os`` at its top)."""
    if isinstance(value, ast.Subscript) and ast.unparse(value.value) == "os.environ":
        key = value.slice
    elif isinstance(value, ast.Call) and ast.unparse(value.func) in ("os.environ.get", "os.getenv") and value.args:
        key = value.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


#: Keys through which a service takes variables the deployment files do not spell out.
_OTHER_SOURCES = ("env_file", "envFrom", "valueFrom")
_elsewhere: Dict[Tuple[Tuple[str, ...], str], Tuple[bool, Tuple[str, ...]]] = {}
project.on_clear(_elsewhere.clear)


def sets_elsewhere(variable: str, config: Config, search_root: str = "") -> bool:
    """Whether a process of the project may get ``variable`` from somewhere the services' own settings do not
    show: a file of variables (``env_file:``, ``envFrom:``, a ``.env``), an image's ``ENV``, a value filled in
    from outside (``${...}``, a template), or no deployment file at all."""
    bases = tuple(deployment_bases(config, search_root))
    if not bases:
        return True

    def scan() -> Tuple[bool, Tuple[str, ...]]:
        files: List[str] = []
        for base in bases:
            files.extend(p for p in project.files_named(base, _is_yaml_or_dockerfile, config, key="service-settings")
                         if p not in files)
            files.extend(p for p in project.files_named(base, _is_variables_file, config, key="variables-files")
                         if p not in files)
        pinned = {(pin.path, pin.line) for pin in service_pins(config, search_root) if pin.variable == variable}
        for path in files:
            text = read_text(path)
            name = os.path.basename(path)
            if _is_variables_file(name):
                if variable in text:
                    return True, tuple(files)
                continue
            if is_dockerfile(name):
                if any(line.split()[:1] in (["ENV"], ["ARG"]) and variable in line for line in text.splitlines()):
                    return True, tuple(files)
                continue
            if any(source in text for source in _OTHER_SOURCES):
                return True, tuple(files)
            for number, line in enumerate(text.splitlines(), 1):
                # each mention is a setting the services' pins hold (a compose entry, or a Kubernetes name whose
                # value is on the next line); any other is filled in some way not read here
                if variable in line and (path, number) not in pinned and (path, number + 1) not in pinned:
                    return True, tuple(files)
        return False, tuple(files)

    return project.scan_once(_elsewhere, (bases, variable), scan)


def _is_variables_file(name: str) -> bool:
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")
