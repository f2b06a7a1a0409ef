"""The engine's own pieces: import resolution, SQL reading, handle bindings, prefilter, config."""
from __future__ import annotations

import ast
import os
import pathlib
import textwrap

import pytest

from onceguard.analysis import sql
from onceguard.config import Config, ConfigError, from_mapping
from onceguard.analysis.context import FileContext
from onceguard.engine.check import check_source, enabled_rules, passes_prefilter, trigger_words
from onceguard.analysis.executed_sql import executed_sql
from onceguard.analysis.facts import ModuleFacts
from onceguard.analysis.handles import Handles


def facts_of(source: str, path: str = "app/jobs.py") -> ModuleFacts:
    return ModuleFacts(ast.parse(textwrap.dedent(source)), FileContext(path, Config()))


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import apscheduler.schedulers.background as bg\nbg.BackgroundScheduler()",
         "apscheduler.schedulers.background.BackgroundScheduler"),
        ("from redis import Redis\nRedis.from_url(u).lock('x')", "redis.Redis.from_url.lock"),
        ("import schedule\nschedule.every(5).minutes.do(job)", "schedule.every.minutes.do"),
        ("from schedule import every as e\ne(10).seconds.do(job)", "schedule.every.seconds.do"),
        ("s = make()\ns.add_job(f)", "s.add_job"),
        ("import sqlalchemy as sa\nsa.text('x')", "sqlalchemy.text"),
    ],
)
def test_qualified_names_follow_imports(source, expected):
    facts = facts_of(source)
    outermost = next(c for c in facts.calls if isinstance(getattr(c, "_og_parent", None), ast.Expr)
                     and c.lineno == facts.tree.body[-1].lineno)
    assert facts.callee(outermost) == expected


