"""A program's own command-line arguments, as code reads them and as the deployment files hand them.

``python -m tally clock`` in one workload and ``python -m tally web`` in another run one program in two
roles: ``sys.argv[1]``, or the first positional argument an ``argparse`` parser declares
(``parser.add_argument("role")`` ... ``parser.parse_args().role``), or the word after an option it declares
(``--role clock``, else the option's default), is the word each launch gives.  Code that
runs only when that word has some value runs only in the launches that give it, however many replicas the
others have.

A read is recognised in the program's own module (its ``__main__`` block, ``__main__.py``), written there or
handed on: a name bound once to it, or a parameter of a function that every call the project shows hands it
(``asyncio.run(main(parser.parse_args().role))`` and ``def main(role)``).  What the deployment hands is read
off each launch that runs the program; a launch that gives no such word, or one an option may stand before,
gives an unknown value.
"""
from __future__ import annotations

import ast
import os
from typing import List, Optional, Sequence, Tuple

from ..analysis.facts import ModuleFacts
from ..analysis.handed import argument_for, parameter_defaults, parameter_names
from . import deployment
from . import index as project

#: The key prefix of a program argument (``argv:<kind><position>@<program file>``).
PREFIX = "argv:"
#: ``sys.argv[N]``: the N-th word as typed, options included.
_RAW = "raw"
#: the N-th positional argument an ``argparse`` parser declares: the N-th word when no option stands before it.
_POSITIONAL = "positional"
#: an option an ``argparse`` parser declares (``--role worker``), by the name it is read under (``args.role``).
_OPTION = "option:"

_ARGV = "sys.argv"
_PARSER = "argparse.ArgumentParser"
_PARSE = "parse_args"
_DECLARE = "add_argument"
#: Parser methods that add positional words the declarations do not show (a sub-command's name).
_MORE_WORDS = frozenset({"add_subparsers", "add_mutually_exclusive_group", "add_argument_group"})
#: How many names and parameters a read is followed through, back to the program's own code.
_MAX_HOPS = 6


def may_read_arguments(facts: ModuleFacts) -> bool:
    """The module is a program and its text reads its command line (checked before anything is resolved)."""
    def build(_facts: ModuleFacts) -> bool:
        from .startup import is_main_guard

        if not facts.context.cross_file or not facts.context.path:
            return False
        program = facts.context.filename == "__main__.py" or any(
            isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in facts.tree.body)
        text = "\n".join(facts.lines)
        return program and (_ARGV in text or _PARSE in text)

    return facts.cached("program-arguments:may-read", build)


def argument_key(node: ast.AST, facts: ModuleFacts) -> Optional[str]:
    """The key of the program argument ``node`` reads (``sys.argv[1]``, ``args.role``, a name holding either),
    or None."""
    if not isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) or not may_read_arguments(facts):
        return None
    read = _read(node, facts, 0)
    if read is None:
        return None
    kind, position = read
    return f"{PREFIX}{kind}{position}@{os.path.abspath(facts.context.path)}"


def _read(node: ast.AST, facts: ModuleFacts, hops: int) -> Optional[Tuple[str, object]]:
    origin = _origin(node, facts, hops)
    if isinstance(origin, ast.Subscript) and (facts.qualify(origin.value) or "") == _ARGV:
        index = origin.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool) \
                and index.value >= 1:
            return _RAW, index.value
        return None
    if isinstance(origin, ast.Attribute):
        parsed = _origin(origin.value, facts, hops)
        if isinstance(parsed, ast.Call) and isinstance(parsed.func, ast.Attribute) and parsed.func.attr == _PARSE \
                and _parses_command_line(parsed, facts):
            position = _positional(parsed.func.value, origin.attr, facts)
            if position is not None:
                return _POSITIONAL, position
            if _option(parsed.func.value, origin.attr, facts) is not None:
                return _OPTION, origin.attr
    return None


