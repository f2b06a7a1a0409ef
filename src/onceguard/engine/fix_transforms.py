"""The fix table: for each fix kind, the libcst node to look for at a finding's start and its rewrite.

Adding a fix = adding a row to ``TRANSFORMS``: the node type to look for at the finding's start and a
function that returns the rewritten node (or None when the node is not what the fix expects). A rewrite
also gets the finding's :class:`~onceguard.model.Fix`: fixes that insert code carry it in the description
(see ``fix_plans``). ``fixes`` finds the nodes again, applies the rewrites and writes the files.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple, Type

import libcst as cst
from libcst.metadata import CodeRange

from ..rules.fix_plans import GUARDS_MODULE, UNKNOWN_PERIOD, statement_in, statements_in
from ..model import Fix

# ---------------------------------------------------------------------------------------------------------
# The transform table


@dataclass(frozen=True)
class Rewrite:
    node: cst.CSTNode
    #: Modules the new code refers to: ``import <name>`` is added at the top when it is missing;
    #: ``"<module>:<name>"`` adds ``from <module> import <name>``.
    imports: FrozenSet[str] = frozenset()


@dataclass(frozen=True)
class Transform:
    node_type: Type[cst.CSTNode]
    #: Cheap test on the original node, used to pick the target among nodes that start at the same spot
    #: (``logging.getLogger(__name__).warning(...)``: two calls start at column 1).
    accepts: Callable[[cst.CSTNode], bool]
    #: The rewrite of the (possibly already partly fixed) node; None when it does not apply after all.
    rewrite: Callable[..., Optional[Rewrite]]
    #: The rewrite also takes the finding's Fix (code to insert travels in its description).
    takes_fix: bool = False
    #: The target is the simple statement that holds the finding's start (the fix adds a statement).
    enclosing_statement: bool = False


def enclosing_statement(positions: Mapping[cst.CSTNode, CodeRange], start: Tuple[int, int],
                        transform: Transform) -> List[Tuple[cst.CSTNode, CodeRange]]:
    """The innermost node of the transform's type (a simple statement line, a block) whose range holds
    ``start`` (line, 0-based column), if the transform takes it."""
    best: List[Tuple[cst.CSTNode, CodeRange]] = []
    for node, where in positions.items():
        if (isinstance(node, transform.node_type)
                and (where.start.line, where.start.column) <= start < (where.end.line, where.end.column)
                and transform.accepts(node)):
            if not best or (where.start.line, where.start.column) > (best[0][1].start.line, best[0][1].start.column):
                best = [(node, where)]
    return best


# Logger methods that log at warning level or above, and the debug method that replaces each.
_LOUD_METHODS = {
    "warning": "debug",
    "warn": "debug",
    "error": "debug",
    "critical": "debug",
    "fatal": "debug",
    "exception": "debug",
    # structlog's async methods
    "awarning": "adebug",
    "aerror": "adebug",
    "acritical": "adebug",
    "afatal": "adebug",
    "aexception": "adebug",
}
_EXCEPTION_METHODS = frozenset({"exception", "aexception"})
_LOUD_LEVELS = frozenset({"WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"})
_LOUD_LEVEL_NUMBERS = frozenset({30, 40, 50})
_LOG_METHODS = frozenset({"log", "alog"})


def _method(call: cst.CSTNode) -> Optional[str]:
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _level_arg(call: cst.Call) -> Optional[int]:
    """Index of the level argument of ``log.log(level, msg)``: first positional, or ``level=``."""
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == "level":
            return index
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return 0
    return None


def _is_loud_level(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Attribute):
        return node.attr.value in _LOUD_LEVELS
    if isinstance(node, cst.Name):
        return node.value in _LOUD_LEVELS
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0) in _LOUD_LEVEL_NUMBERS
        except ValueError:
            return False
    return False


def _accepts_loud_log(node: cst.CSTNode) -> bool:
    method = _method(node)
    if method is None:
        return False
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    if method == "warn" and isinstance(node.func.value, cst.Name) and node.func.value.value == "warnings":
        return False  # warnings.warn is not a log call
    if method in _LOUD_METHODS:
        return True
    if method in _LOG_METHODS:
        index = _level_arg(node)
        return index is not None and _is_loud_level(node.args[index].value)
    return False


def _append_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Add ``name=value`` as the last argument, in the layout the call already has."""
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not call.args:
        return call.with_changes(args=[new_arg])
    last = call.args[-1]
    between: cst.BaseParenthesizableWhitespace = (
        call.whitespace_before_args
        if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace)
        else cst.SimpleWhitespace(" ")
    )
    if isinstance(last.comma, cst.Comma):  # trailing comma: keep it, after the new argument
        new_last = last.with_changes(comma=last.comma.with_changes(whitespace_after=between),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    else:
        new_last = last.with_changes(comma=cst.Comma(whitespace_after=between),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=[*call.args[:-1], new_last, new_arg])


def _log_at_debug(node: cst.CSTNode) -> Optional[Rewrite]:
    if not _accepts_loud_log(node):
        return None
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    method = node.func.attr.value
    if method in _LOUD_METHODS:
        debug_method = node.func.attr.with_changes(value=_LOUD_METHODS[method])
        call = node.with_changes(func=node.func.with_changes(attr=debug_method))
        has_exc_info = any(a.keyword is not None and a.keyword.value == "exc_info" for a in call.args)
        if method in _EXCEPTION_METHODS and not has_exc_info:
            # .exception() logs the traceback; keep it at debug level.
            call = _append_keyword(call, "exc_info", cst.Name("True"))
        return Rewrite(call)
    index = _level_arg(node)
    assert index is not None
    level = node.args[index].value
    imports: FrozenSet[str] = frozenset()
    if isinstance(level, cst.Attribute):  # logging.WARNING -> logging.DEBUG, whatever the module is called here
        debug: cst.BaseExpression = level.with_changes(attr=level.attr.with_changes(value="DEBUG"))
    else:
        debug = cst.Attribute(value=cst.Name("logging"), attr=cst.Name("DEBUG"))
        imports = frozenset({"logging"})
    debug = debug.with_changes(lpar=level.lpar, rpar=level.rpar)
    args = list(node.args)
    args[index] = args[index].with_changes(value=debug)
    return Rewrite(node.with_changes(args=args), imports)


def _accepts_hash(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "hash"
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    )


_STRING_PREFIX = re.compile(r"^[A-Za-z]*")


def _stable_bytes(value: cst.BaseExpression) -> cst.BaseExpression:
    """An expression of the bytes that stand for ``value`` across processes."""
    if isinstance(value, cst.SimpleString) and not value.lpar:
        prefix = _STRING_PREFIX.match(value.value).group(0)  # type: ignore[union-attr]
        lowered = prefix.lower()
        if "b" in lowered:
            return value
        body = value.value[len(prefix):]
        if body.isascii() and "\\" not in body and "f" not in lowered:
            # "nightly" -> b"nightly": same bytes as "nightly".encode()
            return value.with_changes(value="b" + prefix.replace("u", "").replace("U", "") + body)
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) and not _is_bytes(value):
        if isinstance(value, cst.ConcatenatedString) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("encode")))
    text = cst.Call(func=cst.Name("str"), args=[cst.Arg(value=value)])
    return cst.Call(func=cst.Attribute(value=text, attr=cst.Name("encode")))


