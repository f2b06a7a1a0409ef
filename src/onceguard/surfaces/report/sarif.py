"""SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

``tool.driver.rules`` lists every rule (and the engine's OG000/OG001), with the rule doc as help
text; each result carries its location and, when the finding has a fix that the fixer can compute
for the file on disk, the fix as a text replacement.  A finding that depends on other places (the
start-up code that reaches it, a job's definition in another module) lists them as
``relatedLocations`` and, with the finding last, as the steps of one ``codeFlows`` thread flow. Regions are 1-based; columns are counted as
the engine counts them (the ``ast`` offset + 1, equal to UTF-16 units on ASCII lines).
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote

from ... import __version__
from ...model import Diagnostic
from . import ReportOptions, is_error

FORMAT = "sarif"

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"


def documentation_url() -> Optional[str]:
    """The ``Documentation`` URL of ``[project.urls]``, as installed metadata carries it."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        entries = metadata("onceguard").get_all("Project-URL") or []
    except (ImportError, PackageNotFoundError):
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return url.strip().rstrip("/")
    return None


def rule_doc_url(code: str) -> Optional[str]:
    base = documentation_url()
    return f"{base}/{code}.md" if base else None


#: How often a rule's findings are right, as GitHub code scanning reads ``properties.precision``
#: (very-high, high, medium, low): measured on labelled real code (the README's accuracy section). Rules
#: that follow a value through the project (jobs, lost updates, process state) are wrong more often than
#: rules that read one call.
PRECISION_BY_PREFIX = (
    ("OG000", "very-high"), ("OG001", "very-high"),
    ("OG10", "very-high"), ("OG50", "very-high"),
    ("OG40", "high"), ("OG60", "high"), ("OG61", "high"), ("OG20", "high"),
    ("OG30", "medium"),
)


def rule_precision(code: str) -> str:
    return next((value for prefix, value in PRECISION_BY_PREFIX if code.startswith(prefix)), "medium")


def _descriptor(code: str, name: str, summary: str, with_doc: bool) -> dict:
    from ...docs import doc_text, sections

    descriptor: dict = {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "defaultConfiguration": {"level": "error" if code in ("OG000", "OG001") else "warning"},
        "properties": {"precision": rule_precision(code), "tags": ["replicas", "concurrency"]},
    }
    text = doc_text(code) if with_doc else None
    if text:
        what = " ".join(sections(text).get("What it flags", "").split())
        descriptor["fullDescription"] = {"text": what or summary}
        descriptor["help"] = {"text": text, "markdown": text}
    else:
        descriptor["fullDescription"] = {"text": summary}
        descriptor["help"] = {"text": summary, "markdown": f"**{code} {name}**: {summary}"}
    url = rule_doc_url(code) if with_doc else None
    if url:
        descriptor["helpUri"] = url
    return descriptor


def rule_descriptors() -> List[dict]:
    from ...rules.registry import ENGINE_CODES, rule_classes

    descriptors = [_descriptor(code, name, summary, False) for code, (name, summary) in sorted(ENGINE_CODES.items())]
    descriptors.extend(_descriptor(cls.code, cls.name, cls.summary, True) for cls in rule_classes())
    return descriptors


def artifact_location(path: str) -> dict:
    """Relative to the current directory (``%SRCROOT%``) when below it, else an absolute file URI."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive on Windows
        relative = ""
    if relative and not relative.startswith(".."):
        # File names that are not valid UTF-8 are quoted from their raw bytes.
        return {"uri": quote(os.fsencode(relative.replace(os.sep, "/"))), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def _region(d: Diagnostic) -> dict:
    region = {"startLine": max(d.line, 1), "startColumn": max(d.column, 1)}
    end_line = max(d.end_line, region["startLine"])
    end_column = max(d.end_column, 1)
    if end_line == region["startLine"]:
        end_column = max(end_column, region["startColumn"])
    region["endLine"] = end_line
    region["endColumn"] = end_column
    return region


def _place(path: str, line: int, column: int, message: str, number: Optional[int] = None) -> dict:
    """A location elsewhere (a related place, a step of a flow): the start of the line's span only."""
    place: dict = {"physicalLocation": {
        "artifactLocation": artifact_location(path),
        "region": {"startLine": max(line, 1), "startColumn": max(column, 1)},
    }, "message": {"text": message}}
    if number is not None:
        place["id"] = number
    return place


