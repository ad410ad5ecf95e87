"""The content digest that decides whether a changed-looking input is scored again (scoring.datasets.plan)."""

from __future__ import annotations

import io
import json
import os

import blake3
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store import split_sample

from scoring import datasets, engines
from scoring.datasets import plan as dataset_plan

# BLAKE3's published test vector: the digest of no input at all
EMPTY_BLAKE3 = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"


def test_the_digest_is_blake3_of_the_bytes_named_by_its_algorithm(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert datasets.file_digest(empty) == f"blake3:{EMPTY_BLAKE3}" == datasets.bytes_digest(b"")
    assert datasets.DIGEST_ALGORITHM == "blake3"


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=5000), block=st.integers(1, 700), short_reads=st.booleans())
def test_a_digest_read_block_by_block_is_the_digest_of_the_whole(data, block, short_reads):
    """Whatever the block size, and however short each read comes back, every byte is hashed once."""
    stream = io.BytesIO(data)

    def read_into(buffer):
        limit = max(1, len(buffer) // 3) if short_reads else len(buffer)
        return stream.readinto(buffer[:limit])

    original = dataset_plan._HASH_BLOCK
    try:
        dataset_plan._HASH_BLOCK = block
        streamed = datasets.stream_digest(read_into)
    finally:
        dataset_plan._HASH_BLOCK = original
    assert streamed == datasets.bytes_digest(data) == f"blake3:{blake3.blake3(data).hexdigest()}"


def test_a_file_over_many_blocks_digests_as_its_bytes(tmp_path):
    path = tmp_path / "big.jsonl"
    data = os.urandom(3 * (1 << 20) + 12_345)  # three full blocks and a part
    path.write_bytes(data)
    assert datasets.file_digest(path) == datasets.bytes_digest(data)
    changed = bytearray(data)
    changed[len(data) // 2] ^= 1
    path.write_bytes(bytes(changed))
    assert datasets.file_digest(path) != datasets.bytes_digest(data)


def test_an_entry_with_a_digest_of_another_algorithm_is_scored_again_not_trusted(tmp_path):
    """A manifest entry whose digest cannot be compared (an older dataset's ``sha256``) never
    makes a touched input count as unchanged: it is scored again."""
    inputs = split_sample(tmp_path / "data", pieces=2)
    ds = tmp_path / "ds"
    engines.score_to_dataset(inputs, ds, workers=1)
    manifest = datasets.read_manifest(ds)
    for entry in manifest["files"]:
        entry["sha256"] = entry.pop("digest").removeprefix("blake3:")
    (ds / datasets.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    status = inputs[0].stat()
    os.utime(inputs[0], ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))  # touched, same bytes
    again = engines.score_to_dataset(inputs, ds, workers=1)
    assert again.changed == [str(inputs[0])] and again.unchanged == [str(inputs[1])]
    rescored, trusted = datasets.read_manifest(ds)["files"]
    assert rescored["digest"] == datasets.file_digest(inputs[0])
    assert "digest" not in trusted  # size and mtime as recorded: kept as it was, never read