def _is_bytes(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        return "b" in _STRING_PREFIX.match(value.value).group(0).lower()  # type: ignore[union-attr]
    if isinstance(value, cst.ConcatenatedString):
        return _is_bytes(value.left)
    return False


def _stable_lock_key(node: cst.CSTNode) -> Optional[Rewrite]:
    if not _accepts_hash(node):
        return None
    assert isinstance(node, cst.Call)
    arg = node.args[0]
    crc32 = cst.Attribute(value=cst.Name("zlib"), attr=cst.Name("crc32"))
    return Rewrite(node.with_changes(func=crc32, args=[arg.with_changes(value=_stable_bytes(arg.value))]),
                   frozenset({"zlib"}))


# ---------------------------------------------------------------------------------------------------------
# Imports: ``import x`` and ``from x import y``


def import_nodes(entries: Iterable[str]) -> List[cst.BaseSmallStatement]:
    """``"x"`` → ``import x``; ``"x.y:z"`` → ``from x.y import z`` (one statement per module), in order."""
    plain: List[str] = []
    names_by_module: Dict[str, List[str]] = {}
    for entry in sorted(set(entries)):
        if ":" in entry:
            module, name = entry.split(":", 1)
            names_by_module.setdefault(module, []).append(name)
        else:
            plain.append(entry)
    nodes: List[cst.BaseSmallStatement] = [cst.Import(names=[cst.ImportAlias(name=cst.Name(m))]) for m in plain]
    for module, names in sorted(names_by_module.items()):
        dotted = cst.parse_expression(module)
        assert isinstance(dotted, (cst.Name, cst.Attribute))
        nodes.append(cst.ImportFrom(module=dotted, names=[cst.ImportAlias(name=cst.Name(n)) for n in names]))
    return nodes


def from_imported(module: cst.Module) -> Set[str]:
    """``"x.y:z"`` for every top-level ``from x.y import z`` (not ``as``): names a fix need not import again."""
    found: Set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative
                    and not isinstance(small.names, cst.ImportStar)):
                source = cst.Module(body=[]).code_for_node(small.module)
                found.update(f"{source}:{alias.name.value}" for alias in small.names
                             if alias.asname is None and isinstance(alias.name, cst.Name))
    return found


