"""PUT and PATCH bodies that leave out a field the resource holds (scenarios/rest/fields.py), on schemas shaped like
Kinto's (an envelope `data` beside `permissions`) and flat ones."""

from __future__ import annotations

import random

from scenarios.rest import fields
from scenarios.rest.schema import Schema

ARRAY = Schema(type="array", items=Schema(type="string"))
FREE = Schema(type="object")  # free-form: `draw` gives two of title, note, label
ENVELOPE = Schema(type="object", properties={"data": FREE, "permissions": Schema(
    type="object", properties={"read": ARRAY, "write": ARRAY})})
MEMBERS = Schema(type="object", properties={"data": Schema(type="object", properties={"members": ARRAY})})


def test_leaves_are_the_paths_of_the_fields():
    assert fields.leaves({"data": {"title": "a", "tags": ["x"], "sub": {}}, "n": 1}) == [
        ("data", "title"), ("data", "tags"), ("n",)]
    assert fields.leaves("word") == [] and fields.leaves({}) == []


def test_untouched_is_judged_where_a_patch_merges():
    body = {"data": {"title": "b"}, "permissions": {"write": ["u"]}}
    assert fields.untouched(body, ("data", "rank"))  # one level down, inside the envelope
    assert fields.untouched(body, ("permissions", "read"))
    assert not fields.untouched(body, ("data", "title"))
    assert not fields.untouched({"permissions": {}}, ("data", "title"))  # a PUT without `data` may keep it
    assert fields.untouched({"name": "x"}, ("age",))  # a flat resource: the top level
    assert not fields.untouched({"data": "text"}, ("data", "title"))


def test_after_a_put_only_the_body_remains_after_a_patch_the_untouched_too():
    known = [("data", "rank"), ("data", "title"), ("data", "sub", "x")]
    body = {"data": {"title": "b", "sub": {"y": 1}}}
    assert fields.after(known, body, "PUT") == [("data", "sub", "y"), ("data", "title")]
    # `data.sub` is replaced whole (merged one level down); `data.rank` stays
    assert fields.after(known, body, "PATCH") == [("data", "rank"), ("data", "sub", "y"), ("data", "title")]


def test_separate_leaves_out_a_held_field_of_every_drawn_body():
    from scenarios.rest.model import draw

    known = [("data", "title"), ("data", "note"), ("data", "label")]  # every key a free-form draw can give
    assert fields.separable(ENVELOPE, None, known)
    for seed in range(50):
        rng = random.Random(seed)
        body = draw(ENVELOPE, rng)
        assert fields.separate(body, ENVELOPE, known, rng)
        assert any(fields.untouched(body, p) for p in known) and body["data"]  # one left out, the rest sent


def test_no_body_tells_apart_a_resource_with_no_field_or_only_a_sole_key():
    assert not fields.separable(ENVELOPE, None, [])  # nothing held: a PUT and a PATCH leave the same state
    assert not fields.separable(MEMBERS, None, [("data", "members")])  # `members` is all `data` may hold
    body = {"data": {"members": ["a"]}}
    assert not fields.separate(body, MEMBERS, [("data", "members")], random.Random(0))
    assert body == {"data": {"members": ["a"]}}
    required = Schema(type="object", properties={"a": Schema(type="string"), "b": Schema(type="string")},
                      required=("a",))
    assert not fields.separable(required, None, [("a",)]) and fields.separable(required, None, [("b",)])
