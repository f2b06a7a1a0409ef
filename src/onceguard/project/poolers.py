"""Whether the project talks to PostgreSQL through a transaction pooler, from evidence anywhere in the project.

A lock or a migration is judged by the connection it runs on. Where the code builds that connection from a
value it does not show (``settings.database_url``, an environment variable), the project's own files say where
the value points: the environment its deployment files set (compose ``environment:``, Kubernetes ConfigMaps and
container ``env``, ``.env`` files, Dockerfile ``ENV``) and the PostgreSQL URLs written in its modules.

- A URL goes through a pooler when it names PgBouncer's port (6432), a host named for a pooler, or a pooler
  URL option (``pooler_sign``).
- ``pooled_everywhere``: every PostgreSQL URL the project shows goes through a pooler, and no pooler is set to
  session mode (``pool_mode = session``): whatever value a connection is built from, it is pooled. A project
  that also shows a direct URL (a ``DIRECT_DATABASE_URL`` for migrations, a development default for a variable
  the deployment does not set) gives no such answer.
- ``pooled_variable``: the deployment sets an environment variable only to pooled URLs.

A URL that is the default of an environment read (``os.environ.get("DATABASE_URL", "postgresql://...")``) of a
variable the deployment sets is not what runs there, and is left out. Tests are not deployed: their URLs are
not read.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

from ..analysis.context import FileContext
from ..knowledge import schema as known
from . import deployment, deployment_files
from . import index as project

#: A PostgreSQL URL in any text: ``postgresql://``, ``postgres://``, ``postgresql+psycopg://`` ...
_URL = re.compile(rb"""postgres(?:ql)?(?:\+[A-Za-z0-9_]+)?://[^\s'"`<>]+""")
#: ``NAME: value`` / ``NAME=value`` / ``"NAME": "value"`` ending where the URL starts.
_NAMED = re.compile(rb"""(?:^|[^A-Za-z0-9_.-])["']?([A-Za-z_][A-Za-z0-9_]*)["']?\s*[:=]\s*["']?$""")
#: A Kubernetes ``- name: X`` line above a ``value:`` line.
_ENV_NAME = re.compile(rb"""name:\s*["']?([A-Za-z_][A-Za-z0-9_]*)""")
#: ``os.environ.get("X", "<url>")`` / ``os.getenv("X", "<url>")`` / ``env("X", default="<url>")``: the
#: variable whose default the URL is.
_DEFAULT_OF = re.compile(rb"""["']([A-Za-z_][A-Za-z0-9_]*)["']\s*,\s*(?:default\s*=\s*)?[rbuRBU]?["']$""")
#: ``pool_mode = session`` (pgbouncer.ini), ``POOL_MODE: session`` / ``PGBOUNCER_POOL_MODE=session`` (images).
_POOL_MODE = re.compile(rb"""(?i)pool_mode["']?\s*[:=]\s*["']?([a-z]+)""")

_LIBPQ_PAIR = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")
_BARE_HOST = re.compile(r"(?P<host>[A-Za-z][A-Za-z0-9.-]*)(?::(?P<port>\d+))?")
_ENV_FILE = re.compile(r"(?:^|\.)env(?:\.|$)|\.env$")


def pooler_sign(text: str) -> Optional[str]:
    """What in a DSN shows it goes through a pooler: ``port 6432``, ``host pgbouncer``..., or None."""
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname or ""
            try:
                port = parts.port
            except ValueError:
                port = None
            options = parse_qsl(parts.query)
        except ValueError:
            return None
        for key, value in options:
            if key.lower() in ("host", "hostaddr"):
                host = host or value
            if key.lower() == "port" and value.isdigit():
                port = port or int(value)
        sign = host_or_port(host, port)
        if sign:
            return sign
        for key, value in options:
            if any(word in key.lower() or word in value.lower() for word in known.POOLER_OPTION_WORDS):
                return f"URL option {key}={value}"
        return None
    bare = _BARE_HOST.fullmatch(text.strip())
    if bare:  # a piece of a DSN built from parts: ``DB_HOST = "pgbouncer.svc"`` or ``"pgbouncer:6432"``
        return host_or_port(bare.group("host"), int(bare.group("port")) if bare.group("port") else None)
    pairs = {key.lower(): value.strip("'") for key, value in _LIBPQ_PAIR.findall(text)}
    if "host" in pairs or "port" in pairs or "dbname" in pairs:
        port = int(pairs["port"]) if pairs.get("port", "").isdigit() else None
        sign = host_or_port(pairs.get("host", ""), port)
        if sign:
            return sign
        for key in pairs:
            if any(word in key for word in known.POOLER_OPTION_WORDS):
                return f"option {key}"
    return None