def _parses_command_line(parse: ast.Call, facts: ModuleFacts) -> bool:
    """``parser.parse_args()``, or ``parser.parse_args(argv)`` with ``argv`` a parameter left at its default of
    None by every call outside the tests (``def main(argv=None)`` ... ``main()``): argparse reads ``sys.argv``."""
    from .fixed_arguments import callers_of

    if parse.keywords or len(parse.args) > 1:
        return False
    if not parse.args:
        return True
    handed = parse.args[0]
    function = facts.enclosing_function(parse)
    if not isinstance(handed, ast.Name) or function is None or _rebinds(function, handed.id):
        return False
    default = parameter_defaults(function).get(handed.id)
    if not (isinstance(default, ast.Constant) and default.value is None):
        return False
    calls = [(call, other) for call, other in callers_of(function, facts) if not other.context.is_test]
    return bool(calls) and all(
        not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg is not None for k in call.keywords)
        and (argument_for(call, function, handed.id) is None or (
            isinstance(argument_for(call, function, handed.id), ast.Constant)
            and argument_for(call, function, handed.id).value is None))
        for call, _ in calls)


def _origin(expr: ast.AST, facts: ModuleFacts, hops: int) -> Optional[ast.AST]:
    """What ``expr`` holds: itself, the one value a name is bound to, or what every caller hands a parameter (the
    same at each: callers in the program's own module only, since the argument is that program's)."""
    from .bindings import Bindings
    from .fixed_arguments import callers_of

    if not isinstance(expr, ast.Name):
        return expr
    if hops >= _MAX_HOPS:
        return None
    bindings = Bindings.of_module(facts)
    scope, values = bindings.scope_of(expr)
    if values:
        origin = bindings.origin(expr)
        return _origin(origin, facts, hops + 1) if origin is not None and origin is not expr else None
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or expr.id not in parameter_names(scope, receiver=False) or _rebinds(scope, expr.id):
        return None
    calls = [(call, other) for call, other in callers_of(scope, facts) if not other.context.is_test]
    if not calls or any(other is not facts for _, other in calls):
        return None
    origins = []
    for call, _ in calls:
        handed = argument_for(call, scope, expr.id)
        origin = _origin(handed, facts, hops + 1) if handed is not None else None
        if origin is None:
            return None
        origins.append(origin)
    # one value handed by every caller (``args = parser.parse_args()`` handed twice), or the same read at each
    if all(origin is origins[0] for origin in origins):
        return origins[0]
    reads = {_read(origin, facts, hops + 1) for origin in origins}
    return origins[0] if len(reads) == 1 and None not in reads else None


def _rebinds(function: ast.AST, name: str) -> bool:
    """``function`` binds ``name`` again in its body: the parameter does not keep what the callers handed."""
    from ..analysis.facts import walk_no_nested_functions

    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
               for node in walk_no_nested_functions(function))


def _positional(parser: ast.AST, name: str, facts: ModuleFacts) -> Optional[int]:
    """The place of ``name`` among the positional arguments the parser declares (1 for the first), when the
    parser is made here (``argparse.ArgumentParser(...)``, bound once) and nothing but plain one-word
    positionals stand before it."""
    from .bindings import Bindings

    made = Bindings.of_module(facts).origin(parser) if isinstance(parser, ast.Name) else None
    if not (isinstance(parser, ast.Name) and isinstance(made, ast.Call) and (facts.callee(made) or "") == _PARSER):
        return None
    if any(keyword.arg == "parents" for keyword in made.keywords):
        return None  # (a parent parser's positionals come first, declared elsewhere)
    scope = facts.enclosing_function(parser)
    position = 0
    for call in sorted((c for c in facts.calls if isinstance(c.func, ast.Attribute)
                        and isinstance(c.func.value, ast.Name) and c.func.value.id == parser.id
                        and facts.enclosing_function(c) is scope), key=lambda c: (c.lineno, c.col_offset)):
        if call.func.attr in _MORE_WORDS:
            return None
        if call.func.attr != _DECLARE or not call.args:
            continue
        first = call.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return None
        if first.value.startswith("-"):
            continue
        if any(keyword.arg in ("nargs", "dest", "action") for keyword in call.keywords):
            return None  # (several words, none, or another name: the place is not one word's)
        position += 1
        if first.value == name:
            return position
    return None


