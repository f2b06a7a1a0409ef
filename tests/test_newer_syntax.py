"""Files written for a newer Python than the running one are analysed, their findings at their own lines."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from onceguard.config import Config
from onceguard.engine.check import check_source
from onceguard.analysis.newer_syntax import parse_newer

# A 3.12 module: a ``type`` statement, a generic function and class, PEP 701 f-strings (the outer quote
# reused inside, a backslash, a comment and a line break inside a replacement field); the hazard (a
# session advisory lock through a pool) sits after every one of them, and one inside an f-string field.
PY312_SERVICE = textwrap.dedent(
    '''\
    import asyncpg

    type JobName = str
    type Pair[K, V] = tuple[K, V]


    def first[T: (int, str)](items: list[T]) -> T:
        return items[0]


    class Registry[T]:
        def names(self) -> str:
            return f"{", ".join(self.items)}"


    async def label(pool, parts):
        sep = f"{'\\n'.join(parts)}"
        return f"{
            sep  # the joined parts
        }"


    async def nightly_rollup(dsn):
        pool = await asyncpg.create_pool(dsn)
        await pool.execute(f"SELECT pg_advisory_lock({"42"})")
    '''
)
PY312_HAZARD_LINE = 25

# A 3.13 module: type parameter defaults (PEP 696), nested f-strings reusing one quote; the hazard is an
# unlock that no ``finally`` guarantees, inside a generic method.
PY313_SERVICE = textwrap.dedent(
    '''\
    import asyncpg


    class Batch[T = int, *Ts = *tuple[int, ...]]:
        async def flush[R = str](self, dsn) -> R:
            pool = await asyncpg.create_pool(dsn)
            note = f"{f"{f"{len(self.rows)}"}"}"
            await pool.execute("SELECT pg_advisory_lock(7)")
            return note
    '''
)
PY313_HAZARD_LINE = 8


def codes_by_line(found):
    return {(d.line, d.code) for d in found}


def test_a_312_file_yields_its_findings_at_the_original_lines(tmp_path):
    found = check_source(PY312_SERVICE.encode(), str(tmp_path / "service.py"), Config())
    assert "OG000" not in {d.code for d in found}, found
    assert (PY312_HAZARD_LINE, "OG101") in codes_by_line(found), found


def test_a_313_file_yields_its_findings_at_the_original_lines(tmp_path):
    found = check_source(PY313_SERVICE.encode(), str(tmp_path / "batch.py"), Config())
    assert "OG000" not in {d.code for d in found}, found
    assert (PY313_HAZARD_LINE, "OG101") in codes_by_line(found), found


def test_the_same_hazard_is_found_in_the_older_spelling(tmp_path):
    """The rewrite keeps meaning: the 3.11 spelling of the same module gives the same findings."""
    older = (PY312_SERVICE.replace("type JobName = str", "JobName = str")
             .replace("type Pair[K, V] = tuple[K, V]", "Pair = tuple")
             .replace("def first[T: (int, str)](", "def first(")
             .replace("class Registry[T]:", "class Registry:")
             .replace('f"{", ".join(self.items)}"', '", ".join(self.items)')
             .replace("f\"{'\\n'.join(parts)}\"", "'\\n'.join(parts)")
             .replace('f"{\n        sep  # the joined parts\n    }"', 'f"{sep}"\n\n')
             .replace('f"SELECT pg_advisory_lock({"42"})"', "\"SELECT pg_advisory_lock(42)\""))
    ast.parse(older)  # the older spelling really is 3.11 code
    newer_found = check_source(PY312_SERVICE.encode(), str(tmp_path / "a.py"), Config())
    older_found = check_source(older.encode(), str(tmp_path / "a.py"), Config())
    assert codes_by_line(newer_found) == codes_by_line(older_found)


CONSTRUCTS = {
    "reused quote": ('names = ["a"]\nmsg = f"{", ".join(names)}"\n', ", ".join(["a"])),
    "backslash": ("names = ['a', 'b']\nmsg = f\"{'\\n'.join(names)}\"\n", "a\nb"),
    "comment in field": ('x = 3\nmsg = f"{\n    x  # three\n}"\n', "3"),
    "nested": ('msg = f"{f"{f"{1 + 1}"}"}"\n', "2"),
    "echo, conversion, spec": ('w = 3\nmsg = f"{w=!r:>{w}}|{"x"=}"\n', "w=  3|\"x\"='x'"),
    "echo and spec": ('width = 5\nv = "ab"\nmsg = f"{v = !r:>{width}} {"end"}"\n', "v =  'ab' end"),
    "concatenated": ('n = 2\nmsg = ("n=" f"{"{"}{n}{"}"}" \'!\')\n', "n={2}!"),
    "raw": ("p = 'x'\nmsg = rf\"\\d{'\\\\' + p}\"\n", "\\d\\x"),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_each_f_string_construct_reads_as_python_312_reads_it(name):
    source, value = CONSTRUCTS[name]
    if sys.version_info < (3, 12):
        with pytest.raises(SyntaxError):
            ast.parse(source)  # really newer syntax
    tree = parse_newer(source, "<test>")
    namespace: dict = {}
    exec(compile(tree, "<test>", "exec"), namespace)
    assert namespace["msg"] == value


def test_columns_of_calls_after_and_inside_a_rewritten_f_string_are_kept():
    source = 'log(f"{", ".join(items)}", other(1))\n'
    tree = parse_newer(source, "<test>")
    calls = {ast.unparse(node.func): (node.lineno, node.col_offset, node.end_col_offset)
             for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert calls["', '.join"] == (1, 7, 23)
    assert calls["other"] == (1, 27, 35)
    assert calls["log"] == (1, 0, 36)


def test_type_alias_and_type_parameters_keep_lines_and_value_columns():
    source = "type Rows[T] = list[T]\ndef pick[T](\n    rows: Rows[T],\n) -> T:\n    return rows[0]\n"
    tree = parse_newer(source, "<test>")
    alias, function = tree.body
    assert isinstance(alias, ast.Assign) and alias.targets[0].id == "Rows"
    assert (alias.value.lineno, alias.value.col_offset) == (1, 15)
    assert isinstance(function, ast.FunctionDef) and function.name == "pick"
    assert (function.args.args[0].lineno, function.args.args[0].col_offset) == (3, 4)
    assert function.body[0].lineno == 5


def test_except_without_brackets_is_read_but_a_python2_binding_is_not():
    tree = parse_newer("try:\n    run()\nexcept ValueError, TypeError:\n    pass\n", "<test>")
    handler = tree.body[0].handlers[0]
    assert [e.id for e in handler.type.elts] == ["ValueError", "TypeError"]
    with pytest.raises(SyntaxError):
        parse_newer("try:\n    run()\nexcept ValueError, error:\n    pass\n", "<test>")


def test_broken_code_still_raises_the_interpreters_own_error():
    with pytest.raises(SyntaxError) as raised:
        parse_newer('def nightly(:\n    msg = f"{", ".join(x)}"\n', "<test>")
    assert raised.value.lineno == 1


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the running Python reads these files itself")
def test_an_unreadable_f_string_names_the_version_it_would_need(tmp_path):
    source = b"# this job takes a pg_advisory_lock\nmsg = f'{x!z}'\n"
    found = check_source(source, str(tmp_path / "broken.py"), Config())
    assert [d.code for d in found] == ["OG000"]
    assert "needs Python 3.12" in found[0].message


def test_a_job_defined_in_a_312_module_is_followed_from_the_cli(tmp_path):
    """The project model reads other files the same way: a helper in a 3.12 module still takes its lock."""
    (tmp_path / "pyproject.toml").write_text("[tool.onceguard]\n")
    (tmp_path / "service.py").write_text(PY312_SERVICE)
    console = shutil.which("onceguard", path=os.path.dirname(sys.executable))
    assert console, "the console script is installed with the package"
    result = subprocess.run([console, "check", ".", "--format", "json", "--no-cache"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    import json
    found = json.loads(result.stdout)
    rows = found if isinstance(found, list) else found.get("findings", found.get("diagnostics", []))
    lines = {(row.get("line") or row.get("location", {}).get("row"), row["code"]) for row in rows}
    assert (PY312_HAZARD_LINE, "OG101") in lines, rows
    assert not any(row["code"] == "OG000" for row in rows)


# A code generator's input named ``.py``: Jinja statement tags and expressions around Python text.  The trigger
# word (an advisory lock) is there so that the prefilter hands it to the parser.
JINJA_MODULE = textwrap.dedent(
    '''\
    import asyncpg

    {% for job in jobs %}
    async def {{ job.name }}(pool):
        await pool.execute("SELECT pg_advisory_lock({{ job.key }})")
    {% endfor %}
    '''
)
# An expression tag where the parse fails, in a file whose statement tags sit inside parentheses.
JINJA_SIGNATURE = textwrap.dedent(
    '''\
    import asyncpg


    async def fetch(pool,
    {% if paged %}
        page: int,
    {% endif %}
    ) -> {{ result | annotation }}:
        await pool.execute("SELECT pg_advisory_lock(1)")
    '''
)


@pytest.mark.parametrize("source", [JINJA_MODULE, JINJA_SIGNATURE, "import asyncpg\n{# pg_advisory_lock #}\nfrom app.{{ v }} import jobs\n"],
                         ids=["statement-tag", "expression-tag", "comment-tag"])
def test_a_template_named_py_is_not_reported_as_unreadable_python(source, tmp_path):
    found = check_source(source.encode(), str(tmp_path / "client.py"), Config())
    assert found == [], found


@pytest.mark.parametrize("source", [
    # the markup is inside a string or a comment of Python that is broken elsewhere on the line
    'import asyncpg\nrender("{% if x %}pg_advisory_lock", (\n',
    "import asyncpg\nquery = (  # {% raw %} pg_advisory_lock\n",
    # ``{{ x }}`` is a Python expression: alone (no statement tag anywhere) it does not make a template
    "import asyncpg\nlock = pg_advisory_lock({{ key }} +)\n",
    # a template kept in a triple-quoted string, and a real mistake right after it
    'import asyncpg\nPAGE = """\n{% for row in rows %}\n{{ row | e }}\n{% endfor %}\n"""\ndef lock(:\n    pg_advisory_lock\n',
], ids=["tag-in-string", "tag-in-comment", "expression-only", "template-in-a-string"])
def test_broken_python_near_template_lookalikes_is_still_reported(source, tmp_path):
    found = check_source(source.encode(), str(tmp_path / "broken.py"), Config())
    assert [d.code for d in found] == ["OG000"], found