def host_or_port(host: str, port: Optional[int]) -> Optional[str]:
    if port in known.PGBOUNCER_PORTS:
        return f"port {port}, PgBouncer's port"
    lowered = host.lower()
    for word in known.POOLER_HOST_WORDS:
        if word in lowered:
            return f"host {host}"
    return None


@dataclass(frozen=True)
class ShownUrl:
    """A PostgreSQL URL a project file shows."""

    url: str
    path: str
    line: int
    variable: Optional[str]  # the environment variable it is the value (or, in code, the default) of
    in_code: bool
    sign: Optional[str]  # how it goes through a pooler; None for a direct URL

    def describe(self, root: str = "") -> str:
        where = os.path.relpath(self.path, root) if root else os.path.basename(self.path)
        named = f"`{self.variable}` " if self.variable else "the URL "
        return f"{named}in {where}:{self.line}: {self.sign}"


@dataclass(frozen=True)
class _Shown:
    urls: Tuple[ShownUrl, ...]
    session_mode: bool  # a pooler of the project is set to session mode


def _is_env_file(name: str) -> bool:
    return bool(_ENV_FILE.search(name.lower())) and not name.lower().endswith((".py", ".md", ".txt"))


def _urls_in(data: bytes, path: str, in_code: bool) -> List[ShownUrl]:
    found = []
    for match in _URL.finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        before = data[start:match.start()]
        line = data.count(b"\n", 0, match.start()) + 1
        url = match.group(0).decode("utf-8", "replace").rstrip(",;)]}")
        if in_code:
            named = _DEFAULT_OF.search(before)
        else:
            named = _NAMED.search(before)
            if named is not None and named.group(1).lower() == b"value":  # Kubernetes ``- name: X`` / ``value:``
                above = data.rfind(b"\n", 0, max(start - 1, 0)) + 1
                named = _ENV_NAME.search(data[above:start])
        variable = named.group(1).decode("ascii") if named is not None else None
        found.append(ShownUrl(url, path, line, variable, in_code, pooler_sign(url)))
    return found


def _shown(facts) -> _Shown:
    config = facts.config
    root = project.search_root(facts)

    def scan() -> Tuple[_Shown, Tuple[str, ...]]:
        urls: List[ShownUrl] = []
        session = False
        read: List[str] = []
        for base in deployment.deployment_bases(config, root):
            for path in project.files_named(base, lambda name: deployment_files.is_deployment_file(name)
                                            or _is_env_file(name) or name.lower().endswith(".ini"),
                                            config, key="poolers"):
                if path in read:
                    continue
                read.append(path)
                data = project.read_bytes(path)
                session = session or any(m.group(1).lower() == b"session" for m in _POOL_MODE.finditer(data))
                if not path.lower().endswith(".ini"):  # (alembic.ini's URL is a template the env.py replaces)
                    urls.extend(_urls_in(data, path, in_code=False))
        urls.extend(_referenced_urls(read))
        # A URL a server's own container is given (the pooler's upstream, ``DATABASE_URL`` of the pgbouncer
        # service) or that a migrate step uses is no place the application's code connects to.
        if urls:
            from .service_settings import service_pins

            pins = service_pins(config, root)
            # (a line of an ``env_file`` the application's service reads too is still where the code connects)
            own = {(pin.path, pin.line) for pin in pins if not (pin.foreign or pin.migrates)}
            elsewhere = {(pin.path, pin.line) for pin in pins if pin.foreign or pin.migrates} - own
            urls = [url for url in urls if (url.path, url.line) not in elsewhere]
        for path in project.files_mentioning("postgres", root):
            if FileContext(path, config).is_test:
                continue
            data = project.read_bytes(path)
            urls.extend(_urls_in(data, path, in_code=True))
            if _DJANGO_DATABASES.encode() in data:
                urls.extend(_django_databases(path, config, root))
        return _Shown(tuple(urls), session), tuple(read)

    return project.scan_once(_scans, (config.root or "", root), scan)