def test_relative_imports_resolve_against_the_package(tmp_path):
    package = tmp_path / "shop" / "jobs"
    package.mkdir(parents=True)
    (tmp_path / "shop" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    path = package / "nightly.py"
    facts = ModuleFacts(ast.parse("from ..db import engine\nengine.connect()"), FileContext(str(path), Config()))
    assert facts.callee(facts.calls[0]) == "shop.db.engine.connect"


@pytest.mark.parametrize(
    "text, functions",
    [
        ("SELECT pg_try_advisory_lock(%s)", {"pg_try_advisory_lock"}),
        ("SELECT pg_advisory_unlock(%(key)s)", {"pg_advisory_unlock"}),
        ("select pg_try_advisory_xact_lock(:k) AS ok", {"pg_try_advisory_xact_lock"}),
        ("SELECT pg_advisory_lock(?)", {"pg_advisory_lock"}),
        ("SELECT pg_advisory_lock($1, $2)", {"pg_advisory_lock"}),
        ("SELECT 'pg_advisory_lock(1)'", set()),  # a string literal, not a call
        ("SELECT x::int FROM t WHERE a = :a", set()),
        ("SELECT pg_try_advisory_lock($1) FROM jobs WHERE", {"pg_try_advisory_lock"}),  # a fragment: scanner
    ],
)
def test_sql_functions_are_read_by_the_postgres_parser(text, functions):
    found = sql.analyse(text)
    assert {a.name for a in found.advisory} == functions


def test_sql_statement_facts():
    claim = sql.analyse("UPDATE jobs SET owner = %s WHERE id = (SELECT id FROM jobs WHERE state = 'ready' "
                        "ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id")
    assert claim.parsed and claim.skip_locked and claim.returning and claim.has("UpdateStmt")
    assert sql.is_ddl(sql.analyse("CREATE TABLE IF NOT EXISTS t (id int)"))
    assert sql.is_ddl(sql.analyse("create table {} (id int"))  # a template fragment, scanned
    assert not sql.is_ddl(sql.analyse("SELECT 1"))


def test_sql_text_from_literals_fstrings_concatenation_and_names():
    facts = facts_of(
        """
        from sqlalchemy import text
        LOCK = "SELECT pg_try_advisory_lock(:k)"
        def job(conn, key):
            conn.execute(text(LOCK), {"k": 1})
            conn.execute(f"SELECT pg_advisory_unlock({key})")
            conn.execute("SELECT " + "pg_advisory_lock(1)")
        """
    )
    found = [(e.method, sorted(a.name for a in e.sql.advisory), len(e.holes)) for e in executed_sql(facts)]
    assert found == [
        ("execute", ["pg_try_advisory_lock"], 0),
        ("execute", ["pg_advisory_unlock"], 1),
        ("execute", ["pg_advisory_lock"], 0),
    ]


@pytest.mark.parametrize(
    "source, kind",
    [
        ("import asyncpg\nasync def f():\n    pool = await asyncpg.create_pool()\n    pool", "pooled"),
        ("from sqlalchemy import create_engine\ne = create_engine('x')\ndef f():\n    with e.connect() as c:\n        c", "pinned"),
        ("from sqlalchemy.orm import sessionmaker\nS = sessionmaker()\ndef f():\n    s = S()\n    s", "pooled"),
        ("from sqlalchemy.orm import Session\ndef f(s: Session):\n    s", "pooled"),
        ("import asyncpg\ndef f(c: 'asyncpg.Connection'):\n    c", "pinned"),
        ("from psycopg_pool import ConnectionPool\nclass W:\n    def __init__(self):\n        self.pool = ConnectionPool()\n"
         "    def go(self):\n        self.pool", "pooled"),
        ("from flask_sqlalchemy import SQLAlchemy\ndb = SQLAlchemy()\ndef f():\n    db.session", "pooled"),
        ("def f(pool):\n    pool", None),  # a name alone proves nothing
        ("import asyncpg, psycopg\ndef f(flag):\n    c = psycopg.connect() if flag else None\n    c", None),
    ],
)
def test_handle_kinds(source, kind):
    facts = facts_of(source)
    last = facts.tree.body[-1]
    node = last
    while not isinstance(node, ast.Expr):
        node = node.body[-1]
    handle = Handles.of_module(facts).of(node.value)
    assert (handle.kind if handle else None) == kind


def test_prefilter_skips_files_without_trigger_words():
    words = trigger_words(enabled_rules(Config()))
    assert words
    plain = b"def total(prices, rate):\n    return sum(prices) * rate\n"
    assert not passes_prefilter(plain, words)
    assert check_source(plain, "x.py", Config()) == []
    # ...and lets through a file that has them: a prefilter that skips everything fails here.
    from onceguard.engine.check import applicable_rules
    from samples import UNSTABLE_KEY

    hazard = UNSTABLE_KEY.encode()
    assert passes_prefilter(hazard, words)
    assert "OG104" in {r.code for r in applicable_rules(hazard, enabled_rules(Config()))}
    assert "OG104" in {d.code for d in check_source(hazard, "x.py", Config())}


def test_prefilter_finds_trigger_words_that_overlap_or_nest():
    from onceguard.engine.check import _TriggerIndex

    # One rule's anchor ends where the other's begins ("set_" / "_state"), a third sits inside a longer one.
    index = _TriggerIndex(((b"set_",), (b"_state",), ((b"objects", b"save("),), (b".objects",)))
    assert index.matching(b"obj.set_state(1)") == {0, 1}
    assert index.matching(b"Model.objects.get(); m.save()") == {2, 3}
    assert index.matching(b"Model.objects.get()") == {3}
    assert index.matching(b"nothing here") == set()
    assert _TriggerIndex(()).matching(b"anything") == set()


def test_project_file_bytes_are_read_whole_and_only_from_regular_files(tmp_path):
    from onceguard.project.index import read_bytes

    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 50_000)
    assert read_bytes(str(big)) == b"x = 1\n" * 50_000
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)  # nobody writes to it: a blocking read would never return
    assert read_bytes(str(fifo)) == b""
    os.symlink("/dev/zero", tmp_path / "zero.py")
    assert read_bytes(str(tmp_path / "zero.py")) == b""
    assert read_bytes(str(tmp_path / "missing.py")) == b""


