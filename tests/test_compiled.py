"""The Cython build of the hot layers: it runs only when fresh, and it gives the interpreter's numbers.

``scoring.compiled`` loads a layer's extension only when the source digest its
build recorded matches the ``.py`` file; these tests check that rule on a fake
package folder, check that the real install is fresh (and compiled wherever a C
compiler exists), and compare the compiled and interpreted scorers on a corpus
of spec examples and thousands of mutated responses, field by field.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scoring_fixtures import load_cases

from scoring import compiled, explain_trace_response

ROOT = Path(__file__).resolve().parents[1]
EXTENSION_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_setup_reads_the_layers_and_the_digest_from_the_package_module():
    """setup.py loads scoring/compiled.py on its own (no copy of the list or the digest to drift)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    assigned = {
        target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
        if isinstance(target, ast.Name)
    }  # fmt: skip
    assert not assigned & {"COMPILED_LAYERS", "SOURCE_DIGEST_SUFFIX"}
    used = {
        node.attr for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_COMPILED"
    }  # fmt: skip
    assert {"COMPILED_LAYERS", "SOURCE_DIGEST_SUFFIX", "source_digest"} <= used


def test_the_compiled_module_needs_only_the_standard_library():
    """setup.py runs it in the build environment, where numpy and the rest are not installed."""
    tree = ast.parse((ROOT / "scoring" / "compiled.py").read_text())
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert {name.split(".")[0] for name in modules} <= set(sys.stdlib_module_names) | {"__future__"}
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]


def test_the_source_digest_covers_the_declarations(tmp_path):
    source = tmp_path / "layer.py"
    source.write_text("VALUE = 1\n")
    without_declarations = compiled.source_digest(source)
    assert without_declarations == hashlib.sha256(source.read_bytes()).hexdigest()
    source.with_suffix(".pxd").write_text("cdef class Row:\n    cdef public object kind\n")
    assert compiled.source_digest(source) != without_declarations


def test_every_declarations_file_belongs_to_a_compiled_layer():
    # a .pxd beside a layer that is not compiled would be a promise nothing keeps
    layers = {ROOT.joinpath("scoring", *layer.split(".")).with_suffix(".pxd") for layer in compiled.COMPILED_LAYERS}
    declarations = set((ROOT / "scoring").rglob("*.pxd"))
    assert declarations, "the reader's Row is declared in scoring/rollouts/rows.pxd"
    assert declarations <= layers, sorted(map(str, declarations - layers))




@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package folder with ``layer.py``; the test adds an extension and a digest as needed."""
    monkeypatch.setattr(compiled, "_PACKAGE_DIR", tmp_path)
    monkeypatch.delenv(compiled.PURE_PYTHON_ENV, raising=False)
    source = tmp_path / "verifier" / "extraction.py"
    source.parent.mkdir()
    source.write_text("VALUE = 1\n")
    return tmp_path, source


def _build(folder: Path, digest: str | None) -> Path:
    extension = folder / "verifier" / f"extraction{EXTENSION_SUFFIX}"
    extension.write_bytes(b"not really a shared object")
    if digest is not None:
        Path(f"{extension}{compiled.SOURCE_DIGEST_SUFFIX}").write_text(digest + "\n")
    return extension


def test_a_fresh_build_is_used(fake_package):
    folder, source = fake_package
    extension = _build(folder, compiled.source_digest(source))
    assert compiled._resolve("verifier.extraction") == (compiled.COMPILED, extension)


def test_without_a_build_the_source_runs(fake_package):
    _, source = fake_package
    assert compiled._resolve("verifier.extraction") == (compiled.PURE_NOT_BUILT, source)


@pytest.mark.parametrize("digest", ["0" * 64, None], ids=["source-edited", "digest-missing"])
def test_a_stale_build_is_never_used(fake_package, digest):
    folder, source = fake_package
    _build(folder, digest)
    assert compiled._resolve("verifier.extraction") == (compiled.PURE_STALE, source)


def test_an_edit_after_the_build_makes_it_stale(fake_package):
    folder, source = fake_package
    _build(folder, compiled.source_digest(source))
    source.write_text("VALUE = 2\n")
    assert compiled._resolve("verifier.extraction")[0] == compiled.PURE_STALE


def test_an_edit_of_the_declarations_makes_the_build_stale(fake_package):
    folder, source = fake_package
    declarations = source.with_suffix(".pxd")
    declarations.write_text("cdef class Row:\n    cdef public object kind\n")
    _build(folder, compiled.source_digest(source))
    assert compiled._resolve("verifier.extraction")[0] == compiled.COMPILED
    declarations.write_text("cdef class Row:\n    cdef public object kind, response\n")
    assert compiled._resolve("verifier.extraction")[0] == compiled.PURE_STALE
    declarations.unlink()
    assert compiled._resolve("verifier.extraction")[0] == compiled.PURE_STALE


@pytest.mark.parametrize(("value", "pure"), [("1", True), ("yes", True), ("0", False), ("", False)])
def test_the_environment_switch(fake_package, monkeypatch, value, pure):
    folder, source = fake_package
    _build(folder, compiled.source_digest(source))
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, value)
    assert compiled._resolve("verifier.extraction")[0] == (compiled.PURE_DISABLED if pure else compiled.COMPILED)


def test_the_finder_loads_a_stale_layer_from_source_and_says_so(fake_package):
    folder, source = fake_package
    _build(folder, "0" * 64)
    with pytest.warns(RuntimeWarning, match="source changed since it was compiled"):
        spec = compiled._LayerFinder().find_spec("scoring.verifier.extraction")
    assert spec.origin == str(source)
    assert compiled._LayerFinder().find_spec("scoring.verifier.spec") is None  # not a compiled layer
    assert compiled._LayerFinder().find_spec("other.extract") is None


def test_the_installed_build_is_fresh_and_compiled_where_a_compiler_exists():
    status = compiled.layer_status()
    assert compiled.PURE_STALE not in status.values(), status  # re-run `pip install -e .`
    if compiled.pure_python_requested() or os.environ.get("ROLLOUTSCOPE_NO_COMPILE", "") not in ("", "0"):
        return
    if shutil.which("cc") or shutil.which("gcc"):
        assert compiled.all_compiled(), status


# --------------------------------------------------------------------------- compiled == interpreted

_MUTATION_CHARS = '{}[]()"\\,:. 0123456789-eE\n`<>/answerannotation'
_MUTATIONS_PER_CASE = 40


def _corpus() -> list[dict]:
    """The spec's trace examples and, for each, deterministic mutations of its response."""
    rng = random.Random(20261130)
    corpus = []
    for case in load_cases("trace_cases.jsonl"):
        if "raises" in case:
            continue
        kwargs = case["kwargs"]
        corpus.append(kwargs)
        response = kwargs.get("response") or ""
        for _ in range(_MUTATIONS_PER_CASE):
            text = response
            for _ in range(rng.randint(1, 3)):
                at = rng.randint(0, len(text))
                kind = rng.random()
                if kind < 0.4:
                    text = text[:at] + rng.choice(_MUTATION_CHARS) + text[at:]
                elif kind < 0.7:
                    text = text[:at] + text[at + 1 :]
                elif kind < 0.85:
                    text = text[:at]
                else:
                    text = "Let me look. " + text + rng.choice(["", "\n", " done", "```", "}"])
            corpus.append(dict(kwargs, response=text))
    return corpus