_scans: Dict = {}


def _referenced_urls(paths: List[str]) -> List[ShownUrl]:
    """The PostgreSQL URLs a Kubernetes container's ``env`` takes from a Secret or ConfigMap of the manifests,
    each at the env entry, named by its variable."""
    from . import kubernetes_values

    manifests = [(path, project.read_bytes(path).decode("utf-8", "replace")) for path in paths
                 if path.lower().endswith((".yaml", ".yml"))]
    if not any("valueFrom" in text for _, text in manifests):
        return []
    entries, references = kubernetes_values.read(manifests)
    found = []
    for path, entry_references in references.items():
        for variable, kind, name, key, line in entry_references:
            value = entries.get((kind, name, key), ("", 0))[0]
            if _URL.fullmatch(value.strip().encode("utf-8", "replace")):
                url = value.strip()
                found.append(ShownUrl(url, path, line, variable, False, pooler_sign(url)))
    return found


_DJANGO_DATABASES = "DATABASES"
#: Calls that read an environment variable, the default as second argument (or ``default=``).
_ENV_READS = frozenset({"os.environ.get", "os.getenv", "environ.get", "getenv", "env", "config", "env.str"})


def _django_databases(path: str, config, root: str) -> List[ShownUrl]:
    """The PostgreSQL servers a Django settings module's ``DATABASES`` names by ``HOST`` and ``PORT``, as the
    URLs they stand for: a value read from the environment is what the deployment sets the variable to, or its
    default where nothing sets it."""
    from .service_settings import service_pins

    facts = project.module_facts(path, config)
    if facts is None or _not_deployed(facts, config, root):
        return []
    pins: Optional[Dict[str, List[str]]] = None
    found: List[ShownUrl] = []
    for statement in facts.tree.body:
        if not (isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == _DJANGO_DATABASES
                                                          for t in statement.targets)):
            continue
        for node in ast.walk(statement.value):
            if not isinstance(node, ast.Dict):
                continue
            entries = {key.value: value for key, value in zip(node.keys, node.values)
                       if isinstance(key, ast.Constant) and isinstance(key.value, str)}
            engine = entries.get("ENGINE")
            if "HOST" not in entries or not (isinstance(engine, ast.Constant) and "postg" in str(engine.value)):
                continue
            if pins is None:
                pins = {}
                for pin in service_pins(config, root):
                    # Where migrations connect is OG402's question, and a pooler's own service names its upstream:
                    # neither is where the application's code connects.
                    if not pin.migrates and not pin.foreign:
                        pins.setdefault(pin.variable, []).append(pin.value)
            hosts = list(dict.fromkeys(_setting_values(entries["HOST"], facts, pins)))
            ports = list(dict.fromkeys(_setting_values(entries["PORT"], facts, pins))) if "PORT" in entries \
                else ["5432"]
            for host in hosts:
                for port in ports:
                    url = f"postgresql://{host}:{port}/"
                    found.append(ShownUrl(url, path, node.lineno, None, True, pooler_sign(url)))
    return found


def _not_deployed(facts, config, root: str) -> bool:
    """A Django settings module no deployed process runs with: the deployment (an image's ``ENV``, a service's
    environment) names other settings modules only, and each of them sets ``DATABASES`` itself (a development
    base that ``production`` builds on and replaces)."""
    from .bindings import own_module_name

    named = _deployed_settings_modules(config, root)
    if not named or own_module_name(facts) in named:
        return False
    for module in named:
        path = project.module_path(module, config.root or root)
        other = project.module_facts(path, config) if path else None
        if other is None or not any(isinstance(t, ast.Name) and t.id == _DJANGO_DATABASES
                                    for statement in other.tree.body if isinstance(statement, ast.Assign)
                                    for t in statement.targets):
            return False
    return True