def test_a_projects_text_is_kept_between_searches_and_gives_way_to_the_next_project(tmp_path, monkeypatch):
    from onceguard.project import index, project_text

    index.clear_cache()
    monkeypatch.setattr(project_text, "TEXT_BUDGET", 1000)
    first, second = tmp_path / "first", tmp_path / "second"
    for project in (first, second):
        project.mkdir()
        for number in range(3):
            (project / f"m{number}.py").write_bytes(b"# " + b"x" * 198 + b"\n")
    first_files = index.project_files(str(first))
    second_files = index.project_files(str(second))
    assert index.files_mentioning("xxx", str(first)) == first_files
    kept = index.read_bytes(first_files[0])
    (first / "m0.py").write_bytes(b"changed = True\n")
    # Within a run a file is what the run first read of it (the searches built on it agree with it).
    assert index.read_bytes(first_files[0]) == kept
    assert index.files_mentioning("changed", str(first)) == []
    assert index.files_mentioning("xxx", str(second)) == second_files
    # Joining the second project made room: the first one's text is read again, as it is now.
    assert index.read_bytes(first_files[0]) == b"changed = True\n"
    # A project larger than the budget is searched a file at a time, with the same answers.
    big = tmp_path / "big"
    big.mkdir()
    for number in range(8):
        (big / f"b{number}.py").write_bytes(b"# " + b"y" * 198 + (b" needle" if number % 3 == 0 else b"") + b"\n")
    big_files = index.project_files(str(big))
    assert index.files_mentioning("needle", str(big)) == [big_files[0], big_files[3], big_files[6]]
    assert [index.read_bytes(path)[:3] for path in big_files] == [b"# y"] * 8
    index.clear_cache()


def test_word_searches_over_a_joined_project_text(tmp_path):
    """Answers of the joined text are those of a search file by file: in listing order, a word at either end of a
    file found, never a word that only the end of one file and the start of the next spell, and a package's
    own listing answered from the text of the project around it."""
    from onceguard.project import index, project_text

    index.clear_cache()
    package = tmp_path / "app" / "jobs"
    package.mkdir(parents=True)
    texts = {
        tmp_path / "setup_helpers.py": b"def prepare():\n    return 'ready'",
        tmp_path / "app" / "__init__.py": b"dispatch_all = []",
        package / "__init__.py": b"",
        package / "mailer.py": b"# ends with a half: dispat",
        package / "nightly.py": b"ch_later = 1\nwhile True:\n    dispatch_all.append(1)\n",
        package / "report.py": "résumé = 'dispatch_all'\n".encode(),
    }
    for path, data in texts.items():
        path.write_bytes(data)
    listing = index.project_files(str(tmp_path))

    def one_by_one(word, paths):
        return [path for path in paths if word.encode() in pathlib.Path(path).read_bytes()]

    for word in ("dispatch_all", "prepare", "ready'", "dispatch", "dispat", "while True", "résumé", "nowhere", ""):
        assert index.files_mentioning(word, str(tmp_path)) == one_by_one(word, listing), word
    inner = index.project_files(str(package))
    assert inner == [p for p in listing if p.startswith(str(package) + os.sep)]
    assert index.files_mentioning("dispatch_all", str(package)) == one_by_one("dispatch_all", inner)
    assert index.files_mentioning("dispatch", str(package)) == one_by_one("dispatch", inner)
    # The package's listing is a range of the project's text: one text holds both.
    assert len(project_text._texts) == 1
    assert [index.read_bytes(path) for path in listing] == [pathlib.Path(path).read_bytes() for path in listing]
    # Names found by a pass over the text: ``def`` statements and method calls, each file counted once.
    assert index.functions_named("prepare", Config(root=str(tmp_path)), str(tmp_path))[0][0].name == "prepare"
    assert index.files_calling_method("append", str(tmp_path)) == [str(package / "nightly.py")]
    index.clear_cache()


def test_config_validation():
    assert from_mapping({"select": ["OG1"], "ignore": ["OG103"]}).is_enabled("OG101")
    assert not from_mapping({"select": ["OG1"], "ignore": ["OG103"]}).is_enabled("OG103")
    assert from_mapping({"select": ["OG1"], "ignore": ["OG1"], "extend-select": ["OG103"]}).is_enabled("OG103")
    with pytest.raises(ConfigError):
        from_mapping({"transaction-pooler": "yes"})
    with pytest.raises(ConfigError):
        from_mapping({"selec": ["OG1"]})