# ---------------------------------------------------------------------------------------------------------
# OG201: the job's first statement becomes a claim for its period


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _claim_if(code: str) -> Optional[cst.If]:
    """``if not claim_period(...): return`` as a two-line ``if`` (the description shows it on one line)."""
    try:
        parsed = cst.parse_statement(code)
    except cst.ParserSyntaxError:
        return None
    if not isinstance(parsed, cst.If) or parsed.orelse is not None:
        return None
    suite = parsed.body
    statements = suite.body if isinstance(suite, cst.SimpleStatementSuite) else ()
    if len(statements) != 1 or not isinstance(statements[0], cst.Return):
        return None
    return parsed.with_changes(body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return()])]))


def _insert_claim(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    if not isinstance(node, cst.FunctionDef) or fix is None:
        return None
    code = statement_in(fix.description)
    if code is None or UNKNOWN_PERIOD in code:
        return None
    claim = _claim_if(code)
    if claim is None:
        return None
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):  # def job(): work()
        new_body: cst.BaseSuite = cst.IndentedBlock(
            header=body.trailing_whitespace,
            body=[claim, cst.SimpleStatementLine(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
                                                        for s in body.body])])
    else:
        statements = list(body.body)
        index = 1 if statements and _is_docstring(statements[0]) else 0
        if index < len(statements) and cst.Module(body=[]).code_for_node(statements[index]).strip() == \
                cst.Module(body=[]).code_for_node(claim).strip():
            return None  # already there
        statements.insert(index, claim)
        new_body = body.with_changes(body=statements)
    name = "aclaim_period" if "aclaim_period(" in code else "claim_period"
    return Rewrite(node.with_changes(body=new_body), frozenset({f"{GUARDS_MODULE}:{name}"}))


# ---------------------------------------------------------------------------------------------------------
# OG501: SETNX + EXPIRE → SET NX EX; a lock object gets a TTL


def _keyword_args(text: str) -> Optional[list]:
    """``"nx=True, ex=60"`` → the libcst keyword arguments, or None when it is not just keywords."""
    try:
        call = cst.parse_expression(f"f({text})")
    except cst.ParserSyntaxError:
        return None
    if not isinstance(call, cst.Call) or not call.args or any(a.keyword is None or a.star for a in call.args):
        return None
    return list(call.args)


def _has_keyword(call: cst.Call, name: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == name for a in call.args)


def _accepts_claim_set(node: cst.CSTNode) -> bool:
    return _method(node) in ("setnx", "set")


def _atomic_set(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    if not _accepts_claim_set(node) or fix is None:
        return None
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    match = re.search(r"`set\(…, ([^`]+)\)`", fix.description)
    extra = _keyword_args(match.group(1)) if match else None
    if not extra or len([a for a in node.args if a.keyword is None]) < 2 or any(a.star for a in node.args):
        return None
    call = node
    if node.func.attr.value == "setnx":
        call = call.with_changes(func=node.func.with_changes(attr=node.func.attr.with_changes(value="set")))
    for arg in extra:
        assert arg.keyword is not None
        if not _has_keyword(call, arg.keyword.value):
            call = _append_keyword(call, arg.keyword.value, arg.value)
    return Rewrite(call) if call is not node else None


def _add_keyword(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    if not isinstance(node, cst.Call) or fix is None:
        return None
    code = statement_in(fix.description) or ""
    extra = _keyword_args(code)
    if not extra or len(extra) != 1 or any(a.star for a in node.args):
        return None
    keyword = extra[0].keyword
    assert keyword is not None
    if _has_keyword(node, keyword.value):
        return None
    return Rewrite(_append_keyword(node, keyword.value, extra[0].value))


# ---------------------------------------------------------------------------------------------------------
# OG106: test the try-lock's result and return when it is false


def _return_block(header: Optional[cst.TrailingWhitespace] = None) -> cst.IndentedBlock:
    block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return()])])
    return block.with_changes(header=header) if header is not None else block


