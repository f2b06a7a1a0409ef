"""Rule documentation: ``rules/OG###.md`` is the doc, and its code blocks are the rule's tests.

A block fenced ```` ```python flagged ```` must produce exactly the findings
marked ``# expect: OG###`` on its lines; ```` ```python clean ```` must produce
none.  The info string may add ``path=some/file.py`` (where the example
lives, for rules that care about migrations or tests) and
``config={transaction-pooler = true}`` (a TOML inline table of
``[tool.onceguard]`` settings).

A block fenced ```` ```python fixed ```` right after a flagged one is what
``--fix --unsafe-fixes`` must make of it (with the ``# expect:`` comments
taken out first): the fixed file must parse and a second fix must change
nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

REQUIRED_SECTIONS = (
    "What it flags", "Why it breaks with two replicas", "Flagged", "Clean", "Use instead", "Fix",
    "Options", "References",
)
_FENCE = re.compile(r"^```python[ \t]+(?P<kind>flagged|clean|fixed)(?P<rest>[^\n]*)\n(?P<code>.*?)^```[ \t]*$",
                    re.MULTILINE | re.DOTALL)
# ``# expect-cli:`` marks what only the CLI can prove (it reads other files of the project; flake8 cannot);
# ``# expect-file:`` what only one file read alone reports (the project around it shows it is safe).
_EXPECT = re.compile(r"#\s*expect(?P<cli>-cli)?(?P<file>-file)?:\s*(?P<codes>OG\d{3}(?:\s*,\s*OG\d{3})*)")


@dataclass(frozen=True)
class Example:
    code_id: str  # the rule whose doc holds it
    kind: str  # "flagged" | "clean"
    source: str
    path: str
    config: Dict[str, object]
    line: int  # where the block starts in the doc, for test names
    #: a flagged block's expected code after ``--fix --unsafe-fixes`` (its ```python fixed block)
    fixed: Optional[str] = None

    @property
    def expected(self) -> Set[Tuple[int, str]]:
        return expected_findings(self.source)


def expected_findings(source: str, cross_file: bool = False) -> Set[Tuple[int, str]]:
    """(line, code) pairs announced by ``# expect: OG101, OG105`` comments (and ``# expect-cli:`` ones
    when the run reads across files, ``# expect-file:`` ones when it reads the one file alone)."""
    expected = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and (cross_file or not match.group("cli")) and not (cross_file and match.group("file")):
            for code in match.group("codes").split(","):
                expected.add((number, code.strip()))
    return expected


def without_expectations(source: str) -> str:
    """The example as a user would have written it: ``# expect:`` comments removed, nothing else."""
    return re.sub(r"[ \t]*#\s*expect(?:-cli|-file)?:\s*OG\d{3}(?:\s*,\s*OG\d{3})*[ \t]*$", "", source,
                  flags=re.MULTILINE)


def docs_directory() -> Optional[Path]:
    """Installed wheels carry the docs as package data; a source checkout has them at the top."""
    packaged = Path(__file__).with_name("rule_docs")
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "rules"
    if checkout.is_dir():
        return checkout
    return None


@lru_cache(maxsize=1)
def documented_codes() -> Tuple[str, ...]:
    """The codes that have a rule doc: every rule's, since each rule must have one."""
    directory = docs_directory()
    if directory is None:
        return ()
    return tuple(sorted(path.stem for path in directory.glob("OG[0-9][0-9][0-9].md")))


def doc_path(code: str) -> Optional[Path]:
    directory = docs_directory()
    if directory is None:
        return None
    path = directory / f"{code}.md"
    return path if path.is_file() else None


def doc_text(code: str) -> Optional[str]:
    path = doc_path(code)
    return path.read_text(encoding="utf-8") if path else None


def sections(text: str) -> Dict[str, str]:
    found: Dict[str, str] = {}
    current = None
    lines: List[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            if current is not None:
                found[current] = "\n".join(lines).strip()
            current = line[3:].strip()
            lines = []
        elif current is not None:
            lines.append(line)
    if current is not None:
        found[current] = "\n".join(lines).strip()
    return found


def summary(text: str) -> str:
    """The one-line summary: the first paragraph after the title."""
    body = text.split("\n", 1)[1] if "\n" in text else ""
    for paragraph in body.strip().split("\n\n"):
        paragraph = paragraph.strip()
        if paragraph and not paragraph.startswith("#"):
            return " ".join(paragraph.split())
    return ""


def _parse_info(rest: str) -> Tuple[str, Dict[str, object]]:
    path = "example.py"
    config: Dict[str, object] = {}
    match = re.search(r"path=(\S+)", rest)
    if match:
        path = match.group(1)
    match = re.search(r"config=(\{.*\})", rest)
    if match:
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        config = tomllib.loads(f"value = {match.group(1)}")["value"]
    return path, config


def examples(code: str, text: Optional[str] = None) -> List[Example]:
    text = doc_text(code) if text is None else text
    if text is None:
        return []
    found = []
    for match in _FENCE.finditer(text):
        path, config = _parse_info(match.group("rest"))
        line = text.count("\n", 0, match.start()) + 1
        kind = match.group("kind")
        if kind == "fixed" and found and found[-1].kind == "flagged" and found[-1].fixed is None:
            found[-1] = replace(found[-1], fixed=match.group("code"))
            continue
        # A fixed block with no flagged block before it stays a block of its own: its test fails.
        found.append(Example(code, kind, match.group("code"), path, config, line))
    return found