def test_a_failing_rule_becomes_og001_and_the_others_still_run(monkeypatch):
    from onceguard.rules.advisory_locks import UnstableLockKey

    def explode(self, facts):
        raise KeyError("boom")

    monkeypatch.setattr(UnstableLockKey, "check", explode)
    source = b"import asyncpg\nasync def f(dsn):\n    pool = await asyncpg.create_pool(dsn)\n    await pool.execute('SELECT pg_advisory_lock(1)')\n"
    codes = {d.code for d in check_source(source, "x.py", Config())}
    assert "OG001" in codes and "OG101" in codes


def test_rules_that_skip_tests_and_migrations_are_not_run_there():
    from onceguard.engine.check import applicable_rules

    source = (b"from apscheduler.schedulers.background import BackgroundScheduler\n"
              b"s = BackgroundScheduler()\ns.add_job(f, 'interval', minutes=5)\n"
              b"conn.execute('SELECT pg_advisory_lock(1)')\n")
    rules = enabled_rules(Config())

    def codes(path):
        return {r.code for r in applicable_rules(source, rules, FileContext(path, Config()))}

    assert {"OG201", "OG101", "OG103"} <= codes("app/jobs.py")
    assert "OG201" not in codes("tests/test_jobs.py") and "OG101" in codes("tests/test_jobs.py")
    assert "OG103" not in codes("migrations/run.py") and "OG101" in codes("migrations/run.py")


def test_add_noqa_extends_skips_and_keeps_newlines():
    from onceguard.noqa import add_noqa

    text = 'key = hash("a")\r\nsql = """SELECT\r\n  1"""\r\ny = 1 + \\\r\n  2\r\nz = run()  # noqa: OG103\r\n'
    new, added, skipped = add_noqa(text, [(1, "OG104"), (1, "OG104"), (2, "OG101"), (4, "OG101"), (6, "OG101"),
                                         (6, "OG103")])
    assert added == 2
    assert skipped == [(2, "OG101"), (4, "OG101")]  # the line ends inside a string / with a backslash
    assert new.split("\r\n") == ['key = hash("a")  # noqa: OG104', 'sql = """SELECT', '  1"""', "y = 1 + \\", "  2",
                                 "z = run()  # noqa: OG103, OG101", ""]


def test_file_level_noqa_forms():
    from onceguard.noqa import ALL, file_codes

    assert file_codes(["# flake8: noqa"]) is ALL
    assert file_codes(["import os", "#flake8:NOQA"]) is ALL
    assert file_codes(["# flake8: noqa: OG101, OG2"]) == {"OG101", "OG2"}
    assert file_codes(["# onceguard: noqa: OG104"]) == {"OG104"}
    assert file_codes(["x = 1  # flake8: noqa"]) is None  # only a line of its own, as flake8 reads it


#: Every node kind a walk can yield, for comparing two ways of listing a function's own nodes.
_ALL_KINDS = tuple(kind for kind in vars(ast).values() if isinstance(kind, type) and issubclass(kind, ast.AST))

_OWN_NODES_SOURCE = '''
import functools

@functools.total_ordering
class Box:
    limit = {}

    @property
    def size(self, n=lambda: 1):
        def inner():
            return [x for x in range(3) if x]
        total = 0
        for item in self.items:
            total += item if item else inner()
        return total

    async def run(self, queue):
        while True:
            match await queue.get():
                case {"kind": kind, **rest} if kind:
                    def handler(kind=kind):
                        return kind
                    self.limit[kind] = handler
                case [first, *_]:
                    pass
            with open("x") as f, open("y") as g:
                del f
            try:
                print(lambda y: (y := 2))
            except (ValueError, KeyError) as error:
                raise RuntimeError() from error
            finally:
                return (await queue.join() for _ in ())

    def last(self) -> "Box":
        return self


def outer(a, /, b=2, *args, c: int = 3, **kwargs) -> int:
    class Local:
        def method(self):
            return a
    assert a, "message"
    return Local().method() if b else c
'''


