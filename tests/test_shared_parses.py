"""A checked file's parse is the project's parse of that module: the checks of the files after it that read
it (and its own rules, looking up names it defines) do not parse it again, and the findings stay the same."""
import ast
import os

from onceguard.config import from_mapping
from onceguard.engine import runner
from onceguard.engine.check import check_source
from onceguard.project import index

JOBS = '''\
import smtplib


def send_digest():
    with smtplib.SMTP("mail") as server:
        server.sendmail("a@x", ["b@x"], "digest")
'''

SCHEDULE = '''\
from apscheduler.schedulers.background import BackgroundScheduler

from shop.jobs import send_digest

scheduler = BackgroundScheduler()
scheduler.add_job(send_digest, "interval", minutes=5)
scheduler.start()
'''


def _project(tmp_path):
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(JOBS)
    (package / "schedule.py").write_text(SCHEDULE)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    return package


def _counting(monkeypatch):
    counts = {}
    real = ast.parse

    def parse(source, filename="<unknown>", *args, **kwargs):
        counts[os.path.basename(str(filename))] = counts.get(os.path.basename(str(filename)), 0) + 1
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    return counts


def test_a_checked_module_read_by_a_later_check_is_parsed_once(tmp_path, monkeypatch):
    package = _project(tmp_path)
    config = from_mapping({}, root=str(tmp_path))
    index.clear_cache()
    counts = _counting(monkeypatch)
    files = [(str(package / "jobs.py"), config), (str(package / "schedule.py"), config)]
    found = runner.check_files(files, jobs=1, cache=None)
    index.clear_cache()
    assert counts.get("jobs.py") == 1
    assert [(os.path.basename(d.path), d.code) for d in found] == [("schedule.py", "OG201")]


def test_an_unsaved_text_is_not_the_modules_parse(tmp_path, monkeypatch):
    """An editor's text of a file is not what the other files import: read as a module, the file on disk is."""
    package = _project(tmp_path)
    config = from_mapping({}, root=str(tmp_path))
    index.clear_cache()
    edited = JOBS.replace('"digest"', '"weekly digest"').encode()
    check_source(edited, str(package / "jobs.py"), config, cross_file=True)
    facts = index.module_facts(str(package / "jobs.py"), config)
    index.clear_cache()
    assert facts is not None and '"digest"' in "\n".join(facts.lines)


def test_a_file_changed_after_its_read_is_not_kept(tmp_path):
    package = _project(tmp_path)
    config = from_mapping({}, root=str(tmp_path))
    index.clear_cache()
    path = str(package / "jobs.py")
    before = runner.ResultCache.signature(path)
    source = open(path, "rb").read()
    with open(path, "a") as handle:
        handle.write("\n\nLATE = 1\n")
    check_source(source, path, config, cross_file=True, read_at=before)
    facts = index.module_facts(path, config)
    index.clear_cache()
    assert facts is not None and "LATE = 1" in facts.lines