def _option(parser: ast.AST, name: str, facts: ModuleFacts) -> Optional[Tuple[Tuple[str, ...], Optional[str]]]:
    """(its option strings, its default when written as a string) of the option the parser made here declares
    under ``name`` (``add_argument("-r", "--role", default="worker")`` for ``role``): one that takes one word
    and is declared once; None otherwise."""
    from .bindings import Bindings

    made = Bindings.of_module(facts).origin(parser) if isinstance(parser, ast.Name) else None
    if not (isinstance(parser, ast.Name) and isinstance(made, ast.Call) and (facts.callee(made) or "") == _PARSER):
        return None
    if any(keyword.arg in ("parents", "allow_abbrev", "prefix_chars") for keyword in made.keywords):
        return None  # (declared elsewhere too, or spelled otherwise on the command line)
    scope = facts.enclosing_function(parser)
    found = []
    for call in facts.calls:
        if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id == parser.id and facts.enclosing_function(call) is scope):
            continue
        if call.func.attr in _MORE_WORDS:
            return None
        if call.func.attr != _DECLARE or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        strings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(strings) != len(call.args) or not strings or not all(w.startswith("-") for w in strings):
            continue
        keywords = {k.arg: k.value for k in call.keywords}
        dest = keywords.get("dest")
        declared = dest.value if isinstance(dest, ast.Constant) else next(
            (w.lstrip("-") for w in strings if w.startswith("--")), strings[0].lstrip("-")).replace("-", "_")
        if declared != name:
            continue
        kind = keywords.get("type")
        if any(k in keywords for k in ("nargs", "action", "const")) or (
                kind is not None and not (isinstance(kind, ast.Name) and kind.id == "str")) or (
                dest is not None and not isinstance(dest, ast.Constant)):
            return None  # (no word, several, or a value made of the word: not the word itself)
        default = keywords.get("default")
        found.append((tuple(strings), default.value if isinstance(default, ast.Constant)
                      and isinstance(default.value, str) else None))
    return found[0] if len(found) == 1 else None


def _option_word(words: Sequence[str], options: Tuple[str, ...], default: Optional[str]) -> Optional[str]:
    """The word a launch gives the option (the last time it is given, as ``--role x`` or ``--role=x``), its
    default when the launch does not give it, None when a word may be it in some other spelling."""
    given = default
    for index, word in enumerate(words):
        if word == "--":
            break
        option, equals, inline = word.partition("=")
        if option in options:
            given = inline if equals else (words[index + 1] if index + 1 < len(words) else None)
        elif word.startswith("--") and any(o.startswith(option) for o in options):
            return None  # (an abbreviation argparse accepts)
    return given


def handed_words(key: str, facts: ModuleFacts) -> List[Tuple[Optional[str], deployment.Step]]:
    """(the word, the launch's step) for each deployment launch that runs the program ``key`` is read in: the
    word is None when the launch gives none at that place, or an option may stand before it."""
    kind_position, _, path = key[len(PREFIX):].partition("@")
    top = deployment.project_directory(path, facts.config, project.search_root(facts))
    if kind_position.startswith(_OPTION):
        return _option_words(kind_position[len(_OPTION):], path, top, facts)
    kind = _RAW if kind_position.startswith(_RAW) else _POSITIONAL
    position = int(kind_position[len(kind):])
    found: List[Tuple[Optional[str], deployment.Step]] = []
    for step in deployment.run_by(path, facts.config, top):
        words = step.arguments()
        known = len(words) >= position and (kind == _RAW or not any(w.startswith("-") for w in words[:position]))
        found.append((words[position - 1] if known else None, step))
    return found


def _option_words(name: str, path: str, top: str, facts: ModuleFacts) -> List[Tuple[Optional[str], deployment.Step]]:
    program = project.module_facts(path, facts.config)
    parsers = [] if program is None else [
        call.func.value for call in program.calls if isinstance(call.func, ast.Attribute)
        and call.func.attr == _PARSE and isinstance(call.func.value, ast.Name)]
    declared = {_option(parser, name, program) for parser in parsers} if program is not None else set()
    known = next(iter(declared)) if len(declared) == 1 else None
    found: List[Tuple[Optional[str], deployment.Step]] = []
    for step in deployment.run_by(path, facts.config, top):
        found.append((_option_word(step.arguments(), *known) if known is not None else None, step))
    return found


def program_facts(key: str, facts: ModuleFacts) -> Optional[ModuleFacts]:
    """The module of the program ``key`` is read in."""
    path = key[len(PREFIX):].partition("@")[2]
    return project.module_facts(path, facts.config) if path else None

