"""A project class that keeps a container of its own and answers ``key in instance`` is that container to
whoever holds it: a long-lived holder that skips a key found in it and marks the key after work that leaves
the process keeps a "handled" ledger each process has to itself (OG608), whatever the marking method is
called, whether the instance is handed to the holder or made at module level."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEDGER = """
    from collections import OrderedDict


    class HandledIds:
        def __init__(self, limit: int) -> None:
            self._ids = OrderedDict()
            self._limit = limit

        def __contains__(self, key: str) -> bool:
            return key in self._ids

        def {mark}(self, key: str) -> None:
            self._ids[key] = None
            while len(self._ids) > self._limit:
                self._ids.popitem(last=False)
    """

RECEIVER = """
    import requests

    from {ledger_module} import HandledIds


    class Receiver:
        def __init__(self, handled: HandledIds) -> None:
            self._handled = handled

        def receive(self, delivery: dict) -> str:
            key = delivery["id"]
            if key in self._handled:
                return "again"
            requests.post("https://stock.example/reserve", json=delivery, timeout=5)
            self._handled.{mark}(key)
            return "done"
    """

APP = """
    from flask import Flask, request

    from {ledger_module} import HandledIds
    from .receiver import Receiver

    app = Flask(__name__)
    {made}


    @app.post("/deliveries")
    def deliveries():
        return {{"outcome": {call}}}
    """

HELD = ('receiver = Receiver(HandledIds(10_000))', 'receiver.receive(request.get_json())')
PER_REQUEST = ('', 'Receiver(HandledIds(10_000)).receive(request.get_json())')


def _project(tmp_path, mark="add", made=HELD, ledger_module=".ledger"):
    write(tmp_path, {"stock/__init__.py": "", "stock/ledger.py": LEDGER.format(mark=mark),
                     "stock/receiver.py": RECEIVER.format(mark=mark, ledger_module=ledger_module),
                     "stock/app.py": APP.format(made=made[0], call=made[1], ledger_module=ledger_module)})


def test_a_wrapped_ledger_handed_to_a_long_lived_receiver(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "stock/receiver.py", codes=("OG608",)) == [(9, "OG608")]


def test_the_marking_method_may_have_any_name_and_the_import_any_spelling(tmp_path):
    _project(tmp_path, mark="remember", ledger_module="stock.ledger")
    assert findings(tmp_path, "stock/receiver.py", codes=("OG608",)) == [(9, "OG608")]


def test_a_receiver_made_for_each_request_keeps_nothing(tmp_path):
    _project(tmp_path, made=PER_REQUEST)
    assert findings(tmp_path, "stock/receiver.py", codes=("OG608",)) == []


MODULE_LEVEL = """
    import requests

    from .ledger import HandledIds

    _handled = HandledIds(10_000)


    def receive(delivery: dict) -> str:
        if delivery["id"] in _handled:
            return "again"
        requests.post("https://stock.example/reserve", json=delivery, timeout=5)
        _handled.add(delivery["id"])
        return "done"
    """

MODULE_APP = """
    from flask import Flask, request

    from .receiver import receive

    app = Flask(__name__)


    @app.post("/deliveries")
    def deliveries():
        return {"outcome": receive(request.get_json())}
    """


def test_a_wrapped_ledger_made_at_module_level(tmp_path):
    write(tmp_path, {"stock/__init__.py": "", "stock/ledger.py": LEDGER.format(mark="add"),
                     "stock/receiver.py": MODULE_LEVEL, "stock/app.py": MODULE_APP})
    assert findings(tmp_path, "stock/receiver.py", codes=("OG608",)) == [(6, "OG608")]


def test_a_class_without_membership_is_no_container(tmp_path):
    plain = LEDGER.format(mark="add").replace("__contains__", "holds")
    write(tmp_path, {"stock/__init__.py": "", "stock/ledger.py": plain,
                     "stock/receiver.py": MODULE_LEVEL.replace(' in _handled', ' in _handled.holds_all()'),
                     "stock/app.py": MODULE_APP})
    assert findings(tmp_path, "stock/receiver.py", codes=("OG608",)) == []
