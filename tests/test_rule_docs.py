"""rules/OG###.md are the rules' documentation and their tests: every block is run."""
from __future__ import annotations

import pytest

from onceguard import docs
from onceguard.registry import all_codes
from onceguard.testing import findings_for_example

CODES = all_codes()
EXAMPLES = [example for code in CODES for example in docs.examples(code)]


def test_every_rule_has_a_complete_doc():
    problems = []
    for code in CODES:
        text = docs.doc_text(code)
        if text is None:
            problems.append(f"{code}: no rules/{code}.md")
            continue
        missing = [s for s in docs.REQUIRED_SECTIONS if s not in docs.sections(text)]
        if missing:
            problems.append(f"{code}: missing sections {missing}")
        kinds = [e.kind for e in docs.examples(code, text)]
        if kinds.count("flagged") < 2 or kinds.count("clean") < 3:
            problems.append(f"{code}: needs at least two flagged and three clean examples, has {kinds}")
        if not docs.summary(text):
            problems.append(f"{code}: no one-line summary under the title")
    assert not problems, "\n".join(problems)


def test_doc_parser_finds_blocks_and_expectations():
    text = (
        "# OG999 x\n\nSummary.\n\n## Flagged\n\n```python flagged path=jobs/a.py config={transaction-pooler = true}\n"
        "x = 1  # expect: OG101, OG105\n```\n\n## Clean\n\n```python clean\ny = 2\n```\n"
    )
    found = docs.examples("OG999", text)
    assert [e.kind for e in found] == ["flagged", "clean"]
    assert found[0].path == "jobs/a.py"
    assert found[0].config == {"transaction-pooler": True}
    assert found[0].expected == {(1, "OG101"), (1, "OG105")}
    assert found[1].expected == set()


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.code_id}-{e.kind}-line{e.line}" for e in EXAMPLES])
def test_example(example, tmp_path):
    found = findings_for_example(example, str(tmp_path))
    if example.kind == "flagged":
        assert example.expected, "a flagged example must mark its findings with # expect:"
        assert any(code == example.code_id for _, code in example.expected), "flagged example must expect its own rule"
    else:
        assert not example.expected, "a clean example must not expect findings"
    assert found == example.expected, f"\n{example.source}\nfound    {sorted(found)}\nexpected {sorted(example.expected)}"
