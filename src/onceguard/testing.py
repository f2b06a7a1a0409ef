"""Run a rule-doc example the way a user's file would be checked (used by the test suite)."""
from __future__ import annotations

import os
import tempfile
from typing import Set, Tuple

from .config import from_mapping
from .docs import Example
from .engine.check import check_source


def findings_for_example(example: Example, directory: str = "") -> Set[Tuple[int, str]]:
    own_directory = None
    if not directory:
        own_directory = tempfile.TemporaryDirectory()
        directory = own_directory.name
    try:
        path = os.path.join(directory, example.path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(example.source)
        config = from_mapping(dict(example.config), root=directory, where=f"{example.code_id}.md example")
        found = check_source(example.source.encode("utf-8"), path, config)
        return {(d.line, d.code) for d in found}
    finally:
        if own_directory is not None:
            own_directory.cleanup()


def write_source(directory, path: str, source: str) -> str:
    """Write ``source`` (dedented) at ``directory/path``, creating its folders; return the full path."""
    import os
    import textwrap

    full = os.path.join(str(directory), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(source))
    return full


def findings_in_written_file(directory, path: str, source: str, code: str, cross_file: bool = False):
    """Write ``source`` at ``directory/path``, check it with the project rooted at ``directory`` and return
    the findings of ``code``."""
    from .config import from_mapping
    from .engine.check import check_source

    full = write_source(directory, path, source)
    with open(full, "rb") as handle:
        data = handle.read()
    found = check_source(data, full, from_mapping({}, root=str(directory)), cross_file=cross_file)
    return [d for d in found if d.code == code]
