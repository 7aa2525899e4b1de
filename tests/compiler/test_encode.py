"""The fast JSON paths spell exactly what ``json.dumps`` does, errors included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.compiler import load_policy
from wakeful.compiler.canonical import canonical_json
from wakeful.compiler.encode import JsonMemo, encode_request
from wakeful.compiler.render import RENDERERS

from .factory import snapshot
from .helpers import compile_


def reference(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included
    st.text(max_size=300),
    st.text(alphabet='ab\x00\x7f\u2028é"\\</', min_size=250, max_size=400),  # memoised
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_canonical_json_and_the_memo_spell_like_json_dumps(value: Any) -> None:
    expected = reference(value)
    assert canonical_json(value) == expected
    memo = JsonMemo()
    assert memo.dumps(value) == memo.dumps(value) == expected  # a hit spells the same
    assert memo.dumps(["label", value]) == reference(["label", value])


@settings(max_examples=200, deadline=None)
@given(values)
def test_a_held_value_is_spelled_once_and_found_by_identity(value: Any) -> None:
    schema = {"type": "object", "properties": {"x": value, "y": {"type": "string"}}}
    memo = JsonMemo()
    memo.hold([schema])
    first = memo.dumps(schema)
    assert first == reference(schema)
    # The same string object, not spelled again: a walk builds a new one each time.
    assert memo.dumps(schema) is first
    assert memo.dumps(["tool", {"input_schema": schema}]) == reference(
        ["tool", {"input_schema": schema}]
    )
    # An equal dict that is another object is spelled as usual, and the same.
    assert memo.dumps(json.loads(first)) == first


def test_a_value_the_encoder_refuses_is_not_held_and_still_refused() -> None:
    memo = JsonMemo()
    bad = {"x": {1, 2}}
    memo.hold([bad])
    assert not memo.frozen
    with pytest.raises(TypeError):
        memo.dumps(bad)


def test_values_json_cannot_spell_fail_the_same_way() -> None:
    memo = JsonMemo()
    loop: list[Any] = []
    loop.append(loop)
    for bad in ({1: "x", "a": "y"}, {(1,): "x"}, {"x": {1, 2}}, loop):
        with pytest.raises((TypeError, ValueError)) as expected:
            reference(bad)
        with pytest.raises(type(expected.value), match=str(expected.value)[:20]):
            canonical_json(bad)
        with pytest.raises(type(expected.value), match=str(expected.value)[:20]):
            memo.dumps(bad)


def test_equal_but_differently_typed_values_are_not_confused() -> None:
    memo = JsonMemo()
    assert memo.dumps({"n": "1", "t": "x" * 300}) == reference({"n": "1", "t": "x" * 300})
    assert memo.dumps({"n": 1, "t": "x" * 300}) == '{"n":1,"t":"' + "x" * 300 + '"}'
    assert memo.dumps({"n": 1.0}) == '{"n":1.0}' and memo.dumps({"n": True}) == '{"n":true}'


def test_nested_values_equal_under_eq_keep_their_own_spelling_in_one_memo() -> None:
    # Nested dicts (tool schemas, call arguments) are remembered by a typed key: values
    # that are == but spell differently must never be served each other's JSON.
    memo = JsonMemo()
    variants: list[Any] = [
        {"a": {"b": 1}},
        {"a": {"b": True}},
        {"a": {"b": 1.0}},
        {"a": {"b": None}},
        {"a": {"b": "None"}},
        {"a": [1, {"c": 0}]},
        {"a": [True, {"c": False}]},
        {"a": [1, {"c": 0.0}]},
        {"a": [None]},
        {"a": []},
        {"a": {}},
    ]
    for _ in range(2):  # the second round is served from the memo
        for value in variants:
            assert memo.dumps(value) == reference(value)
            assert memo.dumps(["tool_use", value]) == reference(["tool_use", value])


@settings(max_examples=100, deadline=None)
@given(st.lists(values, min_size=2, max_size=8))
def test_one_memo_spells_every_value_of_a_sequence_like_json_dumps(seq: list[Any]) -> None:
    memo = JsonMemo()
    for value in [*seq, *seq]:
        assert memo.dumps({"v": value}) == reference({"v": value})


@pytest.mark.parametrize("provider", sorted(RENDERERS))
def test_the_spliced_request_is_the_request_encoded(provider: str) -> None:
    policy = load_policy("[budget]\ncontext_limit = 6000\noutput_reserve = 300\n")
    w = compile_(snapshot(), policy, provider=provider)
    assert w.request_json == canonical_json(w.request)


def test_a_splice_that_does_not_add_up_falls_back_to_encoding_the_request() -> None:
    from dataclasses import replace

    from wakeful.compiler import CountingCache, EstimatingCounter, WindowPolicy
    from wakeful.compiler.budget import budget
    from wakeful.compiler.freshness import freshness
    from wakeful.compiler.pipeline import place, prepare

    from .factory import NOW, goal

    work = prepare(
        snapshot(), goal(), WindowPolicy.default(), NOW, EstimatingCounter(), CountingCache()
    )
    freshness(work)
    budget(work)
    rendered = RENDERERS["anthropic"]().render(place(work))
    expected = canonical_json(rendered.request)
    assert encode_request(rendered) == expected
    broken = replace(rendered, slots=None, paths=["/nowhere", *rendered.paths[1:]])
    assert encode_request(broken) == expected  # a path that does not resolve
    doubled = replace(rendered, slots=None, paths=[rendered.paths[1], *rendered.paths[1:]])
    assert encode_request(doubled) == expected  # a slot that does not come back once
    assert rendered.request == json.loads(expected)  # and the request was left intact
