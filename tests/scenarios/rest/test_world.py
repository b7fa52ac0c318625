"""The parts of a derived scenario that need no service: resources named by their paths, drawn values, and the
masking of values the service makes up."""

from __future__ import annotations

import random

from scenarios.rest.model import draw, resource, template_match
from scenarios.rest.schema import Schema
from scenarios.rest.world import ERASED, Masker


def test_a_resource_is_its_path_with_parameters_unnamed():
    path = "/v1/buckets/{bucket_id}/collections/{id}"
    assert resource(path) == "/v1/buckets/{}/collections/{}"
    assert resource(path, 0) == "/v1/buckets/{}"
    assert resource("/v1/buckets/{id}/collections/{cid}/records", 1) == resource(path)
    assert template_match(path, "/v1/buckets/a/collections/b") == ["a", "b"]
    assert template_match(path, "/v1/buckets/a/groups/b") is None


def test_values_are_drawn_from_the_schema_and_the_seed():
    schema = Schema(type="object", properties={"kind": Schema(type="string", enum=("a", "b")),
                                              "size": Schema(type="integer", minimum=5, maximum=6),
                                              "mail": Schema(type="string", format="email")})
    one = draw(schema, random.Random(3))
    assert one == draw(schema, random.Random(3))
    assert one["kind"] in ("a", "b") and one["size"] in (5, 6) and one["mail"].endswith("@example.org")
    assert set(draw(schema, random.Random(3), ("kind",))) == {"kind"}


def test_made_up_values_are_renamed_in_the_order_they_were_made_and_times_erased():
    mask = Masker(["Xq81aa", "p0"], ("data.stamp",), keep=frozenset({"lemon"}))
    plain = {"data": {"id": "p0", "other": "Xq81aa", "stamp": "s-1", "when": 1795800175643,
                      "at": "2026-11-27T17:00:00Z", "uid": "123e4567-e89b-12d3-a456-426614174000",
                      "path": "/v1/buckets/Xq81aa/x", "name": "lemon", "rank": 37}}
    assert mask(plain) == {"data": {
        "at": ERASED, "id": "<made-2>", "name": "lemon", "other": "<made-1>", "path": "/v1/buckets/<made-1>/x",
        "rank": 37, "stamp": "<made-3>", "uid": "<made-4>", "when": ERASED}}
    # another run, other values made in the same order: the same data
    again = Masker(["Zz99bb", "q1"], ("data.stamp",))
    assert again({"a": "q1", "b": "Zz99bb"}) == Masker(["Xq81aa", "p0"], ())({"a": "p0", "b": "Xq81aa"})
    assert Masker([], ("data.stamp",), keep=frozenset({"lemon"}))({"data": {"stamp": "lemon"}}) == \
        {"data": {"stamp": "lemon"}}, "a value the client chose is never renamed"


def test_the_populations_values_are_the_seeds_whichever_seed_came_before(tmp_path):
    from scenarios.rest.model import Model
    from scenarios.rest.openapi import read
    from scenarios.rest.servicefile import load
    from tests.scenarios.rest.conftest import FAKE_SPEC, write_service

    file = load(write_service(tmp_path, arrays={"population": [
        {"method": "POST", "path": "/items/{draw:word@a}"}, {"method": "GET", "path": "/items/{draw:hex:6}"}]}))
    operations = read(FAKE_SPEC)

    def fresh(seed: int) -> list:
        return Model(file, operations).population_values(seed)

    model = Model(file, operations)
    assert fresh(1) != fresh(2)  # the seeds draw different values
    for seed in (1, 2, 1, 1, 2):
        assert model.population_values(seed) == fresh(seed)
