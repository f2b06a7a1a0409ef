"""Data races between replicas: a value read, changed in Python and written back (OG301); the row
pickups of OG302 are in ``row_pickup``, which shares the chain and loader helpers here.  reference/frameworks.md §6.

A lost update needs two writers.  The load, the change and the write are found within one function (or a
model method and its caller); the objects must come from a visible ORM loader, a SQL text the module sends
or a store client whose origin is known.  Arithmetic done by the database (``F("n") + 1``, ``Model.n + 1``,
``SET n = n + 1``, ``INCR``) never reaches these rules as a Python value.

- ``loads``: chains and ORM loaders (shared with OG302)
- ``flow``: how a value read flows within a function
- ``changes``: instance fields changed from their own value, and the write that stores them
- ``returned_loads``: a row a project function loads and returns, read as that load at the call
- ``stores``: Redis and cache read-modify-write
- ``sql_reads``: SELECT then UPDATE with a Python value
- ``kept_copies``: a column's value kept in memory since a SELECT, changed there and written back by an UPDATE
- ``rule``: the OG301 rule
"""
from __future__ import annotations

from .loads import (
    Loaded, _operator_only, _session_matches, _single_process, chain, django_instance_loader, django_queryset,
    function_nodes, later, names_in, sa_source, sa_statement, target_names, unwrap)
from .flow import plain_name
from .sql_reads import _FETCH, _sql_by_function, _tables
from .rule import ReadModifyWrite

__all__ = ["Loaded", "ReadModifyWrite", "_FETCH", "_operator_only", "_session_matches", "_single_process",
           "_sql_by_function", "_tables", "chain", "django_instance_loader", "django_queryset", "function_nodes",
           "later", "names_in", "plain_name", "sa_source", "sa_statement", "target_names", "unwrap"]
