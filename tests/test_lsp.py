"""``onceguard lsp`` driven over stdio by pygls's own language client, as an editor would."""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from onceguard.surfaces import lsp as server_module
from onceguard.config import config_for
from onceguard.engine.check import check_source
from samples import CLEAN, HAZARD, UNSTABLE_KEY


TIMEOUT = 20.0


def server_command() -> List[str]:
    script = Path(sys.executable).with_name("onceguard")
    if script.is_file():
        return [str(script), "lsp"]
    found = shutil.which("onceguard")
    if found:
        return [found, "lsp"]
    return [sys.executable, "-m", "onceguard", "lsp"]


class Session:
    """A client plus the diagnostics the server publishes, per document, in arrival order."""

    def __init__(self) -> None:
        self.client = LanguageClient("onceguard-test", "1")
        self.published: Dict[str, asyncio.Queue] = {}
        self.shown: List[types.ShowDocumentParams] = []
        self.messages: List[str] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.queue(params.uri).put_nowait(params)

        @self.client.feature(types.WINDOW_SHOW_DOCUMENT)
        def on_show_document(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
            self.shown.append(params)
            return types.ShowDocumentResult(success=True)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            self.messages.append(params.message)

    def queue(self, uri: str) -> asyncio.Queue:
        return self.published.setdefault(uri, asyncio.Queue())

    async def diagnostics(self, uri: str, version: Optional[int] = None) -> List[types.Diagnostic]:
        """The next publication for ``uri`` (for ``version`` when given)."""
        while True:
            params = await asyncio.wait_for(self.queue(uri).get(), TIMEOUT)
            if version is None or params.version in (None, version):
                return list(params.diagnostics)

    def open(self, uri: str, text: str) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    def change(self, uri: str, version: int, text: str) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def code_actions(self, uri: str, diagnostics: Sequence[types.Diagnostic]) -> list:
        first = diagnostics[0].range
        result = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=first,
            context=types.CodeActionContext(diagnostics=list(diagnostics)))), TIMEOUT)
        return list(result or [])


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply TextEdits (positions in UTF-16 units; these tests use ASCII) from the end backwards."""
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        return sum(len(line) for line in lines[:position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def run(coroutine_function, workspace: Path,
        text_document: Optional[types.TextDocumentClientCapabilities] = None) -> None:
    async def main() -> None:
        session = Session()
        command = server_command()
        await session.client.start_io(*command, cwd=str(workspace))
        try:
            await asyncio.wait_for(session.client.initialize_async(types.InitializeParams(
                process_id=os.getpid(),
                root_uri=workspace.as_uri(),
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(
                        show_document=types.ShowDocumentClientCapabilities(support=True)),
                    text_document=text_document,
                ),
            )), TIMEOUT)
            session.client.initialized(types.InitializedParams())
            await coroutine_function(session)
            await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
            session.client.exit(None)
            await asyncio.wait_for(session.client._server.wait(), TIMEOUT)
            assert session.client._server.returncode == 0
        finally:
            server = session.client._server
            if server is not None and server.returncode is None:
                server.kill()
                await server.wait()
            await asyncio.wait_for(session.client.stop(), TIMEOUT)

    asyncio.run(asyncio.wait_for(main(), 120))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "nightly"\n\n[tool.onceguard]\n', encoding="utf-8")
    (tmp_path / "jobs").mkdir()
    return tmp_path


def expected_range(text: str, path: Path, code: str) -> types.Range:
    """Where the engine puts the finding, converted as the protocol wants it (0-based)."""
    found = [d for d in check_source(text.encode(), str(path), config_for(str(path))) if d.code == code]
    assert found, f"the engine reports no {code} on the example; the test premise is wrong"
    d = found[0]
    return types.Range(start=types.Position(line=d.line - 1, character=d.column - 1),
                       end=types.Position(line=d.end_line - 1, character=d.end_column - 1))


def test_diagnostics_code_actions_and_clean_exit(workspace: Path) -> None:
    path = workspace / "jobs" / "nightly.py"
    path.write_text(HAZARD, encoding="utf-8")
    uri = path.as_uri()
    hazard_range = expected_range(HAZARD, path, "OG101")

    async def scenario(session: Session) -> None:
        session.open(uri, HAZARD)
        diagnostics = await session.diagnostics(uri, 1)
        og101 = [d for d in diagnostics if d.code == "OG101"]
        assert len(og101) == 1, diagnostics
        finding = og101[0]
        assert finding.range == hazard_range
        assert finding.range.start.line == 3  # the pool.execute line, 0-based
        assert finding.source == "onceguard"
        assert "session-lock-on-pool" in finding.message
        assert finding.severity == types.DiagnosticSeverity.Warning
        # The published page: a file:// path into site-packages means nothing in a container or remote editor.
        assert finding.code_description is not None
        assert finding.code_description.href.startswith("https://") and finding.code_description.href.endswith("/OG101.md")

        # A clean text clears every finding (after the debounce).
        session.change(uri, 2, CLEAN)
        assert await session.diagnostics(uri, 2) == []

        # Back to the hazard; ask for the code actions of the OG101 finding.
        session.change(uri, 3, HAZARD)
        diagnostics = await session.diagnostics(uri, 3)
        finding = next(d for d in diagnostics if d.code == "OG101")
        actions = await session.code_actions(uri, [finding])
        titles = [a.title for a in actions]
        assert "Disable OG101 for this line" in titles, titles
        assert "Disable OG101 for this file" in titles, titles
        assert "Show documentation for OG101" in titles, titles

        line_action = next(a for a in actions if a.title == "Disable OG101 for this line")
        edited = apply_edits(HAZARD, line_action.edit.changes[uri])
        assert edited.splitlines()[3].endswith('pg_advisory_lock(42)")  # noqa: OG101')
        session.change(uri, 4, edited)
        diagnostics = await session.diagnostics(uri, 4)
        assert not [d for d in diagnostics if d.code == "OG101"], diagnostics

        # The file-level action, applied to the original text, silences OG101 everywhere in it.
        file_action = next(a for a in actions if a.title == "Disable OG101 for this file")
        edited = apply_edits(HAZARD, file_action.edit.changes[uri])
        assert edited.startswith("# onceguard: noqa: OG101\n")
        session.change(uri, 5, edited)
        diagnostics = await session.diagnostics(uri, 5)
        assert not [d for d in diagnostics if d.code == "OG101"], diagnostics

        # "Show documentation" is a command the server answers with window/showDocument.
        doc_command = next(a for a in actions if a.title == "Show documentation for OG101")
        assert isinstance(doc_command, types.Command)
        await asyncio.wait_for(session.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=doc_command.command, arguments=doc_command.arguments)), TIMEOUT)
        for _ in range(100):
            if session.shown:
                break
            await asyncio.sleep(0.05)
        assert session.shown and session.shown[0].uri.endswith("/OG101.md") and session.shown[0].external

    run(scenario, workspace)


def related_capable(supported: bool) -> types.TextDocumentClientCapabilities:
    return types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=supported))


def test_related_information_points_into_the_other_files(tmp_path: Path) -> None:
    from test_related_outputs import SEEDING_PATH, write_project

    project = write_project(tmp_path / "svc")
    seed = project / "app" / "db" / "seed.py"
    uri = seed.as_uri()
    text = seed.read_text(encoding="utf-8")

    async def scenario(session: Session) -> None:
        session.open(uri, text)
        diagnostics = await session.diagnostics(uri, 1)
        (finding,) = [d for d in diagnostics if d.code == "OG603"]
        assert finding.range.start.line == 15
        assert [(info.location.uri, info.location.range.start.line, info.location.range.start.character,
                 info.message) for info in finding.related_information] == [
            ((project / place["path"]).as_uri(), place["line"] - 1, place["column"] - 1, place["message"])
            for place in SEEDING_PATH
        ]
        # The job registered in jobs.py is judged by its definition in tasks.py, as on the command line.
        jobs = project / "app" / "jobs.py"
        session.open(jobs.as_uri(), jobs.read_text(encoding="utf-8"))
        (job,) = [d for d in await session.diagnostics(jobs.as_uri(), 1) if d.code == "OG201"]
        # The scheduler, the job's definition, then the call in it that acts outside the process.
        assert [info.location.uri for info in job.related_information] == [
            (project / "app" / "scheduling.py").as_uri(), (project / "app" / "tasks.py").as_uri(),
            (project / "app" / "tasks.py").as_uri()]

    run(scenario, project, related_capable(True))


def test_no_related_information_for_a_client_that_does_not_support_it(tmp_path: Path) -> None:
    from test_related_outputs import write_project

    project = write_project(tmp_path / "svc")
    seed = project / "app" / "db" / "seed.py"

    async def scenario(session: Session) -> None:
        session.open(seed.as_uri(), seed.read_text(encoding="utf-8"))
        (finding,) = [d for d in await session.diagnostics(seed.as_uri(), 1) if d.code == "OG603"]
        assert finding.related_information is None
        # The finding itself is still there, and its data keeps the related places for code actions.
        assert [place["line"] for place in finding.data["related"]] == [10, 5]

    run(scenario, project, related_capable(False))


def test_saving_another_file_checks_the_open_documents_again(tmp_path: Path) -> None:
    from test_related_outputs import write_project

    project = write_project(tmp_path / "svc")
    jobs = project / "app" / "jobs.py"
    tasks = project / "app" / "tasks.py"

    async def scenario(session: Session) -> None:
        session.open(jobs.as_uri(), jobs.read_text(encoding="utf-8"))
        assert [d.code for d in await session.diagnostics(jobs.as_uri(), 1)] == ["OG201"]
        # The job gets its claim in tasks.py, saved: the registration in jobs.py is clean again.
        claimed = tasks.read_text(encoding="utf-8").replace(
            "def send_digest() -> None:\n",
            "def send_digest() -> None:\n    if not claim_period(\"app.tasks.send_digest\", 300):\n        return\n")
        claimed = "from onceguard.guards import claim_period\n" + claimed
        tasks.write_text(claimed, encoding="utf-8")
        session.open(tasks.as_uri(), claimed)
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=tasks.as_uri())))
        assert await session.diagnostics(jobs.as_uri(), 1) == []

    run(scenario, project, related_capable(True))


def test_unparsable_text_save_close_and_untitled(workspace: Path) -> None:
    path = workspace / "jobs" / "broken.py"
    uri = path.as_uri()
    broken = 'import asyncpg\nasync def f(pool):\n    await pool.execute("SELECT pg_advisory_lock(1)"\n'

    async def scenario(session: Session) -> None:
        session.open(uri, broken)
        diagnostics = await session.diagnostics(uri, 1)
        assert [d.code for d in diagnostics] == ["OG000"]
        assert diagnostics[0].severity == types.DiagnosticSeverity.Error
        assert diagnostics[0].message.startswith("cannot parse: ") and "cannot-parse" not in diagnostics[0].message
        # The server is still alive and lints the repaired text.
        session.change(uri, 2, HAZARD)
        assert "OG101" in [d.code for d in await session.diagnostics(uri, 2)]
        # Saving publishes again at once.
        session.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert "OG101" in [d.code for d in await session.diagnostics(uri, 2)]
        # Closing clears the document's findings.
        session.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert await session.diagnostics(uri) == []
        # A document outside any file (untitled) is checked with the default settings.
        session.open("untitled:Untitled-1", HAZARD)
        assert "OG101" in [d.code for d in await session.diagnostics("untitled:Untitled-1", 1)]

    run(scenario, workspace)


# OG104 (a lock key from hash(), unsafe fix) on line 6 and OG203 (the skip logged at warning, safe fix) on line 13.
KEY_AND_LOUD = """\
import logging

