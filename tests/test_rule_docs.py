"""rules/OG###.md are the rules' documentation and their tests: every block is run."""
from __future__ import annotations

import ast

import pytest

from onceguard import docs
from onceguard.config import from_mapping
from onceguard.engine.check import check_source
from onceguard.engine.fixes import fix_source
from onceguard.rules.registry import all_codes
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


def test_doc_parser_pairs_a_fixed_block_with_the_flagged_block_before_it():
    text = (
        "# OG999 x\n\nSummary.\n\n## Fix\n\n```python flagged path=jobs/a.py\nx = hash(k)  # expect: OG999\n```\n\n"
        "```python fixed\nx = zlib.crc32(k)\n```\n\n```python clean\ny = 2\n```\n\n```python fixed\nz = 3\n```\n"
    )
    found = docs.examples("OG999", text)
    assert [e.kind for e in found] == ["flagged", "clean", "fixed"]  # the orphan fixed block is kept, to fail
    assert found[0].fixed == "x = zlib.crc32(k)\n"
    assert found[1].fixed is None
    assert docs.without_expectations(found[0].source) == "x = hash(k)\n"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.code_id}-{e.kind}-line{e.line}" for e in EXAMPLES])
def test_example(example, tmp_path):
    found = findings_for_example(example, str(tmp_path))
    if example.kind == "flagged":
        assert example.expected, "a flagged example must mark its findings with # expect:"
        assert any(code == example.code_id for _, code in example.expected), "flagged example must expect its own rule"
    elif example.kind == "fixed":
        pytest.fail("a ```python fixed block must follow a ```python flagged block")
    else:
        assert not example.expected, "a clean example must not expect findings"
    assert found == example.expected, f"\n{example.source}\nfound    {sorted(found)}\nexpected {sorted(example.expected)}"


FIXED = [example for example in EXAMPLES if example.fixed is not None]


@pytest.mark.parametrize("example", FIXED, ids=[f"{e.code_id}-fixed-line{e.line}" for e in FIXED])
def test_fixed_example(example, tmp_path):
    """``--fix --unsafe-fixes`` turns the flagged block into its fixed block; the result parses, fixes the
    rule's findings, and a second fix changes nothing."""
    source = docs.without_expectations(example.source)
    path = tmp_path / example.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    config = from_mapping(dict(example.config), root=str(tmp_path), where=f"{example.code_id}.md example")
    found = check_source(source.encode("utf-8"), str(path), config)
    result = fix_source(source.encode("utf-8"), found, unsafe=True)
    assert any(d.code == example.code_id for d in result.applied), f"no {example.code_id} fix applied: {found}"
    fixed = result.new_source.decode("utf-8")
    assert fixed == example.fixed, f"\n--- got\n{fixed}\n--- expected\n{example.fixed}"
    ast.parse(fixed)

    path.write_text(fixed, encoding="utf-8")
    after = check_source(fixed.encode("utf-8"), str(path), config)
    fixed_lines = {d.line for d in result.applied if d.code == example.code_id}
    before = sum(1 for d in found if d.code == example.code_id)
    assert sum(1 for d in after if d.code == example.code_id) == before - len(fixed_lines)
    again = fix_source(fixed.encode("utf-8"), after, unsafe=True)
    assert again.new_source == fixed.encode("utf-8"), "a second --fix changed the file again"


def test_the_documented_codes_are_exactly_the_registered_rules():
    # config validates `select`/`ignore` against the docs, so a rule without a doc (or a doc without a
    # rule) would be rejected (or accepted) wrongly.
    from onceguard.docs import documented_codes

    assert documented_codes() == CODES
