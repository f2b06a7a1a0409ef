"""The examples the metamorphic tests rewrite, and how a rewritten example is checked.

An example is a fixture application (checked as the command line tool checks a project) or a rule-doc
block (checked as one file, the way the doc test checks it; a rewrite that spreads it over several files is
checked as a project). The findings it must give are its ``# expect:`` annotations, read from the rewritten
text, so each one follows its line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from onceguard import docs
from onceguard.config import Config, config_for, from_mapping
from onceguard.engine.check import check_source
from onceguard.engine.discovery import discover
from onceguard.engine.runner import check_files
from onceguard.project.index import clear_cache
from onceguard.rules.registry import all_codes

from .transforms import TRANSFORMATIONS, Project, Transformation

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

Finding = Tuple[str, int, str]  # (posix path in the example, line, code)


@dataclass(frozen=True)
class Example:
    id: str
    project: Project
    #: a rule-doc block: the file it lives in and its ``[tool.onceguard]`` settings
    doc_path: Optional[str] = None
    doc_config: Dict[str, object] = field(default_factory=dict)

    @property
    def is_doc(self) -> bool:
        return self.doc_path is not None


def fixture_examples() -> List[Example]:
    found = []
    for app in sorted(path for path in FIXTURES.iterdir() if path.is_dir()):
        files = []
        for path in sorted(app.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.append((path.relative_to(app).as_posix(), path.read_text(encoding="utf-8")))
        found.append(Example(f"fixture-{app.name}", Project(tuple(files), package_modules=True)))
    return found


def doc_examples() -> List[Example]:
    found = []
    for code in all_codes():
        for block in docs.examples(code):
            if block.kind not in ("flagged", "clean"):
                continue
            found.append(Example(f"{code}-{block.kind}-line{block.line}",
                                 Project(((block.path, block.source),), package_modules=False),
                                 doc_path=block.path, doc_config=dict(block.config)))
    return found


def all_examples() -> List[Example]:
    return fixture_examples() + doc_examples()


def as_project(example: Example, transformation: Optional[Transformation] = None) -> bool:
    """Whether the example is checked as a whole project (fixtures, and doc blocks spread over files)."""
    return not example.is_doc or (transformation is not None and transformation.cross_file)


def expected(example: Example, project: Project, whole_project: bool) -> Set[Finding]:
    found = set()
    for path in project.python_paths:
        for line, code in docs.expected_findings(project.text(path), cross_file=whole_project):
            found.add((path, line, code))
    return found


def findings(example: Example, project: Project, directory: str, whole_project: bool) -> Set[Finding]:
    """Check the project written under ``directory`` in-process: one file as ``check_source`` sees it, or the
    whole tree as ``onceguard check`` walks it."""
    for path, text in project.files:
        full = os.path.join(directory, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as handle:
            handle.write(text)
    try:
        if not whole_project:
            full = os.path.join(directory, example.doc_path)
            config = from_mapping(dict(example.doc_config), root=directory, where=f"{example.id}")
            with open(full, "rb") as handle:
                found = check_source(handle.read(), full, config)
            return {(example.doc_path, d.line, d.code) for d in found}
        if example.is_doc:
            fixed = from_mapping(dict(example.doc_config), root=directory, where=f"{example.id}")

            def config_of(path: str) -> Config:
                return fixed
        else:
            if not os.path.exists(os.path.join(directory, "pyproject.toml")):
                with open(os.path.join(directory, "pyproject.toml"), "w", encoding="utf-8") as handle:
                    handle.write("[tool.onceguard]\n")

            def config_of(path: str) -> Config:
                return config_for(path if os.path.isdir(path) else os.path.dirname(path) or ".")
        problems: list = []
        files = [(path, config_of(path)) for path in discover([directory], config_of, problems)]
        found = check_files(files, jobs=1, cache=None)
        result = set()
        for d in found:
            relative = Path(os.path.relpath(d.path, directory)).as_posix()
            result.add((relative, d.line, d.code))
        return result
    finally:
        clear_cache()


@dataclass(frozen=True)
class Case:
    example: Example
    transformation: Transformation
    rewritten: Project

    @property
    def id(self) -> str:
        return f"{self.example.id}-{self.transformation.name}"


def cases(examples: List[Example]) -> Tuple[List[Case], Dict[str, List[str]]]:
    """Every applicable (example, transformation) pair, and per example the transformations that apply."""
    found = []
    applicable: Dict[str, List[str]] = {}
    for example in examples:
        applicable[example.id] = []
        for transformation in TRANSFORMATIONS:
            rewritten = transformation.apply(example.project)
            if rewritten is None or rewritten == example.project:
                continue
            applicable[example.id].append(transformation.name)
            found.append(Case(example, transformation, rewritten))
    return found, applicable


def describe(project: Project, changed_only_from: Optional[Project] = None) -> str:
    before = dict(changed_only_from.files) if changed_only_from else {}
    parts = []
    for path, text in project.files:
        if path.endswith(".py") and before.get(path) != text:
            parts.append(f"--- {path}\n{text}")
    return "\n".join(parts)