def _skip_after(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    """``acquired = ...`` → the same, then ``if not acquired: return``."""
    if not isinstance(node, cst.SimpleStatementLine) or fix is None:
        return None
    code = statement_in(fix.description)
    skip = _claim_if(code) if code else None
    if skip is None:
        return None
    return Rewrite(cst.FlattenSentinel([node, skip]))  # type: ignore[arg-type]


def _accepts_bare_execute(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.SimpleStatementLine) or len(node.body) != 1 or not isinstance(node.body[0], cst.Expr):
        return False
    value = node.body[0].value
    if isinstance(value, cst.Await):
        value = value.expression
    return _method(value) == "execute"


def _skip_reading(reader: str) -> Callable[..., Optional[Rewrite]]:
    def rewrite(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
        if not _accepts_bare_execute(node):
            return None
        assert isinstance(node, cst.SimpleStatementLine) and isinstance(node.body[0], cst.Expr)
        value = node.body[0].value
        awaited = value if isinstance(value, cst.Await) else None
        call = awaited.expression if awaited is not None else value
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        read: cst.BaseExpression
        if reader in ("fetchval", "fetch_val"):
            read = call.with_changes(func=call.func.with_changes(attr=cst.Name(reader)))
        elif reader == "scalar":
            read = cst.Call(func=cst.Attribute(value=call, attr=cst.Name("scalar")))
        else:  # fetchone()[0]
            read = cst.Subscript(value=cst.Call(func=cst.Attribute(value=call, attr=cst.Name("fetchone"))),
                                 slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))])
        if awaited is not None:
            if reader in ("scalar", "fetchone"):  # (await conn.execute(...)).scalar()
                inner = read.value if isinstance(read, cst.Subscript) else read.func  # type: ignore[union-attr]
                base = inner.func.value if isinstance(read, cst.Subscript) else inner.value  # type: ignore[union-attr]
                parenthesised = awaited.with_changes(expression=base, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                read = _replace_base(read, parenthesised)
            else:
                read = awaited.with_changes(expression=read)
        test = cst.UnaryOperation(operator=cst.Not(), expression=read)
        return Rewrite(cst.If(test=test, body=_return_block(node.trailing_whitespace),
                              leading_lines=node.leading_lines))

    return rewrite


def _replace_base(read: cst.BaseExpression, base: cst.BaseExpression) -> cst.BaseExpression:
    """Put ``base`` where the execute call was inside ``execute(...).scalar()`` / ``execute(...).fetchone()[0]``."""
    if isinstance(read, cst.Subscript):
        fetch = read.value
        assert isinstance(fetch, cst.Call) and isinstance(fetch.func, cst.Attribute)
        return read.with_changes(value=fetch.with_changes(func=fetch.func.with_changes(value=base)))
    assert isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute)
    return read.with_changes(func=read.func.with_changes(value=base))


# ---------------------------------------------------------------------------------------------------------
# OG103: the blocking lock becomes its try variant, then the result is tested as for OG106

_BLOCKING_TO_TRY = re.compile(r"\bpg_advisory_(xact_)?lock(_shared)?\b")


