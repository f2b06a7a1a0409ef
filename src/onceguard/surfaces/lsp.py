"""``onceguard lsp``: a language server over stdio (pygls).

Diagnostics are published when a document is opened or saved, and 300 ms after the last change.
Each carries the code, the rule name, a link to the rule's published doc page and the suggestion.
Documents are checked as ``onceguard check`` checks them, reading the project's other files from disk;
a finding that depends on other places (a job defined in another module, the start-up code that reaches
it) lists them as ``relatedInformation`` when the client says it supports that.  Saving a document
checks the other open documents again.
Code actions: apply the finding's fix (when the fixer is installed and the finding has one), disable
the code for the line (``# noqa: OG101``) or for the file (``# onceguard: noqa: OG101`` at the top),
show the rule's documentation, and ``source.fixAll.onceguard``: every safe fix at once. Fixes are
sent as edits of the changed ranges only. The configuration is the ``[tool.onceguard]`` table of the
nearest pyproject.toml above the document, as for ``onceguard check``.

pygls is imported here only, so ``onceguard check`` does not pay for it.
"""
from __future__ import annotations

import asyncio
import io
import logging
import os
import re
import tokenize
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..config import Config, ConfigError, config_for
from ..model import Diagnostic
# The engine's own noqa grammar, so that an extended comment is read back exactly as written.
from ..noqa import ALL, FILE_NOQA, file_codes, line_edit, source_lines

logger = logging.getLogger(__name__)

SOURCE = "onceguard"
SHOW_DOCUMENTATION = "onceguard.showDocumentation"
#: the "fix all" source action, as ruff's ``source.fixAll.ruff``
FIX_ALL = "source.fixAll.onceguard"
DEBOUNCE_SECONDS = 0.3

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-_.a-zA-Z0-9]+")


# --- text helpers (pure; the tests of the code actions go through the server) -----------------

def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _eol(lines: Sequence[str]) -> str:
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
        if line.endswith("\n"):
            return "\n"
    return "\n"


def _suppressed(code: str, codes) -> bool:
    if codes is None:
        return False
    return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)


def noqa_line_edit(text: str, line_index: int, code: str) -> Optional[Tuple[int, int, int, str]]:
    """(line, start, end, new text) in characters that makes the line carry ``# noqa: code``; None when
    the line is already suppressed or a comment cannot go there."""
    return line_edit(text, line_index, code)


def noqa_file_edit(text: str, code: str) -> Optional[Tuple[int, int, int, int, str]]:
    """(start line, start char, end line, end char, new text) that adds ``code`` to the file-level
    ``# onceguard: noqa: ...`` comment, creating it at the top (after a shebang or coding line)."""
    lines = text.splitlines(keepends=True)
    if _suppressed(code, file_codes([_strip_eol(line) for line in lines])):
        return None
    for index, raw in enumerate(lines):
        line = _strip_eol(raw)
        stripped = line.strip()
        if not stripped.startswith("#"):
            continue
        match = FILE_NOQA.search(stripped)
        if match and match.group("codes"):
            end = line.index(stripped) + match.end("codes")
            return index, end, index, end, f", {code}"
    insert_at = 0
    if lines and lines[0].startswith("#!"):
        insert_at = 1
    for candidate in range(insert_at, min(2, len(lines))):
        if _CODING.match(lines[candidate]):
            insert_at = candidate + 1
            break
    comment = f"# onceguard: noqa: {code}"
    newline = _eol(lines)
    if insert_at < len(lines):
        return insert_at, 0, insert_at, 0, comment + newline
    if not lines:
        return 0, 0, 0, 0, comment + newline
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return len(lines), 0, len(lines), 0, comment + newline
    return len(lines) - 1, len(last), len(lines) - 1, len(last), newline + comment + newline


def encode_for_engine(text: str) -> Tuple[bytes, str]:
    """The bytes the file would have on disk (its PEP 263 encoding), and that encoding."""
    raw = text.encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:
        return raw, "utf-8"
    if encoding in ("utf-8", "utf-8-sig"):
        return raw, "utf-8"
    try:
        return text.encode(encoding), encoding
    except (UnicodeEncodeError, LookupError):
        return raw, "utf-8"


