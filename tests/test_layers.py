"""The package layout is the pipeline: a module imports only from its own layer or the ones below."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "onceguard"

#: top to bottom; the bottom entries are leaf modules and data packages
LAYERS = [
    {"surfaces", "testing", "__main__"},
    {"engine"},
    {"rules"},
    {"project"},
    {"analysis"},
    {"knowledge", "config", "docs", "model", "noqa", "ignores", "__init__"},
]
STANDALONE = {"guards"}  # the runtime library: imports nothing of the linter


def _layer_of(part: str) -> int:
    for index, names in enumerate(LAYERS):
        if part in names:
            return index
    raise AssertionError(f"onceguard.{part} is on no layer: add it to LAYERS")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """(line, absolute module) of every onceguard import in the file, relative ones resolved."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").is_file()
                yield node.lineno, f"{module}.{alias.name}" if module == "onceguard" and submodule else module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path):
    here = _top(_module_name(path))
    upward = []
    for line, module in _imports(path):
        if not module.startswith("onceguard"):
            continue
        there = _top(module)
        if here in STANDALONE or there in STANDALONE:
            if here != there:
                upward.append(f"line {line}: {module} (guards stand alone)")
            continue
        if _layer_of(there) < _layer_of(here):
            upward.append(f"line {line}: {module}")
    assert not upward, f"{path.relative_to(PACKAGE)} imports upward: " + "; ".join(upward)


def test_every_top_level_module_is_on_a_layer():
    for path in PACKAGE.iterdir():
        name = path.stem if path.suffix == ".py" else path.name
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
            if name not in STANDALONE:
                _layer_of(name)
