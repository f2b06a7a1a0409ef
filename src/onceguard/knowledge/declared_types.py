"""How annotations spell a value's class, as data for ``project.declared_types``.

The names are ``typing``'s, ``collections.abc``'s and the builtins' (last part of a dotted name), plus
SQLAlchemy's ``Mapped``: a mapped attribute holds what its parameter names.
"""
from __future__ import annotations

from typing import FrozenSet

#: ``Wrapper[T]`` holds a ``T``: the wrapper says something of the name, not of the value's class.
WRAPPERS: FrozenSet[str] = frozenset({
    "Optional", "Annotated", "Mapped", "ClassVar", "Final", "Required", "NotRequired", "ReadOnly", "InitVar",
})
#: Modules of special forms: ``Any``, ``Self``, a bare ``Final`` name no class of values.
TYPING_MODULES = ("typing.", "typing_extensions.", "collections.abc.")
#: ``Union[A, B]``: the value is one of them.
UNIONS: FrozenSet[str] = frozenset({"Union"})
#: Containers whose iteration yields their first parameter.
ITERABLES: FrozenSet[str] = frozenset({
    "list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "AsyncIterable", "AsyncIterator",
    "Collection", "Reversible", "set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet", "deque",
    "Deque", "Generator", "AsyncGenerator", "KeysView", "ValuesView",
})
#: Containers whose ``x[i]`` is their first parameter.
SEQUENCES: FrozenSet[str] = frozenset({"list", "List", "Sequence", "MutableSequence", "deque", "Deque"})
#: Containers of ``K`` to ``V``: iteration yields ``K``; ``m[k]``, ``m.get(k)``, ``m.pop(k)`` give ``V``.
MAPPINGS: FrozenSet[str] = frozenset({
    "dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "DefaultDict", "OrderedDict", "ChainMap",
})
#: ``tuple[T, ...]``: every item a ``T``.
TUPLES: FrozenSet[str] = frozenset({"tuple", "Tuple"})
#: ``Callable[[args], R]``: calling it gives an ``R``.
CALLABLES: FrozenSet[str] = frozenset({"Callable"})
#: Methods of a mapping that hand back one of its values.
MAPPING_VALUE_METHODS: FrozenSet[str] = frozenset({"get", "pop", "setdefault"})

#: Classes outside the project whose instances live in the process's memory: what their methods change
#: (a Prometheus metric counted, an in-process queue filled) no other replica sees.
PROCESS_LOCAL_CLASSES: FrozenSet[str] = frozenset({
    "prometheus_client.Counter", "prometheus_client.Gauge", "prometheus_client.Histogram",
    "prometheus_client.Summary", "prometheus_client.Info", "prometheus_client.Enum",
    "prometheus_client.metrics.Counter", "prometheus_client.metrics.Gauge",
    "prometheus_client.metrics.Histogram", "prometheus_client.metrics.Summary",
    "asyncio.Queue", "asyncio.Event", "asyncio.Lock", "asyncio.Condition", "asyncio.Semaphore",
    "queue.Queue", "queue.SimpleQueue", "threading.Event", "threading.Lock", "threading.RLock",
    "threading.Condition", "threading.Semaphore", "collections.deque", "collections.OrderedDict",
    "collections.Counter", "collections.defaultdict",
    "asyncio.BoundedSemaphore", "asyncio.PriorityQueue", "asyncio.LifoQueue", "threading.BoundedSemaphore",
    "anyio.Semaphore", "anyio.Lock", "anyio.Event", "anyio.Condition", "anyio.CapacityLimiter",
    "anyio.CancelScope", "anyio.abc.TaskGroup", "asyncio.TaskGroup", "asyncio.Task", "asyncio.Future",
    # OpenTelemetry's instruments: recorded in the process, exported by each replica's own reader
    "opentelemetry.metrics.Counter", "opentelemetry.metrics.UpDownCounter", "opentelemetry.metrics.Histogram",
    "opentelemetry.metrics.Gauge", "opentelemetry.metrics._Gauge",
})

#: The dependency-injection library whose containers the project may declare.
INJECTION_MODULE = "dependency_injector"
#: Dependency-injection providers declared in a container class's body (``exporter = providers.Singleton(
#: Exporter, ...)``): calling ``container.exporter()`` gives what the provider's first argument makes.
INSTANCE_PROVIDERS: FrozenSet[str] = frozenset({
    f"dependency_injector.providers.{name}" for name in (
        "Singleton", "Factory", "ThreadSafeSingleton", "ThreadLocalSingleton", "ContextLocalSingleton",
        "DelegatedSingleton", "DelegatedFactory", "DelegatedThreadSafeSingleton", "DelegatedThreadLocalSingleton",
    )
})
#: ``providers.List(a, b)``: calling it gives a list of what each provider it is handed gives.
LIST_PROVIDERS: FrozenSet[str] = frozenset({"dependency_injector.providers.List"})
