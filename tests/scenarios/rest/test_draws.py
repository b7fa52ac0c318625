"""The {draw:...} placeholders: deterministic per seed, typed when alone, shared by label, refused when malformed."""

from __future__ import annotations

import random

import pytest

from scenarios.rest.draws import WORDS, DrawError, check, expand


def test_the_same_seed_draws_the_same_values_and_another_seed_others():
    value = {"path": "/b/{draw:word}/{draw:hex:8}", "n": ["{draw:int:1:1000000}"]}
    first = expand(value, random.Random(7))
    assert first == expand(value, random.Random(7))
    assert first != expand(value, random.Random(8))


def test_kinds_and_types():
    drawn = expand({"w": "{draw:word}", "n": "{draw:int:3:3}", "c": "{draw:choice:x,y}", "h": "{draw:hex:5}",
                    "in_text": "n={draw:int:4:4}", "fixed": 12}, random.Random(0))
    assert drawn["w"] in WORDS
    assert drawn["n"] == 3  # a placeholder alone is its value: an integer
    assert drawn["c"] in ("x", "y")
    assert len(drawn["h"]) == 5 and set(drawn["h"]) <= set("0123456789abcdef")
    assert drawn["in_text"] == "n=4" and drawn["fixed"] == 12


def test_a_label_is_drawn_once_per_test_case():
    labels: dict = {}
    rng = random.Random(1)
    first = expand("/buckets/{draw:word@b}", rng, labels)
    again = expand(["/buckets/{draw:@b}/x", "{draw:word@b}"], rng, labels)
    name = first.rsplit("/", 1)[1]
    assert again == [f"/buckets/{name}/x", name]


@pytest.mark.parametrize("text, message", [
    ("{draw:colour}", "unknown kind 'colour'"),
    ("{draw:int:1}", "int takes 2 argument(s)"),
    ("{draw:int:9:1}", "the lower bound is above the upper one"),
    ("{draw:int:a:b}", "int takes whole numbers"),
    ("{draw:hex:0}", "hex takes a length of at least 1"),
    ("{draw:choice:a,,b}", "an empty option"),
    ("{draw:@nobody}", "names no kind and no label drawn before it"),
    ("/x/{draw:Word}", "holds a {draw:...} that is not one"),
])
def test_malformed_placeholders_are_refused(text, message):
    with pytest.raises(DrawError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check(text)
