"""The text hashes a dataset's distinct counts are made of (scoring.datasets.hashing)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.datasets import hashing
from scoring.datasets.hashing import HASHED_IN_PLACE, text_hashes

texts = st.text(max_size=40)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=30), start=st.integers(0, 5))
def test_equal_texts_hash_equal_and_distinct_ones_apart_whatever_the_array(values, start):
    padded = [*(["pad"] * start), *values]
    small = text_hashes(pa.array(padded, pa.string()).slice(start))  # an array read from an offset
    large = text_hashes(pa.array(values, pa.large_string()))
    alone = [int(text_hashes(pa.array([value], pa.string()))[0]) for value in values]
    assert small.dtype == np.uint64 and small.tolist() == large.tolist() == alone
    by_text = {}
    for value, hashed in zip(values, alone, strict=True):
        by_text.setdefault(hashed, set()).add(value)
    assert all(len(same) == 1 for same in by_text.values())  # 64 bits: no two of 30 texts collide


ascii_texts = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(text=ascii_texts, data=st.data())
def test_every_byte_of_a_text_counts(text, data):
    """A byte changed anywhere -- in the 8-byte words or the tail -- changes the hash."""
    position = data.draw(st.integers(0, len(text) - 1))
    other = data.draw(
        st.characters(min_codepoint=32, max_codepoint=126).filter(lambda c: c != text[position])
    )
    changed = text[:position] + other + text[position + 1 :]
    before, after = text_hashes(pa.array([text, changed], pa.string()))
    assert before != after


@pytest.mark.skipif(not HASHED_IN_PLACE, reason="the hashing layer is not compiled in this install")
@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.binary(max_size=40), min_size=1, max_size=20))
def test_the_compiled_loop_hashes_as_its_source_does(values):
    """The .py is the source of the compiled loop: run from source, it gives the same hashes."""
    spec = importlib.util.spec_from_file_location(
        "hashing_from_source", hashing.__file__.split(".cpython")[0] + ".py"
    )
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    assert not source.HASHED_IN_PLACE
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    data = np.frombuffer(b"".join(values) or b"\0", dtype=np.uint8)
    compiled_out, source_out = np.empty(len(values), np.uint64), np.empty(len(values), np.uint64)
    hashing._hash_spans(offsets, data, compiled_out)
    source._hash_spans(
        memoryview(offsets), memoryview(data), memoryview(source_out)
    )  # Python ints throughout
    assert compiled_out.tolist() == source_out.tolist()
