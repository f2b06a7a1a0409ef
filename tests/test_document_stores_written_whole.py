"""OG301: documents read whole, changed in Python and written back whole, in stores beside the SQL databases.

RedisJSON (``r.json().get`` then ``r.json().set(key, "$", doc)``), DynamoDB (``get_item`` through a helper, then
``put_item``), Firestore (``ref.get().to_dict()`` then ``ref.set({...})``), Elasticsearch (``get`` then ``index``).
Beside each, the store's own atomic change (``numincrby``, ``update_item`` with an expression, ``Increment``, a
scripted update), which is not reported.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

REDIS_JSON = """\
    from redis.asyncio import Redis

    r = Redis()


    async def react(post_id: str, kind: str) -> None:
        key = f"post:{post_id}"
        {body}
"""


@pytest.mark.parametrize("body, expected", [
    ('doc = await r.json().get(key) or {"total": 0}\n        doc["total"] += 1\n'
     '        await r.json().set(key, "$", doc)', [(10, "OG301")]),
    ('await r.json().numincrby(key, "$.total", 1)', []),
])
def test_a_redis_json_document_set_back(tmp_path, body, expected):
    write(tmp_path, {"reactions/__init__.py": "", "reactions/store.py": REDIS_JSON.replace("{body}", body)})
    assert findings(tmp_path, "reactions/store.py", codes=("OG301",)) == expected


DYNAMO_TABLE = """\
    import boto3

    def wallets():
        return boto3.resource("dynamodb").Table("wallets")
"""

DYNAMO = """\
    from wallet.db import wallets


    def _load(table, wallet_id: str) -> dict:
        return table.get_item(Key={"id": wallet_id})["Item"]


    def debit(wallet_id: str, amount) -> None:
        table = wallets()
        {body}
"""


@pytest.mark.parametrize("body, expected", [
    ('item = _load(table, wallet_id)\n        item["balance"] -= amount\n        table.put_item(Item=item)',
     [(12, "OG301")]),
    ('table.update_item(Key={"id": wallet_id}, UpdateExpression="SET balance = balance - :a",\n'
     '                          ConditionExpression="balance >= :a", ExpressionAttributeValues={":a": amount})', []),
])
def test_a_dynamodb_item_put_back(tmp_path, body, expected):
    write(tmp_path, {"wallet/__init__.py": "", "wallet/db.py": DYNAMO_TABLE,
                     "wallet/ledger.py": DYNAMO.replace("{body}", body)})
    assert findings(tmp_path, "wallet/ledger.py", codes=("OG301",)) == expected


FIRESTORE = """\
    from google.cloud import firestore

    db = firestore.AsyncClient()


    async def count_click(slug: str) -> None:
        ref = db.collection("links").document(slug)
        {body}
"""


@pytest.mark.parametrize("body, expected", [
    ('doc = (await ref.get()).to_dict()\n        await ref.set({**doc, "clicks": doc["clicks"] + 1})',
     [(9, "OG301")]),
    ('await ref.update({"clicks": firestore.Increment(1)})', []),
])
def test_a_firestore_document_set_back(tmp_path, body, expected):
    write(tmp_path, {"links/__init__.py": "", "links/store.py": FIRESTORE.replace("{body}", body)})
    assert findings(tmp_path, "links/store.py", codes=("OG301",)) == expected


ELASTIC = """\
    from elasticsearch import AsyncElasticsearch

    es = AsyncElasticsearch("http://search:9200")


    async def record_view(product_id: str) -> None:
        {body}
"""


@pytest.mark.parametrize("body, expected", [
    ('doc = (await es.get(index="stats", id=product_id))["_source"]\n        doc["views"] += 1\n'
     '        await es.index(index="stats", id=product_id, document=doc)', [(9, "OG301")]),
    ('await es.update(index="stats", id=product_id, script={"source": "ctx._source.views += 1"},\n'
     '                        retry_on_conflict=5)', []),
])
def test_an_elasticsearch_document_indexed_again(tmp_path, body, expected):
    write(tmp_path, {"stats/__init__.py": "", "stats/views.py": ELASTIC.replace("{body}", body)})
    assert findings(tmp_path, "stats/views.py", codes=("OG301",)) == expected
