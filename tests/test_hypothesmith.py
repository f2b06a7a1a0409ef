"""Generated programs never make the engine raise or report an internal error.

hypothesmith writes syntactically valid (and, from the grammar, often odd) Python. Every rule is
enabled and the prefilter is made to pass by a comment holding every trigger word, so each program
really goes through the parse, the facts traversal and all the rules, as the language server does.
"""
from __future__ import annotations

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from onceguard.config import Config
from onceguard.analysis.context import FileContext
from onceguard.engine.check import check_source, enabled_rules, trigger_words

RULES = enabled_rules(Config(select=("OG",)))


def _words(triggers) -> list:
    words = []
    for trigger in triggers:
        words.extend([trigger] if isinstance(trigger, bytes) else trigger)
    return sorted({w.decode("ascii", "replace").replace("\n", " ") for w in words})


#: Appended as a comment; "noqa"-free so nothing is suppressed.
TRIGGER_COMMENT = "\n# " + " ".join(_words(trigger_words(RULES))) + "\n"

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


class _Calls:
    """How many rule checks ran: a run that silently skips the rules must not pass for a survived one."""

    count = 0


def _counted(check):
    def counting(facts):
        _Calls.count += 1
        return check(facts)

    return counting


for _rule in RULES:
    _rule.check = _counted(_rule.check)


#: Test code is not reported by default; the generated programs are checked as a project that asks for it, so
#: that the rules that look at test files run on them too.
CONFIG = Config(check_tests=True)

_APPLICABLE = {path: sum(1 for rule in RULES if rule.applies_to(FileContext(path, CONFIG)))
               for path in ("app/jobs.py", "migrations/env.py", "tests/test_jobs.py")}


def _check(source: str) -> None:
    for path in ("app/jobs.py", "migrations/env.py", "tests/test_jobs.py"):
        data = (source + TRIGGER_COMMENT).encode("utf-8", "surrogatepass")
        _Calls.count = 0
        found = check_source(data, path, CONFIG, RULES)
        internal = [d for d in found if d.code == "OG001"]
        assert not internal, internal
        if not any(d.code == "OG000" for d in found):
            # Every rule that applies to this kind of file ran: the trigger comment got them all past the prefilter.
            assert _Calls.count == _APPLICABLE[path] > 0, (path, _Calls.count, _APPLICABLE[path])


def test_rules_are_present():
    assert RULES and len(TRIGGER_COMMENT) > 3


def test_the_same_path_finds_hazards():
    """What the generated programs go through does report a hazard when there is one."""
    from samples import HAZARD, UNSTABLE_KEY

    _check(UNSTABLE_KEY)
    found = {d.code for d in check_source((UNSTABLE_KEY + TRIGGER_COMMENT).encode(), "app/jobs.py", Config(), RULES)}
    assert "OG104" in found
    found = {d.code for d in check_source((HAZARD + TRIGGER_COMMENT).encode(), "app/jobs.py", Config(), RULES)}
    assert "OG101" in found


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@SETTINGS
@given(hypothesmith.from_grammar())
def test_engine_survives_programs_from_the_grammar(source):
    _check(source)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@SETTINGS
@given(hypothesmith.from_node())
def test_engine_survives_programs_from_libcst_nodes(source):
    _check(source)


_NODE_KINDS = tuple(kind for kind in vars(__import__("ast")).values()
                    if isinstance(kind, type) and issubclass(kind, __import__("ast").AST))


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@SETTINGS
@given(hypothesmith.from_node())
def test_a_functions_own_nodes_match_a_walk_on_generated_programs(source):
    """Reading a function's own nodes (of some kinds, or all of them) off the module's pre-order list agrees
    with walking its tree, on whatever shapes the generator writes (a wrong end of a function's run, or of a
    nested scope's, would add or drop nodes)."""
    import ast

    from onceguard.analysis.facts import ModuleFacts, walk_no_nested_functions

    tree = ast.parse(source)
    facts = ModuleFacts(tree, FileContext("app/jobs.py", CONFIG), source.splitlines())
    for function in facts.functions:
        walked = [node for node in walk_no_nested_functions(function)
                  if not isinstance(node, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop))]
        assert facts.own_nodes(function, _NODE_KINDS) == walked
        assert facts.own_subtree(function) == walked


_SHARED = tuple(getattr(__import__("ast"), name) for name in ("expr_context", "operator", "unaryop", "boolop", "cmpop"))


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@SETTINGS
@given(hypothesmith.from_node())
def test_the_fast_walks_visit_what_the_stdlib_walk_visits(source):
    """``walk`` is ``ast.walk`` node for node and in order; the module walk that builds the facts reaches
    every node but the shared operators and contexts, each once (the child fields are read from a table
    built from each node kind's declared fields, which must leave none out)."""
    import ast

    from onceguard.analysis.facts import ModuleFacts, walk

    tree = ast.parse(source)
    expected = list(ast.walk(tree))
    assert [id(node) for node in walk(tree)] == [id(node) for node in expected]
    facts = ModuleFacts(tree, FileContext("app/jobs.py", CONFIG), source.splitlines())
    listed = [id(node) for node in facts.nodes]
    assert len(listed) == len(set(listed))
    assert set(listed) == {id(node) for node in expected if not isinstance(node, _SHARED)}
