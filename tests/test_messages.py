"""A finding's message says the hazard in one sentence; the why and the remedy are in its help, and the help
names the same guard call, with the same arguments, as the fix.

Checked over every finding the fixture apps and the rules' flagged examples produce, so a new rule or a new
shape of an old one is held to it as soon as it has an example.
"""
from __future__ import annotations

import json
import os
import re
from typing import List

import pytest

from onceguard import docs, guards
from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.rules.registry import all_codes

#: No message may pass this, whatever the names in it; most stay well under it.
LONGEST = 200
#: A code span is quoted code: its dots and capitals are not sentence breaks.
_CODE = re.compile(r"`[^`]*`")
#: The end of one sentence and the start of another: a stop, then a capital or a quoted name.
_SENTENCE_BREAK = re.compile(r"[.;!?]\s+[A-Z`]")
_GUARD_NAMES = sorted((name for name in guards.__all__ if name[:1].islower()), key=len, reverse=True)
_GUARD_CALL_START = re.compile(r"(?:await\s+)?\b(?:%s)\(" % "|".join(map(re.escape, _GUARD_NAMES)))


def _fixture_findings(onceguard) -> List[dict]:
    result = onceguard("check", "fixtures", "--format", "json", "--no-cache")
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def _example_findings(tmp_path) -> List[dict]:
    found = []
    for code in all_codes():
        for number, example in enumerate(e for e in docs.examples(code) if e.kind == "flagged"):
            directory = tmp_path / f"{code}-{number}"
            path = os.path.join(str(directory), example.path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(example.source)
            config = from_mapping(dict(example.config), root=str(directory), where=f"{code}.md example")
            for finding in check_source(example.source.encode("utf-8"), path, config):
                shown = finding.to_json()
                shown["path"] = f"rules/{code}.md (flagged example at line {example.line})"
                found.append(shown)
    return found


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> List[dict]:
    from conftest import run, script

    fixture = _fixture_findings(lambda *args: run(script("onceguard") + list(args)))
    examples = _example_findings(tmp_path_factory.mktemp("examples"))
    assert len({f["code"] for f in fixture + examples}) == len(all_codes()), "every rule has findings to check"
    return fixture + examples


def sentence_problem(message: str) -> str:
    """Why ``message`` is not one sentence ending in one period, or "" when it is."""
    if not message.endswith(".") or message.endswith(".."):
        return "does not end with one period"
    prose = _CODE.sub("`code`", message[:-1])
    match = _SENTENCE_BREAK.search(prose)
    if match:
        return f"a second sentence begins at {prose[match.start():match.start() + 30]!r}"
    return ""


def guard_calls(text: str) -> List[str]:
    """Each call of an ``onceguard.guards`` function written in ``text``'s code spans, arguments and all."""
    calls = []
    for span in re.findall(r"`([^`]+)`", text):
        for start in _GUARD_CALL_START.finditer(span):
            depth, end = 0, None
            for index in range(start.end() - 1, len(span)):
                depth += {"(": 1, ")": -1}.get(span[index], 0)
                if depth == 0:
                    end = index + 1
                    break
            calls.append(span[start.start():end] if end else span[start.start():])
    return calls


def test_the_checks_catch_what_they_are_meant_to():
    assert sentence_problem("`job` runs in every replica.") == ""
    assert sentence_problem("`a.B` waits (`UPDATE ... WHERE x`) on line 3.") == ""
    assert sentence_problem("`job` runs in every replica. It sends mail.") != ""
    assert sentence_problem("`job` runs in every replica. `mail.send()` acts outside.") != ""
    assert sentence_problem("`job` runs in every replica") != ""
    assert guard_calls('begin with `if not await aclaim_period("a.b", "day", tz="UTC"): return`') == [
        'await aclaim_period("a.b", "day", tz="UTC")']
    assert guard_calls("use `run_exclusive(key, ttl, work)` or `r.set(k, v, nx=True)`") == [
        "run_exclusive(key, ttl, work)"]


def test_every_message_is_one_sentence_within_the_bound(findings):
    problems = []
    for finding in findings:
        message = finding["message"]
        where = f'{finding["code"]} {finding["path"]}:{finding["line"]}'
        problem = sentence_problem(message)
        if problem:
            problems.append(f"{where}: {problem}: {message}")
        if len(message) > LONGEST:
            problems.append(f"{where}: {len(message)} characters: {message}")
    assert not problems, "\n".join(problems)


def test_every_message_has_a_help_that_says_more(findings):
    for finding in findings:
        assert finding["suggestion"], finding
        assert finding["suggestion"][:1].isupper(), finding["suggestion"]
        assert finding["message"] not in finding["suggestion"], finding


def test_the_help_names_the_guard_call_the_fix_writes(findings):
    checked, problems = 0, []
    for finding in findings:
        if not finding["fix"]:
            continue
        for call in guard_calls(finding["fix"]["description"]):
            checked += 1
            if call not in finding["suggestion"]:
                problems.append(f'{finding["code"]} {finding["path"]}:{finding["line"]}: the fix writes `{call}`, '
                                f'the help says: {finding["suggestion"]}')
    assert checked, "some fix writes a guard call"
    assert not problems, "\n".join(problems)