import psycopg

log = logging.getLogger(__name__)
NIGHTLY_KEY = hash("nightly-report")


def nightly_report(conn: psycopg.Connection) -> None:
    with conn.transaction():
        got = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (NIGHTLY_KEY,)).fetchone()[0]
        if not got:
            log.warning("another replica has the lock")
            return
        conn.execute("INSERT INTO reports (day) VALUES (current_date)")
"""


def test_config_of_the_document_path_is_used(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text(
        '[tool.onceguard]\nerror = ["OG104"]\nextend-exclude = ["generated"]\n'
        'per-file-ignores = { "jobs/legacy_*" = ["OG104"] }\n', encoding="utf-8")
    uri = (workspace / "jobs" / "nightly.py").as_uri()
    legacy = (workspace / "jobs" / "legacy_nightly.py").as_uri()
    excluded = (workspace / "generated" / "client" / "jobs.py").as_uri()

    async def scenario(session: Session) -> None:
        session.open(uri, KEY_AND_LOUD)
        diagnostics = await session.diagnostics(uri, 1)
        by_code = {d.code: d for d in diagnostics}
        assert set(by_code) == {"OG104", "OG203"}, diagnostics
        assert by_code["OG104"].severity == types.DiagnosticSeverity.Error  # error = ["OG104"]
        assert by_code["OG203"].severity == types.DiagnosticSeverity.Warning
        assert by_code["OG104"].range.start.line == 5 and by_code["OG203"].range.start.line == 12
        # per-file-ignores: the same text in a legacy_ file keeps only OG203.
        session.open(legacy, KEY_AND_LOUD)
        assert [d.code for d in await session.diagnostics(legacy, 1)] == ["OG203"]
        # A file the configuration excludes stays quiet, as in `onceguard check .`.
        session.open(excluded, KEY_AND_LOUD)
        assert await session.diagnostics(excluded, 1) == []

    run(scenario, workspace)


def test_fix_all_source_action(workspace: Path) -> None:
    uri = (workspace / "jobs" / "nightly.py").as_uri()

    async def scenario(session: Session) -> None:
        session.open(uri, KEY_AND_LOUD)
        await session.diagnostics(uri, 1)
        whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=16, character=0))
        result = await asyncio.wait_for(session.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll]))), TIMEOUT)
        (action,) = result
        assert action.kind == "source.fixAll.onceguard"
        # Only the safe fix (OG203), as one ranged edit: the unsafe OG104 fix needs a person.
        (edit,) = action.edit.changes[uri]
        assert (edit.range.start.line, edit.range.start.character) == (12, 16)
        # `warning` -> `debug`, less the `g` they share at the end.
        assert (edit.range.end.line, edit.range.end.character) == (12, 22)
        assert edit.new_text == "debu"
        fixed = apply_edits(KEY_AND_LOUD, action.edit.changes[uri])
        assert fixed == KEY_AND_LOUD.replace("log.warning(", "log.debug(")
        session.change(uri, 2, fixed)
        assert [d.code for d in await session.diagnostics(uri, 2)] == ["OG104"]

    run(scenario, workspace)


def test_fix_code_action(workspace: Path) -> None:
    path = workspace / "jobs" / "keys.py"
    uri = path.as_uri()

    async def scenario(session: Session) -> None:
        session.open(uri, UNSTABLE_KEY)
        diagnostics = await session.diagnostics(uri, 1)
        finding = next(d for d in diagnostics if d.code == "OG104")
        assert finding.range.start.line == 2
        actions = await session.code_actions(uri, [finding])
        fixes = [a for a in actions if isinstance(a, types.CodeAction) and a.title.startswith("Fix OG104")]
        assert len(fixes) == 1, [a.title for a in actions]
        edits = fixes[0].edit.changes[uri]
        # Ranged edits of what changes, not the whole document: `import zlib` and `hash(` -> `zlib.crc32(b`.
        assert [(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text)
                for e in edits] == [(0, 0, 0, 0, "import zlib\n\n"), (2, 14, 2, 19, "zlib.crc32(b")]
        fixed = apply_edits(UNSTABLE_KEY, edits)
        # the standard library's zlib in its own section above the third-party psycopg, as isort puts it
        assert fixed == "import zlib\n\n" + UNSTABLE_KEY.replace('hash("nightly-report")', 'zlib.crc32(b"nightly-report")')
        session.change(uri, 2, fixed)
        assert not [d for d in await session.diagnostics(uri, 2) if d.code == "OG104"]

    run(scenario, workspace)


def test_columns_are_converted_to_utf16(workspace: Path) -> None:
    text = HAZARD.replace('pg_advisory_lock(42)"', 'pg_advisory_lock(42) -- nightly \U0001F600 caf\u00e9"')
    path = workspace / "jobs" / "nightly.py"
    uri = path.as_uri()
    in_bytes = expected_range(text, path, "OG101")  # the engine counts UTF-8 bytes, like ast

    async def scenario(session: Session) -> None:
        session.open(uri, text)
        finding = next(d for d in await session.diagnostics(uri, 1) if d.code == "OG101")
        assert finding.range.start == in_bytes.start  # ASCII before the call
        # U+1F600 is 4 bytes but 2 UTF-16 units; U+00E9 is 2 bytes but 1 unit.
        assert finding.range.end.character == in_bytes.end.character - 3

    run(scenario, workspace)


# The edit builders, on the cases the session above does not reach.

def test_noqa_line_edit_extends_an_existing_comment() -> None:
    text = 'x = run("SELECT pg_advisory_lock(1)")  # noqa: OG103\n'
    _, start, end, new = server_module.noqa_line_edit(text, 0, "OG101")
    edited = text[:start] + new + text[end:]
    assert edited == 'x = run("SELECT pg_advisory_lock(1)")  # noqa: OG103, OG101\n'
    assert server_module.noqa_line_edit(edited, 0, "OG101") is None
    assert server_module.noqa_line_edit("x = 1  # noqa\n", 0, "OG101") is None


def test_noqa_line_edit_refuses_string_continuations() -> None:
    text = 'sql = """SELECT\n  pg_advisory_lock(1)"""\ny = 1 + \\\n  2\n'
    assert server_module.noqa_line_edit(text, 0, "OG101") is None
    assert server_module.noqa_line_edit(text, 2, "OG101") is None
    assert server_module.noqa_line_edit(text, 1, "OG101") is not None


def test_noqa_file_edit_goes_after_shebang_and_coding_and_extends() -> None:
    text = "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport os\n"
    first, start, last, end, new = server_module.noqa_file_edit(text, "OG101")
    assert (first, start, last, end, new) == (2, 0, 2, 0, "# onceguard: noqa: OG101\n")
    existing = "# onceguard: noqa: OG103\nimport os\n"
    first, start, last, end, new = server_module.noqa_file_edit(existing, "OG101")
    lines = existing.splitlines(keepends=True)
    assert lines[0][:start] + new + lines[0][end:] == "# onceguard: noqa: OG103, OG101\n"
    assert server_module.noqa_file_edit("# onceguard: noqa\nimport os\n", "OG101") is None
    first, start, last, end, new = server_module.noqa_file_edit("#!/bin/python", "OG101")
    assert (first, start, new) == (0, len("#!/bin/python"), "\n# onceguard: noqa: OG101\n")