def _plain(value):
    """A JSON-comparable rendering that keeps floats exact (repr) and NaN equal to NaN."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return repr(value)


def summarize_corpus() -> list:
    """Every flat value and every explained field the dashboard draws, per corpus response."""
    summaries = []
    for kwargs in _corpus():
        evaluation = explain_trace_response(**kwargs)
        extraction, annotation = evaluation.extraction, evaluation.annotation
        summaries.append(
            _plain(
                {
                    "flat": evaluation.as_flat_dict(),
                    "format": [extraction.format_reason, extraction.format_detail, extraction.format_break_at],
                    "final": extraction.final_object,
                    "recovered": [extraction.recovered_source, extraction.recovered_span],
                    "missing_extra": [extraction.missing_keys, extraction.extra_keys],
                    "answer": [evaluation.answer.reason, evaluation.answer.predicted_text],
                    "annotation": [annotation.reason, annotation.half_life_px, annotation.half_life_source],
                    "geometry": [annotation.predicted, annotation.ground_truth],
                    "match": annotation.match,
                }
            )
        )
    return summaries


@pytest.mark.skipif(not compiled.all_compiled(), reason="the layers are not compiled in this install")
def test_compiled_and_interpreted_layers_give_identical_results():
    environment = dict(os.environ, **{compiled.PURE_PYTHON_ENV: "1"})
    script = (
        "import json, sys; sys.path[:0] = sys.argv[1:]; "
        "from scoring import compiled; assert not any(s == compiled.COMPILED for s in compiled.layer_status().values()); "
        "from test_compiled import summarize_corpus; print(json.dumps(summarize_corpus()))"
    )
    here = str(Path(__file__).resolve().parent)
    interpreted = json.loads(
        subprocess.run(
            [sys.executable, "-c", script, here], env=environment, check=True, capture_output=True, text=True
        ).stdout
    )
    compiled_results = json.loads(json.dumps(summarize_corpus()))
    assert len(compiled_results) == len(interpreted) > 2_000
    for index, (fast, slow) in enumerate(zip(compiled_results, interpreted, strict=True)):
        assert fast == slow, f"corpus item {index} differs"


@pytest.mark.skipif(not compiled.all_compiled(), reason="the layers are not compiled in this install")
def test_compiled_and_interpreted_batch_give_identical_tables(tmp_path):
    """The batch pipeline over compiled layers and readers, and all from source: the sample run's
    table and errors, cell for cell."""
    import pandas as pd

    from scoring.runs import score_files

    inputs = sorted(str(path) for path in (ROOT / "sample_data").glob("*.jsonl"))
    assert len(inputs) >= 2
    script = (
        "import sys; from scoring import compiled; "
        "assert not any(s == compiled.COMPILED for s in compiled.layer_status().values()); "
        "from scoring.runs import score_files; run = score_files(sys.argv[2:], workers=1); "
        "run.table.to_pickle(sys.argv[1] + '/table.pkl'); run.errors.to_pickle(sys.argv[1] + '/errors.pkl')"
    )
    environment = dict(os.environ, **{compiled.PURE_PYTHON_ENV: "1"})
    subprocess.run([sys.executable, "-c", script, str(tmp_path), *inputs], env=environment, check=True)
    run = score_files(inputs, workers=1)
    assert len(run.table) > 100 and len(run.errors) > 0
    pd.testing.assert_frame_equal(run.table, pd.read_pickle(tmp_path / "table.pkl"))
    pd.testing.assert_frame_equal(run.errors, pd.read_pickle(tmp_path / "errors.pkl"))