class _ToTry(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self.changed = False

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        value = _BLOCKING_TO_TRY.sub(lambda m: "pg_try_advisory_" + (m.group(1) or "") + "lock" + (m.group(2) or ""),
                                     updated_node.value)
        if value != updated_node.value:
            self.changed = True
            return updated_node.with_changes(value=value)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        # SQLAlchemy's func.pg_advisory_lock(...)
        if _BLOCKING_TO_TRY.fullmatch(updated_node.value):
            self.changed = True
            return updated_node.with_changes(value=updated_node.value.replace("pg_advisory_", "pg_try_advisory_"))
        return updated_node


def _to_try_then(skip: Callable[..., Optional[Rewrite]]) -> Callable[..., Optional[Rewrite]]:
    def rewrite(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
        if not isinstance(node, cst.SimpleStatementLine):
            return None
        renamer = _ToTry()
        renamed = node.visit(renamer)
        if not renamer.changed or not isinstance(renamed, cst.SimpleStatementLine):
            return None  # the SQL is not written in this statement
        return skip(renamed, fix)

    return rewrite


_SKIPS: Dict[str, Transform] = {
    "after": Transform(cst.SimpleStatementLine, lambda node: True, _skip_after, takes_fix=True,
                       enclosing_statement=True),
    **{kind: Transform(cst.SimpleStatementLine, _accepts_bare_execute, _skip_reading(reader), takes_fix=True,
                       enclosing_statement=True)
       for kind, reader in (("fetchval", "fetchval"), ("fetch-val", "fetch_val"), ("scalar", "scalar"),
                            ("fetchone", "fetchone"))},
}


# ---------------------------------------------------------------------------------------------------------
# OG301: the arithmetic done by the database


def _same_code(statement: cst.CSTNode, code: str) -> bool:
    """The statement is ``code`` (compared as Python, not as text: quotes and spacing may differ)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    try:
        mine = ast.parse(cst.Module(body=[statement.with_changes(leading_lines=[])]).code)
        theirs = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return ast.dump(mine) == ast.dump(theirs)


def _replacement(original: cst.SimpleStatementLine, code: str) -> Optional[cst.SimpleStatementLine]:
    """``code`` as a statement in the original's place, keeping its comments above and beside it."""
    try:
        parsed = cst.parse_statement(code)
    except cst.ParserSyntaxError:
        return None
    if not isinstance(parsed, cst.SimpleStatementLine):
        return None
    return parsed.with_changes(leading_lines=original.leading_lines, trailing_whitespace=original.trailing_whitespace)


def _orm_update_sqlalchemy(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    if not isinstance(node, cst.SimpleStatementLine) or fix is None:
        return None
    codes = statements_in(fix.description)
    update = _replacement(node, codes[0]) if codes else None
    if update is None or ".execute(update(" not in codes[0]:
        return None
    statements: List[cst.BaseStatement] = [update]
    if len(codes) > 1 and ".refresh(" in codes[1]:
        refresh = _replacement(cst.SimpleStatementLine(body=[]), codes[1])
        if refresh is None:
            return None
        statements.append(refresh)
    replaced = statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)
    return Rewrite(replaced, frozenset({"sqlalchemy:update"}))  # type: ignore[arg-type]


def _orm_update_django(node: cst.CSTNode, fix: Optional[Fix] = None) -> Optional[Rewrite]:
    if not isinstance(node, cst.IndentedBlock) or fix is None:
        return None
    codes = statements_in(fix.description)
    if len(codes) != 4 or ".update(" not in codes[0]:
        return None
    update_code, change_code, save_code, then_code = codes
    statements = list(node.body)
    change = next((i for i, s in enumerate(statements) if _same_code(s, change_code)), None)
    if change is None:
        return None
    save = next((i for i in range(change + 1, len(statements)) if _same_code(statements[i], save_code)), None)
    if save is None:
        return None
    update = _replacement(statements[change], update_code)  # type: ignore[arg-type]
    if update is None:
        return None
    statements[change] = update
    if then_code == "nothing":
        del statements[save]
    else:
        refresh = _replacement(statements[save], then_code)  # type: ignore[arg-type]
        if refresh is None:
            return None
        statements[save] = refresh
    return Rewrite(node.with_changes(body=statements), frozenset({"django.db.models:F"}))


TRANSFORMS: Dict[str, Transform] = {
    # OG203: "another replica has the lock" is the normal case, not a warning.
    "log-level-debug": Transform(cst.Call, _accepts_loud_log, _log_at_debug),
    # OG104: hash() of a str is salted per process; crc32 is the same in every replica and fits a bigint.
    "stable-lock-key": Transform(cst.Call, _accepts_hash, _stable_lock_key),
    # OG201: the first replica to ask in the period runs the job; the others return at once.
    "insert-claim-period": Transform(cst.FunctionDef, lambda node: True, _insert_claim, takes_fix=True),
    # OG501: a replica that dies between SETNX and EXPIRE leaves a key that never expires.
    "atomic-set-nx": Transform(cst.Call, _accepts_claim_set, _atomic_set, takes_fix=True),
    # OG501: a lock object without a TTL is held forever by a holder that died.
    "add-keyword": Transform(cst.Call, lambda node: isinstance(node, cst.Call), _add_keyword, takes_fix=True),
    # OG106: every replica ran the work whether or not it got the lock.
    **{f"try-lock-skip-{kind}": skip for kind, skip in _SKIPS.items()},
    # OG103: replicas queued on the lock and each ran the job in turn.
    **{f"lock-to-try-skip-{kind}": Transform(cst.SimpleStatementLine, skip.accepts, _to_try_then(skip.rewrite),
                                             takes_fix=True, enclosing_statement=True)
       for kind, skip in _SKIPS.items()},
    # OG301: two replicas that read, add and write back lose one of the updates; the database adds atomically.
    "orm-update-sqlalchemy": Transform(cst.SimpleStatementLine, lambda node: True, _orm_update_sqlalchemy,
                                       takes_fix=True, enclosing_statement=True),
    "orm-update-django": Transform(cst.IndentedBlock, lambda node: True, _orm_update_django, takes_fix=True,
                                   enclosing_statement=True),
}
