"""Callers across the project: a file is parsed only when its text can spell a call to the def, and every
way of spelling one (absolute, relative, ``from . import``, through the class) is still found."""
from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest

from onceguard.project import index as project
from onceguard.config import from_mapping
from onceguard.analysis.context import FileContext
from onceguard.analysis.facts import ModuleFacts
from onceguard.project.summaries import callers


@pytest.fixture(autouse=True)
def fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


def write(tmp_path: Path, rel: str, source: str) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def facts_of(path: Path, root: Path) -> ModuleFacts:
    source = path.read_text(encoding="utf-8")
    config = from_mapping({}, root=str(root))
    return ModuleFacts(ast.parse(source), FileContext(str(path), config, cross_file=True), source.splitlines())


def sites(function_name: str, path: Path, root: Path):
    facts = facts_of(path, root)
    function = facts.functions_by_name[function_name][0]
    return sorted((other.context.rel_path, call.lineno) for call, other in callers(function, facts))


def parsed(root: Path) -> set:
    return {os.path.relpath(path, root) for path in project._modules}


def test_a_common_name_defined_elsewhere_is_not_parsed_and_real_callers_are_found(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        def setup():
            pass
    """)
    write(tmp_path, "app/wiring.py", """\
        from app.store import setup

        setup()
    """)
    write(tmp_path, "app/relative.py", """\
        from .store import setup

        setup()
    """)
    write(tmp_path, "app/other.py", """\
        from app.plugins import setup

        setup()
    """)
    assert sites("setup", store, tmp_path) == [("app/relative.py", 3), ("app/wiring.py", 3)]
    assert "app/other.py" not in parsed(tmp_path)  # says `setup`, never the module it is defined in


def test_a_call_after_from_dot_import_in_a_package_init_is_found(tmp_path):
    init = write(tmp_path, "app/__init__.py", """\
        def make_store():
            pass
    """)
    write(tmp_path, "app/boot.py", """\
        from . import make_store

        make_store()
    """)
    write(tmp_path, "app/sub/__init__.py", "")
    write(tmp_path, "app/sub/deep.py", """\
        from .. import make_store

        make_store()
    """)
    assert sites("make_store", init, tmp_path) == [("app/boot.py", 3), ("app/sub/deep.py", 3)]


def test_a_method_is_called_through_its_class_and_a_file_without_the_class_is_not_parsed(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        class Store:
            @classmethod
            def reset(cls):
                pass
    """)
    write(tmp_path, "app/wiring.py", """\
        from app import store

        store.Store.reset()
    """)
    write(tmp_path, "app/cache.py", """\
        from app import store

        def clear(cache):
            cache.reset()
    """)
    assert sites("reset", store, tmp_path) == [("app/wiring.py", 3)]
    assert "app/cache.py" not in parsed(tmp_path)


def test_test_files_are_never_parsed_for_callers(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        def setup():
            pass
    """)
    write(tmp_path, "tests/test_store.py", """\
        from app.store import setup

        setup()
    """)
    assert sites("setup", store, tmp_path) == []
    assert "tests/test_store.py" not in parsed(tmp_path)


def test_a_call_split_over_lines_is_found_and_a_mere_mention_is_not_parsed(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    store = write(tmp_path, "app/store.py", """\
        def setup():
            pass
    """)
    write(tmp_path, "app/wiring.py", """\
        from app import store

        (store.setup  # the store's own
            )(
        )
    """)
    write(tmp_path, "app/registry.py", """\
        from app import store

        HOOKS = [store.setup, "setup"]
    """)
    assert sites("setup", store, tmp_path) == [("app/wiring.py", 3)]
    assert "app/registry.py" not in parsed(tmp_path)