def doc_uri(code: str) -> Optional[str]:
    """The rule's published documentation page; the installed file only when no page is known (a file
    path into site-packages means nothing on another machine or in a container)."""
    from ..docs import doc_path
    from .report.sarif import rule_doc_url

    url = rule_doc_url(code)
    if url is not None:
        return url
    path = doc_path(code)
    return path.resolve().as_uri() if path is not None else None


def text_edits(old: str, new: str) -> List[Tuple[int, int, str]]:
    """(start, end, replacement) character ranges of ``old`` that turn it into ``new``: one per changed run
    of lines, without the characters the two share at its ends, in document order."""
    from difflib import SequenceMatcher

    old_lines, new_lines = source_lines(old), source_lines(new)
    old_offsets, new_offsets = [0], [0]
    for line in old_lines:
        old_offsets.append(old_offsets[-1] + len(line))
    for line in new_lines:
        new_offsets.append(new_offsets[-1] + len(line))
    edits = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start, stop, new_start, new_stop = old_offsets[i1], old_offsets[i2], new_offsets[j1], new_offsets[j2]
        while start < stop and new_start < new_stop and old[start] == new[new_start]:
            start, new_start = start + 1, new_start + 1
        while start < stop and new_start < new_stop and old[stop - 1] == new[new_stop - 1]:
            stop, new_stop = stop - 1, new_stop - 1
        edits.append((start, stop, new[new_start:new_stop]))
    return edits


def _excluded(config: Config, path: str) -> bool:
    """What ``onceguard check <root>`` skips: the file or any directory between it and the config root."""
    absolute = os.path.abspath(path)
    if config.is_excluded(absolute):
        return True
    root = os.path.abspath(config.root) if config.root else None
    directory = os.path.dirname(absolute)
    while root and directory.startswith(root.rstrip(os.sep) + os.sep):
        if config.is_excluded(directory):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return False


# --- the server --------------------------------------------------------------------------------

class OnceguardLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("onceguard", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.pending: Dict[str, asyncio.TimerHandle] = {}
        #: the findings last published for each document, as (LSP diagnostic, engine diagnostic) pairs
        self.results: Dict[str, List[Tuple[types.Diagnostic, Diagnostic]]] = {}
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="onceguard-lint")
        self.reported_config_errors: Set[str] = set()

    # configuration ------------------------------------------------------------------------------

    def path_of(self, uri: str) -> Tuple[str, bool]:
        """A file-system path for the document and whether it is a real file location."""
        path = to_fs_path(uri)
        if path:
            return path, True
        try:
            root = self.workspace.root_path
        except Exception:  # noqa: BLE001 - no workspace yet
            root = None
        return os.path.join(root or os.getcwd(), "untitled.py"), False

    def config_of(self, path: str) -> Config:
        try:
            return config_for(path)
        except ConfigError as error:
            message = str(error)
            if message not in self.reported_config_errors:
                self.reported_config_errors.add(message)
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"onceguard: {message} (using the default settings)"))
            return replace(Config(), root=os.path.dirname(os.path.abspath(path)))

    # linting ------------------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_event_loop()
        self.pending[uri] = loop.call_later(delay, lambda: asyncio.ensure_future(self.lint(uri)))

    async def lint(self, uri: str) -> None:
        self.pending.pop(uri, None)
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return
        version, text = document.version, document.source
        try:
            path, _ = self.path_of(uri)
            config = self.config_of(path)
            loop = asyncio.get_running_loop()
            pairs = await loop.run_in_executor(self.linter, self.diagnose, text, path, config)
        except Exception as error:  # noqa: BLE001 - the editor session must survive any input
            logger.exception("onceguard failed on %s", uri)
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"onceguard failed on {uri}: {type(error).__name__}: {error}"))
            return
        current = self.workspace.text_documents.get(uri)
        if current is None or current.version != version:
            return  # edited meanwhile: a newer run is scheduled
        self.results[uri] = pairs
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[lsp for lsp, _ in pairs]))

    def diagnose(self, text: str, path: str, config: Config) -> List[Tuple[types.Diagnostic, Diagnostic]]:
        from ..engine.check import check_source
        from .report import ReportOptions, is_error

        if _excluded(config, path):
            return []
        source, encoding = encode_for_engine(text)
        # As ``onceguard check`` reads the project: a job registered here and defined in another file
        # is judged by its definition, and the finding names the other places it depends on.
        found = check_source(source, path, config, cross_file=True)
        lines = text.splitlines()
        options = ReportOptions(error_codes=config.error)
        pairs = []
        for finding in found:
            lsp = self.to_lsp(finding, lines, encoding, is_error(finding, options))
            if finding.related and self.supports_related_information():
                lsp.related_information = self.related_information(finding)
            pairs.append((lsp, finding))
        return pairs

    def supports_related_information(self) -> bool:
        """The client said it shows ``relatedInformation`` (``textDocument.publishDiagnostics``)."""
        capabilities = self.client_capabilities
        document = capabilities.text_document if capabilities else None
        publish = document.publish_diagnostics if document else None
        return bool(publish and publish.related_information)

    def related_information(self, d: Diagnostic) -> List[types.DiagnosticRelatedInformation]:
        """The finding's related places as protocol locations: absolute file URIs, positions in the client's
        units (the other file's line read from its open document, else from disk)."""
        found = []
        for place in d.related:
            path = os.path.abspath(place.path)
            uri = from_fs_path(path) or Path(path).as_uri()
            lines = self.lines_of(uri, path)
            position = self.position(lines, place.line - 1, place.column - 1, "utf-8") if lines else \
                types.Position(line=max(place.line - 1, 0), character=max(place.column - 1, 0))
            found.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=types.Range(start=position, end=position)),
                message=place.message))
        return found

    def lines_of(self, uri: str, path: str) -> List[str]:
        document = self.workspace.text_documents.get(uri)
        if document is not None:
            return document.source.splitlines()
        try:
            with open(path, "rb") as handle:
                return handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []

    def to_lsp(self, d: Diagnostic, lines: Sequence[str], encoding: str, error: bool) -> types.Diagnostic:
        start = self.position(lines, d.line - 1, d.column - 1, encoding)
        end = self.position(lines, d.end_line - 1, d.end_column - 1, encoding)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        message = d.message if not d.suggestion else f"{d.message}\n{d.suggestion}"
        if d.name and d.code not in ("OG000", "OG001"):
            # The engine's own messages already say what they are ("cannot parse: ...").
            message = f"{d.name}: {message}"
        href = doc_uri(d.code) if d.code not in ("OG000", "OG001") else None
        return types.Diagnostic(
            range=types.Range(start=start, end=end),
            message=message,
            severity=types.DiagnosticSeverity.Error if error else types.DiagnosticSeverity.Warning,
            code=d.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source=SOURCE,
            data=d.to_json(),
        )

    def position(self, lines: Sequence[str], line: int, column: int, encoding: str) -> types.Position:
        """The engine counts columns like ``ast`` (encoded bytes); clients count in their position encoding."""
        if line < 0:
            return types.Position(line=0, character=0)
        if line >= len(lines):
            return types.Position(line=len(lines), character=0)
        text = lines[line]
        try:
            prefix = text.encode(encoding, "surrogatepass")[:max(column, 0)].decode(encoding, "ignore")
        except (UnicodeError, LookupError):
            prefix = text[:max(column, 0)]
        return types.Position(line=line, character=self.workspace.position_codec.client_num_units(prefix))

    def character(self, lines: Sequence[str], line: int, index: int) -> int:
        """A character index on a line, in client units."""
        if 0 <= line < len(lines):
            return self.workspace.position_codec.client_num_units(_strip_eol(lines[line])[:index])
        return 0

    # code actions -------------------------------------------------------------------------------

    def findings_for(self, uri: str, params: types.CodeActionParams) -> List[Diagnostic]:
        """Our findings the client asks about: from the diagnostics it sends back, else from the range."""
        found: List[Diagnostic] = []
        for item in params.context.diagnostics:
            if item.source != SOURCE:
                continue
            if isinstance(item.data, dict):
                try:
                    found.append(Diagnostic.from_json(item.data))
                    continue
                except Exception:  # noqa: BLE001 - data a client mangled: fall back to our own results
                    pass
            for lsp, finding in self.results.get(uri, []):
                if lsp.code == item.code and lsp.range == item.range:
                    found.append(finding)
        if not params.context.diagnostics:
            wanted = params.range
            for lsp, finding in self.results.get(uri, []):
                if lsp.range.start.line <= wanted.end.line and lsp.range.end.line >= wanted.start.line:
                    found.append(finding)
        unique: Dict[Tuple, Diagnostic] = {}
        for finding in found:
            unique.setdefault((finding.code, finding.line, finding.column, finding.message), finding)
        return list(unique.values())

    def code_actions(self, params: types.CodeActionParams) -> List[Union[types.CodeAction, types.Command]]:
        uri = params.text_document.uri
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return []
        text = document.source
        lines = text.splitlines(keepends=True)
        actions: List[types.CodeAction] = []
        commands: List[types.Command] = []
        disabled_lines: Set[Tuple[str, int]] = set()
        disabled_files: Set[str] = set()
        documented: Set[str] = set()
        only = params.context.only
        quick_fixes = not only or any(k == types.CodeActionKind.QuickFix or k == "" for k in only)
        # A "fix all" request (on save, say) needs no per-finding actions: do not compute them.
        for finding in (self.findings_for(uri, params) if quick_fixes else ()):
            fix_action = self.fix_action(uri, text, lines, finding)
            if fix_action is not None:
                actions.append(fix_action)
            if finding.code in ("OG000", "OG001"):
                continue  # the engine's own reports cannot be suppressed
            key = (finding.code, finding.line)
            if key not in disabled_lines:
                disabled_lines.add(key)
                edit = noqa_line_edit(text, finding.line - 1, finding.code)
                if edit is not None:
                    line, start, end, new = edit
                    actions.append(self.edit_action(
                        f"Disable {finding.code} for this line", uri,
                        line, self.character(lines, line, start), line, self.character(lines, line, end), new))
            if finding.code not in disabled_files:
                disabled_files.add(finding.code)
                edit_file = noqa_file_edit(text, finding.code)
                if edit_file is not None:
                    first, start, last, end, new = edit_file
                    actions.append(self.edit_action(
                        f"Disable {finding.code} for this file", uri,
                        first, self.character(lines, first, start), last, self.character(lines, last, end), new))
            if finding.code not in documented and doc_uri(finding.code):
                documented.add(finding.code)
                # A bare Command (not a CodeAction carrying one): clients built on lsprotocol read a
                # CodeAction that has a ``command`` as a Command and lose it.
                commands.append(types.Command(
                    title=f"Show documentation for {finding.code}", command=SHOW_DOCUMENTATION,
                    arguments=[finding.code]))
        if not only or any(FIX_ALL == k or FIX_ALL.startswith(f"{k}.") for k in only):
            fix_all = self.fix_all_action(uri, text)
            if fix_all is not None:
                actions.append(fix_all)
        if only:
            wanted = [a for a in actions if a.kind and any(a.kind == k or a.kind.startswith(f"{k}.") for k in only)]
            return wanted
        return [*actions, *commands]

    def edit_action(self, title: str, uri: str, first: int, start: int, last: int, end: int,
                    new_text: str, preferred: bool = False) -> types.CodeAction:
        edit = types.TextEdit(
            range=types.Range(start=types.Position(line=first, character=start),
                              end=types.Position(line=last, character=end)),
            new_text=new_text,
        )
        return types.CodeAction(
            title=title, kind=types.CodeActionKind.QuickFix, is_preferred=preferred or None,
            edit=types.WorkspaceEdit(changes={uri: [edit]}),
        )

    def offset_position(self, lines: Sequence[str], starts: Sequence[int], offset: int) -> types.Position:
        """A character offset into the document as a protocol position (client units)."""
        import bisect

        line = max(bisect.bisect_right(starts, offset) - 1, 0)
        if line >= len(lines):
            return types.Position(line=len(lines), character=0)
        return types.Position(line=line, character=self.workspace.position_codec.client_num_units(
            lines[line][:offset - starts[line]]))

    def ranged_edits(self, text: str, new_text: str) -> List[types.TextEdit]:
        """The change as small edits of the ranges that differ, not a replacement of the whole document (which
        moves the cursor, drops folds and marks every line as changed)."""
        lines = source_lines(text)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        return [types.TextEdit(range=types.Range(start=self.offset_position(lines, starts, start),
                                                 end=self.offset_position(lines, starts, stop)),
                               new_text=replacement)
                for start, stop, replacement in text_edits(text, new_text)]

    def fixed_text(self, text: str, findings: Sequence[Diagnostic], unsafe: bool) -> Optional[str]:
        try:
            from ..engine.fixes import fix_source
        except Exception:  # noqa: BLE001
            return None
        source, encoding = encode_for_engine(text)
        try:
            result = fix_source(source, list(findings), unsafe=unsafe)
            if not getattr(result, "applied", None) or result.new_source == source:
                return None
            return result.new_source.decode(encoding)
        except Exception:  # noqa: BLE001 - a fixer failure only loses this action
            logger.exception("fix failed")
            return None

    def fix_action(self, uri: str, text: str, lines: Sequence[str], finding: Diagnostic) -> Optional[types.CodeAction]:
        if finding.fix is None:
            return None
        new_text = self.fixed_text(text, [finding], unsafe=finding.fix.applicability != "safe")
        if new_text is None:
            return None
        suffix = "" if finding.fix.applicability == "safe" else " (unsafe)"
        return types.CodeAction(
            title=f"Fix {finding.code}: {finding.fix.description}{suffix}", kind=types.CodeActionKind.QuickFix,
            is_preferred=finding.fix.applicability == "safe" or None,
            edit=types.WorkspaceEdit(changes={uri: self.ranged_edits(text, new_text)}),
        )

    def fix_all_action(self, uri: str, text: str) -> Optional[types.CodeAction]:
        """Every safe fix of the document at once (``source.fixAll.onceguard``, e.g. on save), from the text as
        it is now, not from findings published for an older version."""
        path, _ = self.path_of(uri)
        config = self.config_of(path)
        if _excluded(config, path):
            return None
        from ..engine.check import check_source

        source, _ = encode_for_engine(text)
        found = [d for d in check_source(source, path, config, cross_file=True)
                 if d.fix is not None and d.fix.applicability == "safe"]
        if not found:
            return None
        new_text = self.fixed_text(text, found, unsafe=False)
        if new_text is None:
            return None
        return types.CodeAction(title="onceguard: fix all safely fixable findings", kind=FIX_ALL,
                                edit=types.WorkspaceEdit(changes={uri: self.ranged_edits(text, new_text)}))

    def show_documentation(self, code: str) -> None:
        code = str(code).upper()
        uri = doc_uri(code)
        if uri is None:
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message=f"onceguard: no documentation installed for {code}"))
            return
        capabilities = self.client_capabilities
        window = capabilities.window if capabilities else None
        show = window.show_document if window else None
        if show is not None and show.support:
            self.window_show_document(types.ShowDocumentParams(
                uri=uri, external=not uri.startswith("file:"), take_focus=True))
        else:
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Info, message=f"{code}: {uri}"))


def build_server() -> OnceguardLanguageServer:
    server = OnceguardLanguageServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OnceguardLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: OnceguardLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: OnceguardLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        # What the other files hold on disk changed: forget what was read of the project, and check the
        # other open documents again (a claim saved in the job's module clears the finding at its registration).
        from ..project.index import clear_cache

        clear_cache()
        saved = params.text_document.uri
        ls.schedule(saved, 0)
        for uri in list(ls.results):
            if uri != saved:
                ls.schedule(uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OnceguardLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = ls.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        ls.results.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False),
    )
    def code_action(ls: OnceguardLanguageServer, params: types.CodeActionParams):
        try:
            return ls.code_actions(params)
        except Exception:  # noqa: BLE001 - a failed action list must not end the session
            logger.exception("code actions failed")
            return []

    @server.command(SHOW_DOCUMENTATION)
    def show_documentation(ls: OnceguardLanguageServer, *args) -> None:
        if args:
            ls.show_documentation(args[0])

    return server


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="onceguard lsp: %(levelname)s %(message)s")
    server = build_server()
    server.start_io()
    return 0
