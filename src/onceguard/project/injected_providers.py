"""What a dependency-injection container hands out: ``container.exporter()`` where the container's class
declares ``exporter = providers.Singleton(Exporter, ...)`` gives an ``Exporter``; ``container.tickers()`` with
``tickers = providers.List(exporter, ...)`` gives a list of them.  The providers are library facts
(``knowledge.declared_types``); the container classes are the project's."""
from __future__ import annotations

import ast
import re
from typing import FrozenSet, List, Optional

from ..analysis.facts import ModuleFacts
from ..knowledge import declared_types as known
from . import index as project
from .declared_types import ClassRef, Declared, base_classes

#: How many providers deep a list's members are followed (``List(exporter)`` -> ``Singleton(Exporter)``).
_DEPTH = 3


def _provider(cls: ast.ClassDef, facts: ModuleFacts, name: str, bases: int = 0) -> Optional[ast.Call]:
    """The provider call the container class (or a base of it) binds to ``name`` in its body."""
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call) and any(
                isinstance(target, ast.Name) and target.id == name for target in statement.targets):
            return statement.value
    if bases < 2:
        for base, base_facts in base_classes(cls, facts):
            if base_facts is facts:
                found = _provider(base, base_facts, name, bases + 1)
                if found is not None:
                    return found
    return None


def _made(provider: ast.AST, cls: ast.ClassDef, facts: ModuleFacts, depth: int) -> List[ast.AST]:
    """The class expressions (in ``facts``) of what calling the provider gives: one for an instance provider,
    each member's for a list of providers."""
    if isinstance(provider, ast.Name) and depth < _DEPTH:
        named = _provider(cls, facts, provider.id)
        return _made(named, cls, facts, depth + 1) if named is not None else []
    if not isinstance(provider, ast.Call) or not provider.args:
        return []
    kind = facts.qualify(provider.func) or ""
    if kind in known.INSTANCE_PROVIDERS and isinstance(provider.args[0], (ast.Name, ast.Attribute)):
        return [provider.args[0]]
    if kind in known.LIST_PROVIDERS and depth < _DEPTH:
        return [made for member in provider.args for made in _made(member, cls, facts, depth + 1)]
    return []


#: ``    exporter = providers.Singleton(...)``: a name a container class binds to one of the library's providers (a
#: class body is indented).
_PROVIDER_KINDS = sorted({qualified.rsplit(".", 1)[-1] for qualified in known.INSTANCE_PROVIDERS | known.LIST_PROVIDERS})
_PROVIDER_BINDING = re.compile(
    rb"^[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?:[A-Za-z_][A-Za-z0-9_.]*\.)?(?:"
    + b"|".join(kind.encode("ascii") for kind in _PROVIDER_KINDS) + rb")\(", re.MULTILINE)


def provider_names(facts: ModuleFacts) -> FrozenSet[str]:
    """The names the project's container classes may bind to a provider, read off the text of the modules
    that name the library: only a call of such a name on a container is worth resolving (answered once per
    module)."""
    return facts.cached("injection:provider-names", _provider_names)


def _provider_names(facts: ModuleFacts) -> FrozenSet[str]:
    if not may_provide(facts):
        return frozenset()
    if not facts.context.cross_file:
        texts = ["\n".join(facts.lines).encode("utf-8", "replace")]
    else:
        root = project.search_root(facts)
        texts = [project.read_bytes(path) for path in project.files_mentioning(known.INJECTION_MODULE, root)]
    return frozenset(match.group(1).decode("ascii") for text in texts for match in _PROVIDER_BINDING.finditer(text))


def may_provide(facts: ModuleFacts) -> bool:
    """The project names a dependency-injection library at all: the cheap test before a container is looked for
    (asked for every call whose value's type is looked up: answered once per module)."""
    return facts.cached("injection:may-provide", _names_an_injection_library)


def _names_an_injection_library(facts: ModuleFacts) -> bool:
    if not facts.context.cross_file:
        return any(known.INJECTION_MODULE in line for line in facts.lines)
    return bool(project.files_mentioning(known.INJECTION_MODULE, project.search_root(facts)))


def provided(owners: List[ClassRef], attr: str) -> Optional[Declared]:
    """What ``container.attr()`` gives, for a container of one of ``owners``: an instance (``Declared`` of the
    class), or ``list[...]`` of what the list provider's members make; None otherwise."""
    for cls, facts in owners:
        provider = _provider(cls, facts, attr)
        if provider is None:
            continue
        kind = facts.qualify(provider.func) or ""
        if kind in known.INSTANCE_PROVIDERS:
            made = _made(provider, cls, facts, 0)
            return Declared(made[0], facts) if made else None
        if kind in known.LIST_PROVIDERS:
            made = _made(provider, cls, facts, 0)
            if not made:
                return None
            member = made[0]
            for other in made[1:]:  # ``list[A | B]``: each member may be either
                member = ast.BinOp(left=member, op=ast.BitOr(), right=other)
            return Declared(ast.Subscript(value=ast.Name(id="list", ctx=ast.Load()), slice=member, ctx=ast.Load()),
                            facts)
    return None