def test_a_functions_own_nodes_read_off_the_module_list_match_a_walk_of_its_tree():
    """The pre-order run of a function (decorated class around it, nested defs, lambdas, match cases,
    comprehensions, a method last in its class) holds exactly what the walk that skips nested scopes yields."""
    from onceguard.analysis.facts import nodes_of_kinds, walk_no_nested_functions

    tree = ast.parse(_OWN_NODES_SOURCE)
    facts = ModuleFacts(tree, FileContext("app/box.py", Config()), _OWN_NODES_SOURCE.splitlines())
    assert len(facts.functions) == 7
    for function in facts.functions:
        walked = [node for node in walk_no_nested_functions(function)
                  if not isinstance(node, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop))]
        assert facts.own_nodes(function, _ALL_KINDS) == walked, function.name
        assert nodes_of_kinds(function, _ALL_KINDS) == list(walk_no_nested_functions(function)), function.name
        for kinds in ((ast.Return,), (ast.Assign, ast.AugAssign), (ast.Lambda, ast.ClassDef)):
            assert facts.own_nodes(function, kinds) == [n for n in walked if isinstance(n, kinds)], (function.name, kinds)
    by_name = {function.name: function for function in facts.functions}
    assert [type(n) for n in facts.own_nodes(by_name["last"], (ast.Return, ast.Name))] == [ast.Return, ast.Name]
    assert any(isinstance(n, ast.Lambda) for n in facts.own_nodes(by_name["run"], (ast.Lambda,)))
    assert not facts.own_nodes(by_name["run"], (ast.NamedExpr,))  # (inside the lambda: not the method's own)


def test_own_nodes_falls_back_to_the_walk_once_the_module_list_is_released():
    tree = ast.parse(_OWN_NODES_SOURCE)
    facts = ModuleFacts(tree, FileContext("app/box.py", Config()), _OWN_NODES_SOURCE.splitlines())
    function = next(f for f in facts.functions if f.name == "outer")
    before = facts.own_nodes(function, (ast.Return, ast.Assert))
    facts.release()
    assert facts.own_nodes(function, (ast.Return, ast.Assert)) == before and len(before) == 2


def test_the_fast_walks_visit_what_the_stdlib_walk_visits_on_a_module_of_awkward_shapes():
    from onceguard.analysis.facts import walk

    tree = ast.parse(_OWN_NODES_SOURCE)
    expected = list(ast.walk(tree))
    assert [id(node) for node in walk(tree)] == [id(node) for node in expected]
    facts = ModuleFacts(tree, FileContext("app/box.py", Config()), _OWN_NODES_SOURCE.splitlines())
    shared = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    assert sorted(map(id, facts.nodes)) == sorted(id(node) for node in expected if not isinstance(node, shared))


def test_a_node_kinds_fields_are_read_from_its_declared_types():
    """Names, constants and other builtin-typed fields hold no nodes and are not read; a list field and an
    optional field are told apart (on every supported Python, from ``_field_types`` or the ASDL signature)."""
    from onceguard.analysis.facts import _child_fields

    assert _child_fields(ast.Name) == ()
    assert _child_fields(ast.Name, with_shared=True) == (("ctx", False),)
    assert _child_fields(ast.Constant) == ()
    fields = dict(_child_fields(ast.FunctionDef))
    assert {"args": False, "body": True, "decorator_list": True, "returns": False}.items() <= fields.items()
    assert "name" not in fields and "type_comment" not in fields
    assert dict(_child_fields(ast.Compare)) == {"left": False, "comparators": True}


def test_the_function_around_each_node_is_its_nearest_enclosing_def():
    """Read off the pre-order runs, it is what going up the parents finds: through classes and lambdas, a
    nested def's decorators and defaults inside that def."""
    from onceguard.analysis.facts import ancestors

    tree = ast.parse(_OWN_NODES_SOURCE)
    facts = ModuleFacts(tree, FileContext("app/box.py", Config()), _OWN_NODES_SOURCE.splitlines())
    around = facts.functions_around_nodes()
    assert len(around) == len(facts.nodes)
    for node, function in zip(facts.nodes, around):
        expected = next((a for a in ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        assert function is expected, ast.dump(node)[:60]
    assert any(function is not None and function.name == "handler" for function in around)