def _line_col(text: str, offset: int) -> Tuple[int, int]:
    """1-based line and UTF-16 column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    column = len(text[start:offset].encode("utf-16-le")) // 2 + 1
    return line, column


def _trimmed(old: str, new: str, start: int, stop: int, new_start: int, new_stop: int) -> dict:
    """One replacement for old[start:stop] -> new[new_start:new_stop], without their common ends."""
    while start < stop and new_start < new_stop and old[start] == new[new_start]:
        start, new_start = start + 1, new_start + 1
    while start < stop and new_start < new_stop and old[stop - 1] == new[new_stop - 1]:
        stop, new_stop = stop - 1, new_stop - 1
    start_line, start_column = _line_col(old, start)
    end_line, end_column = _line_col(old, stop)
    return {
        "deletedRegion": {
            "startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column,
        },
        "insertedContent": {"text": new[new_start:new_stop]},
    }


def text_replacements(old: str, new: str) -> List[dict]:
    """SARIF replacements turning ``old`` into ``new``: one per changed run of lines, in file order."""
    from difflib import SequenceMatcher

    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    old_offsets = [0]
    for line in old_lines:
        old_offsets.append(old_offsets[-1] + len(line))
    new_offsets = [0]
    for line in new_lines:
        new_offsets.append(new_offsets[-1] + len(line))
    replacements = []
    matcher = SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            replacements.append(_trimmed(old, new, old_offsets[i1], old_offsets[i2], new_offsets[j1], new_offsets[j2]))
    return replacements


def _replacements(d: Diagnostic, sources: Dict[str, Optional[bytes]]) -> Optional[List[dict]]:
    """The fix as SARIF replacements of the file on disk, or None when the fixer cannot make it."""
    try:
        from ...engine.check import decode
        from ...engine.fixes import fix_source
    except Exception:  # noqa: BLE001
        return None
    source = _source_of(d.path, sources)
    if source is None:
        return None
    try:
        result = fix_source(source, [d], unsafe=d.fix is not None and d.fix.applicability != "safe")
        if not getattr(result, "applied", None) or result.new_source == source:
            return None
        return text_replacements(decode(source), decode(result.new_source)) or None
    except Exception:  # noqa: BLE001 - a fixer failure must not lose the report
        return None


def _source_of(path: str, sources: Dict[str, Optional[bytes]]) -> Optional[bytes]:
    if path not in sources:
        try:
            with open(path, "rb") as handle:
                sources[path] = handle.read()
        except OSError:
            sources[path] = None
    return sources[path]


@lru_cache(maxsize=64)
def _lines(source: bytes) -> Tuple[str, ...]:
    """A file's lines, split once however many findings it has (bytes keep their hash once computed)."""
    return tuple(source.decode("utf-8", "replace").splitlines())


def fingerprint(d: Diagnostic, sources: Dict[str, Optional[bytes]], seen: Dict[str, int]) -> str:
    """Stable across edits elsewhere in the file: the rule, the file and the text of the flagged line (its
    whitespace ignored), and which occurrence of that text it is — not the line number, so a finding moved
    down by an added import is the same alert to code scanning."""
    source = _source_of(d.path, sources)
    line_text = ""
    if source is not None:
        lines = _lines(source)
        if 0 < d.line <= len(lines):
            line_text = "".join(lines[d.line - 1].split())
    key = f"{d.code}\0{d.path}\0{line_text}"
    seen[key] = seen.get(key, 0) + 1
    return hashlib.sha256(f"{key}\0{seen[key]}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _result(d: Diagnostic, options: ReportOptions, index: Dict[str, int], sources: Dict[str, Optional[bytes]],
            seen: Optional[Dict[str, int]] = None) -> dict:
    text = d.message if not d.suggestion else f"{d.message} {d.suggestion}"
    location = artifact_location(d.path)
    result: dict = {
        "ruleId": d.code,
        "level": "error" if is_error(d, options) else "warning",
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": location, "region": _region(d)}}],
        "partialFingerprints": {"onceguardFindingHash/v1": fingerprint(d, sources, {} if seen is None else seen)},
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.related:
        result["relatedLocations"] = [
            _place(place.path, place.line, place.column, place.message, number)
            for number, place in enumerate(d.related, start=1)
        ]
        # The path from the entry point to the finding, step by step, as code-scanning viewers show a flow.
        steps = [_place(place.path, place.line, place.column, place.message) for place in d.related]
        steps.append({"physicalLocation": result["locations"][0]["physicalLocation"], "message": {"text": d.message}})
        result["codeFlows"] = [{"threadFlows": [{"locations": [
            {"location": step, "executionOrder": order} for order, step in enumerate(steps, start=1)
        ]}]}]
    if d.fix is not None:
        replacements = _replacements(d, sources)
        if replacements:
            result["fixes"] = [{
                "description": {"text": d.fix.description},
                "artifactChanges": [{"artifactLocation": location, "replacements": replacements}],
            }]
        else:
            # SARIF requires a fix to carry its replacements; without them, say what the fix would do.
            result["properties"] = {"fix": d.fix.to_json()}
    return result


def render(diagnostics: List[Diagnostic], options: ReportOptions) -> str:
    rules = rule_descriptors()
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    sources: Dict[str, Optional[bytes]] = {}
    seen: Dict[str, int] = {}
    driver: dict = {
        "name": "onceguard",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": rules,
    }
    base = documentation_url()
    if base:
        driver["informationUri"] = base
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
        "columnKind": "utf16CodeUnits",
        "results": [_result(d, options, index, sources, seen) for d in diagnostics],
    }
    if options.statistics is not None:
        run["properties"] = {"statistics": options.statistics}
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"
