"""Run a rule-doc example the way a user's file would be checked (used by the test suite)."""
from __future__ import annotations

import os
import tempfile
from typing import Set, Tuple

from .config import from_mapping
from .docs import Example
from .engine import check_source


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
