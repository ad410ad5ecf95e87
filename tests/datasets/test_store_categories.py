"""scoring.datasets.table._arrow_category: the categoricals open_dataset builds from the parts' Arrow
dictionaries equal what pandas makes of the converted column, bit for bit and dtype for dtype."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.datasets import table as dataset_table
from scoring.datasets.parts import DICTIONARY

#: Values that sort differently by code point, case and length, and the empty string.
WORDS = ["", "a", "B", "b", "ab", "é", "É", "ß", "z", "日本", "😀", "a b", "10", "9"]

text = st.one_of(st.none(), st.sampled_from(WORDS))


@st.composite
def dictionary_chunks(draw) -> pa.ChunkedArray:
    """A column as the parts give it: a chunk per part, each with its own dictionary (in any
    order, with values no row of the chunk uses), nulls, repeats and empty chunks."""
    index_type = draw(st.sampled_from([pa.int8(), pa.int32()]))
    value_type = draw(st.sampled_from([pa.string(), pa.large_string()]))
    chunks = []
    for values in draw(st.lists(st.lists(text, max_size=30), max_size=5)):
        present = sorted({v for v in values if v is not None})
        unused = draw(st.lists(st.sampled_from([w for w in WORDS if w not in present] or [""]), unique=True))
        dictionary = draw(st.permutations(present + [w for w in unused if w not in present]))
        position = {word: i for i, word in enumerate(dictionary)}
        indices = pa.array([None if v is None else position[v] for v in values], index_type)
        chunks.append(pa.DictionaryArray.from_arrays(indices, pa.array(dictionary, value_type)))
    return pa.chunked_array(chunks, pa.dictionary(index_type, value_type))


def assert_same_categorical(built: pd.Categorical, expected: pd.Series) -> None:
    assert built.dtype == expected.dtype
    assert built.categories.dtype == expected.cat.categories.dtype
    assert built.categories.tolist() == expected.cat.categories.tolist()
    assert built.ordered == expected.cat.ordered
    assert built.codes.dtype == expected.cat.codes.dtype
    np.testing.assert_array_equal(built.codes, expected.cat.codes.to_numpy())


@given(dictionary_chunks())
def test_category_columns_get_their_present_values_sorted_as_pandas_gives_them(values):
    converted = pa.table({"c": values}).to_pandas(split_blocks=True)["c"]
    assert_same_categorical(dataset_table._arrow_category(values, sort=True), dataset_table._category(converted))


@given(dictionary_chunks())
def test_repeating_text_keeps_its_used_categories_in_dictionary_order(values):
    converted = pa.table({"c": values}).to_pandas(split_blocks=True)["c"]
    built = dataset_table._arrow_category(values, sort=False)
    assert_same_categorical(built, converted.cat.remove_unused_categories())


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_a_category_column_no_part_filled_is_a_categorical_without_categories(rows):
    values = pa.chunked_array([pa.nulls(rows)])
    converted = pa.table({"c": values}).to_pandas(split_blocks=True)["c"]
    assert_same_categorical(dataset_table._arrow_category(values, sort=True), dataset_table._category(converted))


@pytest.mark.parametrize(
    "values",
    [
        pa.chunked_array([pa.array([1, 2, 1]).dictionary_encode()]),  # not text
        pa.chunked_array([pa.array(["a", None])]),  # text, not dictionary-encoded
        pa.chunked_array([pa.nulls(3)]),  # all null, not a category column
    ],
)
def test_other_columns_are_left_to_pandas(values):
    assert dataset_table._arrow_category(values, sort=False) is None


@pytest.mark.parametrize("sort", [True, False])
def test_codes_take_the_width_pandas_gives_them_beyond_127_categories(sort):
    words = [f"w{i}" for i in reversed(range(400))]
    chunks = [pa.array(words[:250] + [None]).dictionary_encode(), pa.array(words[200:]).dictionary_encode()]
    values = pa.chunked_array([c.cast(pa.dictionary(pa.int32(), pa.string())) for c in chunks])
    converted = pa.table({"c": values}).to_pandas(split_blocks=True)["c"]
    expected = dataset_table._category(converted) if sort else converted.cat.remove_unused_categories()
    built = dataset_table._arrow_category(values, sort)
    assert built.codes.dtype == np.int16
    assert_same_categorical(built, expected)


@pytest.mark.parametrize("sort", [True, False])
def test_parts_with_small_indices_whose_dictionaries_together_outgrow_them(sort):
    # 200 step files of one run: each part's file names fit int8 indices, all of them do not
    chunks = [pa.array([f"copy{k:02d}/step_{i:04d}.jsonl"] * 3).dictionary_encode() for k in range(10) for i in range(20)]
    assert all(c.type.index_type == pa.int32() for c in chunks)
    values = pa.chunked_array([c.cast(pa.dictionary(pa.int8(), pa.string())) for c in chunks])
    converted = pa.table({"c": values}).to_pandas(split_blocks=True)["c"]
    expected = dataset_table._category(converted) if sort else converted.cat.remove_unused_categories()
    built = dataset_table._arrow_category(values, sort)
    assert len(built.categories) == 200 and built.codes.dtype == np.int16
    assert_same_categorical(built, expected)


# --------------------------------------------------------------------------- a row group at a time


@st.composite
def dictionary_parts(draw) -> list[pa.Table | None]:
    """Parts as the store writes them: a dictionary-encoded text column ``c`` beside a number,
    each part in row groups of a few rows (each with its own dictionary), or a part without ``c``
    (None: it has only the number)."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()) and parts:
            parts.append(None)
            continue
        chunks = draw(dictionary_chunks()).cast(DICTIONARY)  # the one type the store writes
        parts.append(pa.table({"c": chunks, "n": pa.array(np.arange(len(chunks)), pa.int64())}))
    return parts


def _written(tmp_path, parts: list[pa.Table | None], row_group_rows: int) -> list:
    import pyarrow.parquet as pq

    paths = []
    for i, part in enumerate(parts):
        path = tmp_path / f"part{i}.parquet"
        pq.write_table(part if part is not None else pa.table({"n": pa.array([1, 2], pa.int64())}), path,
                       row_group_size=row_group_rows)  # fmt: skip
        paths.append(path)
    return paths


@given(parts=dictionary_parts(), row_group_rows=st.integers(1, 8))
def test_a_column_built_a_row_group_at_a_time_is_the_joined_columns_categorical(tmp_path_factory, parts, row_group_rows):
    """Row groups in any size, parts with and without the column, values repeated across row
    groups, nulls and unused entries: the categorical equals :func:`_arrow_category` on the
    column of the parts joined (what decoding the whole column gives)."""
    import pyarrow.parquet as pq

    paths = _written(tmp_path_factory.mktemp("parts"), parts, row_group_rows)
    joined = pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")["c"]
    expected = dataset_table._arrow_category(joined, sort=False)
    built = dataset_table.streamed_category([dataset_table.PartFooter.read(p) for p in paths], "c")
    if expected is None:
        assert built is None
        return
    converted = pd.Series(expected)
    assert_same_categorical(built, converted)


def test_a_part_holding_the_column_as_plain_text_leaves_it_to_the_whole_column(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"c": pa.array(["a", "b"]).dictionary_encode()}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"c": pa.array(["a", "c"])}), tmp_path / "b.parquet")
    both = [dataset_table.PartFooter.read(tmp_path / name) for name in ("a.parquet", "b.parquet")]
    assert dataset_table.streamed_category(both, "c") is None
    built = dataset_table.streamed_category(both[:1], "c")
    assert built.categories.tolist() == ["a", "b"] and built.codes.tolist() == [0, 1]