def _deployed_settings_modules(config, root: str) -> List[str]:
    """Every value the deployment files give ``DJANGO_SETTINGS_MODULE``: Dockerfile ``ENV`` lines and the
    services' environments."""
    from ..knowledge import deployment as deployment_known
    from .service_settings import service_pins

    variable = deployment_known.DJANGO_SETTINGS_VARIABLE
    found = [pin.value for pin in service_pins(config, root) if pin.variable == variable]
    for base in deployment.deployment_bases(config, root):
        for path in project.files_named(base, deployment_files.is_dockerfile, config, key="dockerfiles"):
            found.extend(value for name, value in _image_environment(path) if name == variable)
    return list(dict.fromkeys(found))


def _image_environment(path: str) -> List[Tuple[str, str]]:
    """(name, value) for each variable a Dockerfile's ``ENV`` sets (``ENV A=1 B=2``, ``ENV A 1``)."""
    import shlex

    from ..knowledge import deployment as deployment_known

    found = []
    for _, line in deployment_files.logical_lines(deployment_files.read_text(path)):
        words = line.split(None, 1)
        if len(words) != 2 or words[0].upper() != deployment_known.DOCKERFILE_ENV:
            continue
        try:
            parts = shlex.split(words[1])
        except ValueError:
            continue
        if parts and "=" not in parts[0]:
            found.append((parts[0], " ".join(parts[1:])))
            continue
        found.extend(tuple(part.split("=", 1)) for part in parts if "=" in part)
    return [(name, value) for name, value in found if "$" not in value]


def _setting_values(node, facts, pins: Dict[str, List[str]]) -> List[str]:
    """What a settings value can be: a constant, or an environment read's deployed values (its default where the
    deployment sets none); ``?`` where it cannot be told."""
    if isinstance(node, ast.Constant) and node.value is not None:
        return [str(node.value)]
    if isinstance(node, ast.Subscript) and (facts.qualify(node.value) or "") == "os.environ" \
            and isinstance(node.slice, ast.Constant):
        return pins.get(str(node.slice.value), ["?"])  # (``os.environ["DATABASE_HOST"]``: no default)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and (facts.callee(node) or "") in _ENV_READS:
        variable = str(node.args[0].value)
        if variable in pins:
            return pins[variable]
        default = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "default"), None)
        if isinstance(default, ast.Constant) and default.value is not None:
            return [str(default.value)]
    return ["?"]


def _deployed(shown: _Shown) -> Dict[str, List[ShownUrl]]:
    by_variable: Dict[str, List[ShownUrl]] = {}
    for url in shown.urls:
        if not url.in_code and url.variable:
            by_variable.setdefault(url.variable, []).append(url)
    return by_variable


def pooled_everywhere(facts) -> Optional[ShownUrl]:
    """A pooled URL of the project, when every PostgreSQL URL it shows is pooled (a code default of a variable
    the deployment sets left out) and no pooler is set to session mode; None otherwise (the CLI only)."""
    if not facts.context.cross_file:
        return None
    shown = _shown(facts)
    if shown.session_mode:
        return None
    deployed = _deployed(shown)
    kept = [url for url in shown.urls if not (url.in_code and url.variable in deployed)]
    if not kept or any(url.sign is None for url in kept):
        return None
    return next((url for url in kept if not url.in_code), kept[0])


def pooled_variable(variable: str, facts) -> Optional[ShownUrl]:
    """Where the deployment sets ``variable`` to a pooled URL, when it sets it only to pooled ones."""
    if not facts.context.cross_file:
        return None
    shown = _shown(facts)
    values = _deployed(shown).get(variable, [])
    if shown.session_mode or not values or any(url.sign is None for url in values):
        return None
    return values[0]


project.on_clear(_scans.clear)
