"""``[tool.onceguard]`` in pyproject.toml: read the same way by the CLI, flake8 and the LSP."""
from __future__ import annotations

import codecs
import fnmatch
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


class ConfigError(Exception):
    """A user mistake in configuration: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Config:
    select: Tuple[str, ...] = ("OG",)
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = (
        ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "__pycache__", "node_modules",
        "build", "dist", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".onceguard_cache",
    )
    extend_exclude: Tuple[str, ...] = ()
    claim_functions: Tuple[str, ...] = ()
    migration_paths: Tuple[str, ...] = ()
    transaction_pooler: bool = False
    single_scheduler: bool = True
    migrate_url_env: str = ""
    error: Tuple[str, ...] = ()
    #: Test code (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``) is not deployed: its
    #: findings are off unless a project asks for them.
    check_tests: bool = False
    #: What the project's .gitignore / .ignore files leave out is not checked (as in ruff).
    respect_gitignore: bool = True
    #: False: each file is judged alone, as under flake8 (the command line's ``--no-project``); not a
    #: pyproject key, since what a project shows is never wrong to read.
    whole_project: bool = True
    root: str = field(default="", compare=False)

    def digest(self) -> str:
        """Identifies the settings that change results (the cache keys on it)."""
        return _digest(self)

    def relative(self, path: str) -> str:
        """``path`` relative to the config's root, with forward slashes, for pattern matching."""
        absolute = os.path.abspath(path)
        if self.root:
            try:
                absolute = os.path.relpath(absolute, self.root)
            except ValueError:
                pass
        return absolute.replace(os.sep, "/")

    def is_enabled(self, code: str) -> bool:
        selected = _longest_match(code, self.select + self.extend_select)
        ignored = _longest_match(code, self.ignore)
        if selected is None:
            return False
        return ignored is None or len(selected) > len(ignored)

    def ignored_for_path(self, path: str) -> Tuple[str, ...]:
        rel = self.relative(path)
        codes: list = []
        for pattern, pattern_codes in self.per_file_ignores:
            if path_matches(rel, pattern):
                codes.extend(pattern_codes)
        return tuple(codes)

    def is_excluded(self, path: str, rel: Optional[str] = None) -> bool:
        """Like ruff and flake8: a pattern matches the base name or the whole relative path."""
        rel = self.relative(path) if rel is None else rel
        matcher = _exclude_matcher(self.exclude + self.extend_exclude)
        return bool(matcher.match(rel.rsplit("/", 1)[-1]) or matcher.match(rel))

    def is_excluded_with_parents(self, path: str) -> bool:
        """``--force-exclude``: the file, or any directory above it within the project, is excluded."""
        parts = [p for p in self.relative(path).split("/") if p and p != "."]
        return any(self.is_excluded(path, "/".join(parts[: i + 1])) for i in range(len(parts)))

    def is_migration_path(self, path: str) -> bool:
        rel = self.relative(path)
        return any(path_matches(rel, pattern) for pattern in self.migration_paths)


@lru_cache(maxsize=64)
def _exclude_matcher(patterns: Tuple[str, ...]) -> "re.Pattern[str]":
    """All exclude globs as one compiled pattern: discovery asks it about every file."""
    cleaned = []
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("./"):
            pattern = pattern[2:]
        cleaned.append(fnmatch.translate(pattern))
    return re.compile("|".join(cleaned) if cleaned else "(?!)")


@lru_cache(maxsize=64)
def _digest(config: Config) -> str:
    data = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "root"}
    data["run-directory-above"] = run_directory_above(config.root)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:16]


def _longest_match(code: str, selectors: Iterable[str]) -> Optional[str]:
    best = None
    for selector in selectors:
        if selector == "ALL" or code.startswith(selector):
            if best is None or len(selector) > len(best):
                best = "" if selector == "ALL" else selector
    return best


def path_matches(rel_path: str, pattern: str) -> bool:
    """flake8/ruff-style: a glob against the whole relative path, or against any single component."""
    pattern = pattern.rstrip("/").replace(os.sep, "/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if fnmatch.fnmatchcase(rel_path, pattern) or fnmatch.fnmatchcase(rel_path, pattern + "/*"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in rel_path.split("/"))
    return False


_LIST_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "claim-functions",
    "migration-paths", "error",
}
_BOOL_KEYS = {"transaction-pooler", "single-scheduler", "check-tests", "respect-gitignore"}
_STR_KEYS = {"migrate-url-env"}
_CODE_KEYS = {"select", "ignore", "extend-select", "error"}
KNOWN_KEYS = _LIST_KEYS | _BOOL_KEYS | _STR_KEYS | {"per-file-ignores"}


def _known_codes() -> Tuple[str, ...]:
    # Every rule is documented in rules/OG###.md (a test holds the registry to it), so the settings
    # layer learns the codes from the docs without importing the rules that sit above it.
    from .docs import documented_codes

    return documented_codes()


def validate_selector(selector: str, where: str) -> str:
    selector = selector.strip().upper()
    if selector == "ALL":
        return selector
    codes = _known_codes()
    known = any(code.startswith(selector) for code in codes) if codes else re.fullmatch(r"OG\d{0,3}", selector)
    if not selector.startswith("OG") or not known:
        raise ConfigError(f"{where}: unknown rule code or prefix {selector!r} (see `onceguard rules`)")
    return selector


def from_mapping(table: Dict[str, object], root: str = "", where: str = "[tool.onceguard]") -> Config:
    values: Dict[str, object] = {}
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {known})")
        attr = key.replace("-", "_")
        if key in _LIST_KEYS:
            # A bare string is refused, as ruff refuses it: `select = "OG201"` is a list left unwritten, and
            # reading it as one would hide the mistake the day it is `select = "OG201,OG3"`.
            if isinstance(value, str):
                raise ConfigError(f"{where}: {key} must be a list of strings, e.g. {key} = [{value!r}]".replace("'", '"'))
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: {key} must be a list of strings")
            if key in _CODE_KEYS:
                value = [validate_selector(v, f"{where} {key}") for v in value]
            values[attr] = tuple(value)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {key} must be true or false")
            values[attr] = value
        elif key in _STR_KEYS:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: {key} must be a string")
            values[attr] = value
        else:  # per-file-ignores
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: per-file-ignores must be a table of pattern = [codes]")
            pairs = []
            for pattern, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: per-file-ignores.{pattern} must be a list of codes")
                pairs.append((pattern, tuple(validate_selector(c, f"{where} per-file-ignores") for c in codes)))
            values["per_file_ignores"] = tuple(pairs)
    return replace(Config(), root=root, **values)


def _read_toml(pyproject: Path) -> dict:
    """The file as TOML, or a ConfigError in one line that names the file and what is wrong with it."""
    try:
        with open(pyproject, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise ConfigError(f"{pyproject}: cannot read: {error.strerror or error}") from None
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        # PowerShell's `>` and some editors write UTF-16; TOML must be UTF-8.
        utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in raw[:200]
        hint = " (it looks like UTF-16: save it as UTF-8)" if utf16 else ""
        raise ConfigError(f"{pyproject}: not valid UTF-8 (byte {raw[error.start]:#04x} at offset {error.start})"
                          f"{hint}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{pyproject}: invalid TOML: {' '.join(str(error).split())}") from None
    except (ValueError, RecursionError) as error:  # pathological nesting inside the TOML parser
        raise ConfigError(f"{pyproject}: invalid TOML: {type(error).__name__}") from None


def load_file(pyproject: Path) -> Config:
    data = _read_toml(pyproject)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: `tool` must be a table ([tool.onceguard] goes under it)")
    table = tool.get("onceguard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.onceguard] must be a table")
    return from_mapping(table, root=str(pyproject.parent.resolve()), where=f"{pyproject} [tool.onceguard]")


@lru_cache(maxsize=256)
def _nearest_pyproject(directory: str) -> Optional[str]:
    current = Path(directory)
    for candidate in (current, *current.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return str(path)
    return None


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime: float) -> Config:
    return load_file(Path(path))


def config_for(path: str) -> Config:
    """The config of the nearest pyproject.toml at or above ``path`` (a file or directory)."""
    absolute = os.path.abspath(path)
    directory = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    pyproject = _nearest_pyproject(directory)
    if pyproject is None:
        return replace(Config(), root=os.getcwd())
    try:
        mtime = os.stat(pyproject).st_mtime
    except OSError:
        mtime = 0.0
    return _load_cached(pyproject, mtime)


def parse_per_file_ignores(values: Iterable[str], where: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """``PATTERN:CODE[,CODE]`` items, as flake8 and ruff take them on the command line; several may share one
    argument separated by white space, and codes separated by spaces continue the previous pattern."""
    pairs: list = []
    for value in values:
        for token in value.replace("\n", " ").split():
            pattern, colon, codes = token.rpartition(":")
            if colon and pattern:
                pairs.append([pattern, []])
            elif not pairs:
                raise ConfigError(f"{where}: expected PATTERN:CODES, got {token!r}")
            else:
                codes = token
            pairs[-1][1].extend(validate_selector(c, where) for c in codes.split(",") if c.strip())
    return tuple((pattern, tuple(codes)) for pattern, codes in pairs)


_DEFINITION = r"(?:^|\n)[ \t]*(?:async[ \t]+def|def|class)[ \t]+{name}\b|(?:^|\n){name}[ \t]*(?::[^=\n]*)?="


def unresolved_claim_functions(config: Config, search_path: Iterable[str] = ()) -> Dict[str, str]:
    """``claim-functions`` entries that name no function: each with why. An entry resolves when a module
    file for its dotted prefix (below the project root, its ``src/``, or ``search_path``) defines or binds
    its last name; the file is read as text, never imported."""
    roots = [r for r in (config.root, os.path.join(config.root, "src") if config.root else "") if r]
    roots.extend(search_path)
    unresolved: Dict[str, str] = {}
    for entry in config.claim_functions:
        parts = entry.split(".")
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            unresolved[entry] = "not a dotted name; write the module too, e.g. app.leases.claim_period"
            continue
        if not _defines(roots, parts):
            unresolved[entry] = (f"no module {'.'.join(parts[:-1])} defines {parts[-1]}, in the project or in "
                                 "the environment onceguard runs in")
    return unresolved


def _defines(roots: Iterable[str], parts: list) -> bool:
    # ``pkg.mod.func`` or ``pkg.mod.Class.method``: try the longest module prefix first.
    for split in range(len(parts) - 1, 0, -1):
        module, names = parts[:split], parts[split:]
        for root in roots:
            base = os.path.join(root, *module)
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                try:
                    with open(candidate, encoding="utf-8", errors="replace") as handle:
                        text = handle.read()
                except OSError:
                    continue
                if all(re.search(_DEFINITION.format(name=re.escape(name)), text) or
                       re.search(rf"\bimport\b[^\n]*\b{re.escape(name)}\b", text) for name in names):
                    return True
    return False


#: How far above the project root the directory a run started in may be and still hold its deployment files.
_MAX_LEVELS_ABOVE_PROJECT = 2


def run_directory_above(root: str) -> str:
    """The directory the run started in, when the project root lies a few levels below it: deployment files
    there (a Dockerfile at the repository's root building ``app/``) are the project's too, so results depend
    on it (the cache keys on it with the settings)."""
    if not root:
        return ""
    try:
        start = os.getcwd()
    except OSError:
        return ""
    above = os.path.abspath(root)
    for _ in range(_MAX_LEVELS_ABOVE_PROJECT):
        above = os.path.dirname(above)
        if above == start:
            return start
    return ""
