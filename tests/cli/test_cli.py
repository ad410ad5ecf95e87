"""``python -m scoring`` / ``rolloutscope``: every file type end to end, exit codes, messages."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from rollout_fixtures import diverse_rows, row, scorer_kwargs, stringified, write_jsonl

from scoring.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"


def run_cli(*argv) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _verl_files(folder: Path) -> tuple[list[Path], Path]:
    rows = diverse_rows()[:4]
    instances = []
    for i, item in enumerate(rows):
        instances.append(
            {
                **{k: v for k, v in item.items() if k != "response"},
                "id": f"inst{i}",
                "prompt": f"Question {i}: what is it?",
                "image": "img.png",
            }
        )
    from rollout_fixtures import write_png

    write_png(folder / "img.png", (800, 600))
    write_jsonl(folder / "instances.jsonl", instances)
    dumps = []
    for step in (100, 200):
        lines = []
        for i, item in enumerate(rows):
            gts = {
                k: item[k]
                for k in ("answer_gt", "annotation_gt", "reward_contract", "trace_output_mode")
                if k in item
            }
            lines.append(
                {
                    "input": f"<|user|>Question {i}: what is it?<|assistant|>",
                    "output": item["response"],
                    "gts": gts,
                    "score": 0.0,
                    "step": step,
                    "acc": 1.0,
                }
            )
        dumps.append(write_jsonl(folder / f"{step}.jsonl", lines))
    return dumps, folder / "instances.jsonl"


def _trl_file(folder: Path) -> tuple[Path, Path]:
    rows = diverse_rows()[:4]
    instances = [
        {**{k: v for k, v in r.items() if k != "response"}, "prompt": f"P{i}"} for i, r in enumerate(rows)
    ]
    write_jsonl(folder / "train_instances.jsonl", instances)
    frame = pd.DataFrame(
        {
            "step": [50] * 4,
            "prompt": [f"P{i}" for i in range(4)],
            "completion": [r["response"] for r in rows],
            "reward_trace": [0.0] * 4,
            "advantage": [0.1] * 4,
        }
    )
    frame.to_parquet(folder / "completions_50.parquet")
    return folder / "completions_50.parquet", folder / "train_instances.jsonl"


def _lm_eval_file(folder: Path) -> Path:
    records = []
    for i, item in enumerate(diverse_rows()[:3]):
        doc = {k: v for k, v in item.items() if k != "response"}
        records.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": json.dumps(item["answer_gt"]["value"]),
                "arguments": [["prompt", {}]],
                "resps": [[item["response"]]],
                "filtered_resps": [item["response"]],
                "trace_overall": 0.0,
            }
        )
    return write_jsonl(folder / "samples_trace_2026-01-01T00-00-00.jsonl", records)


def _containers(folder: Path) -> dict[str, Path]:
    rows = diverse_rows()
    out = {
        "jsonl": write_jsonl(folder / "r.jsonl", rows),
        "jsonl.gz": write_jsonl(folder / "r.jsonl.gz", rows, gz=True),
    }
    (folder / "r.json").write_text(json.dumps(rows), encoding="utf-8")
    out["json"] = folder / "r.json"
    frame = pd.DataFrame(stringified(rows))
    frame.to_parquet(folder / "r.parquet")
    frame.to_csv(folder / "r.csv", index=False)
    out["parquet"], out["csv"] = folder / "r.parquet", folder / "r.csv"
    return out


@pytest.mark.parametrize("container", ["jsonl", "jsonl.gz", "json", "parquet", "csv"])
def test_score_every_container(tmp_path, container):
    source = _containers(tmp_path)[container]
    out = tmp_path / "out.parquet"
    code, _, err = run_cli("score", source, "-o", out)
    assert code == 0, err
    table = pd.read_parquet(out)
    assert len(table) == len(diverse_rows())
    assert (tmp_path / "out.errors.csv").exists()
    assert f"scored {len(table)} rows from 1 file(s)" in err


def test_score_verl_dumps_joined_to_instances(tmp_path):
    dumps, instances = _verl_files(tmp_path)
    out = tmp_path / "verl.parquet"
    code, _, err = run_cli("score", *dumps, "--instances", instances, "-o", out)
    assert code == 0, err
    table = pd.read_parquet(out)
    assert table["layout"].unique().tolist() == ["verl"]
    assert sorted(table["step"].unique().tolist()) == [100, 200]
    assert set(table["joined"]) == {"prompt"}
    assert (table["image_width"] == 800).all()
    assert "logged vs recomputed: overall differs" in err  # the dump logged 0.0 everywhere
    code, _, _ = run_cli(
        "score", *dumps, "--instances", instances, "--join", "order", "-o", tmp_path / "o.parquet"
    )
    assert code == 0
    assert pd.read_parquet(tmp_path / "o.parquet")["joined"].unique().tolist() == ["order"]


def test_score_trl_completions(tmp_path):
    completions, instances = _trl_file(tmp_path)
    out = tmp_path / "trl.csv"
    code, _, err = run_cli("score", completions, "--instances", instances, "-o", out)
    assert code == 0, err
    table = pd.read_csv(out)
    assert table["layout"].unique().tolist() == ["trl"] and table["step"].unique().tolist() == [50]
    assert "logged_overall" in table.columns


def test_score_lm_eval_samples(tmp_path):
    out = tmp_path / "lm.jsonl"
    code, _, err = run_cli("score", _lm_eval_file(tmp_path), "-o", out)
    assert code == 0, err
    table = pd.read_json(out, lines=True)
    assert table["layout"].unique().tolist() == ["lm_eval"]
    assert table["task_id"].unique().tolist() == ["trace"] or set(table["task_id"]) == {"count", "locate"}
    assert table["row_id"].tolist() == [0, 1, 2]


def test_score_instances_and_responses(tmp_path):
    rows = diverse_rows()[:3]
    write_jsonl(tmp_path / "inst.jsonl", [{k: v for k, v in r.items() if k != "response"} for r in rows])
    responses = write_jsonl(
        tmp_path / "resp.jsonl", [{"id": r["id"], "response": r["response"]} for r in rows]
    )
    code, _, err = run_cli(
        "score", responses, "--instances", tmp_path / "inst.jsonl", "-o", tmp_path / "o.parquet"
    )
    assert code == 0, err
    assert len(pd.read_parquet(tmp_path / "o.parquet")) == 3
    code, _, err = run_cli("score", tmp_path / "inst.jsonl", "-o", tmp_path / "x.parquet")
    assert code == 1 and "looks like an instances file" in err


def test_score_simple_scorer_rows(tmp_path):
    rows = [{"output": "It is 72.", "gold": "#### 72"}, {"output": "It is 7.", "gold": "#### 72"}]
    source = write_jsonl(tmp_path / "g.jsonl", rows)
    code, _, err = run_cli("score", source, "-o", tmp_path / "g.parquet")
    assert code == 1 and "choose a simple scorer" in err
    code, _, err = run_cli("score", source, "--scorer", "last_number", "-o", tmp_path / "g.parquet")
    assert code == 0, err
    assert pd.read_parquet(tmp_path / "g.parquet")["score"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(("extra", "scores"), [((), [0.0, 1.0]), (("--number-reading", "signed"), [1.0, 1.0])])
def test_score_simple_rows_with_the_number_reading(tmp_path, extra, scores):
    rows = [{"output": "It fell by -$18.", "gold": "-18"}, {"output": "It fell by $18.", "gold": "18"}]
    source = write_jsonl(tmp_path / "g.jsonl", rows)
    out = tmp_path / "g.parquet"
    code, _, err = run_cli("score", source, "--scorer", "numeric_close", *extra, "-o", out)
    assert code == 0, err
    assert pd.read_parquet(out)["score"].tolist() == scores


def test_mapping_on_the_command_line(tmp_path):
    rows = [
        {
            "text": r["response"],
            "gt": json.dumps(r["answer_gt"]),
            "rc": r["reward_contract"],
            "annotation_gt": r.get("annotation_gt"),
            "r": 0.5,
        }
        for r in diverse_rows()[:3]
    ]
    source = write_jsonl(tmp_path / "odd.jsonl", rows)
    code, _, err = run_cli(
        "score",
        source,
        "--map",
        "response=text",
        "--map",
        "answer_gt=gt",
        "--map",
        "reward_contract=rc",
        "--logged",
        "r=overall",
        "-o",
        tmp_path / "o.parquet",
    )
    assert code == 0, err
    assert "logged_overall" in pd.read_parquet(tmp_path / "o.parquet").columns
    mapping = tmp_path / "mapping.json"
    mapping.write_text(
        json.dumps({"roles": {"response": "text", "answer_gt": "gt", "reward_contract": "rc"}})
    )
    code, out, err = run_cli("inspect", source, "--mapping", mapping)
    assert code == 0 and "response             <- text (mapped)" in out


def test_errors_file_and_exit_codes(tmp_path):
    bad = row("x")
    bad["answer_gt"] = 5
    source = write_jsonl(tmp_path / "mixed.jsonl", diverse_rows()[:2] + [bad], extra_lines=["{oops"])
    out = tmp_path / "m.parquet"
    code, _, err = run_cli("score", source, "-o", out)
    assert code == 0
    assert f"error: {source}, line 3, field 'answer_gt': has type number, expected an object" in err
    assert f"error: {source}, line 4: line is not valid JSON" in err
    errors = pd.read_csv(tmp_path / "m.errors.csv")
    assert errors[["line", "field"]].fillna("").values.tolist() == [[3, "answer_gt"], [4, ""]]
    code, _, _ = run_cli("score", source, "-o", out, "--strict")
    assert code == 1
    code, _, err = run_cli("score", source, "-o", out, "--errors", tmp_path / "e.csv", "-q")
    assert code == 0 and err == "" and (tmp_path / "e.csv").exists()


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        ([], 2, "usage"),
        (["frobnicate"], 2, "invalid choice"),
        (["score"], 2, "the following arguments are required"),
        (["score", "{src}", "--format-weight", "2"], 2, "invalid option: format_weight must be in [0, 1]"),
        (["score", "{src}", "--mode", "both"], 2, "trace_reward_mode='both'"),
        (["score", "{src}", "--scorer", "bleu"], 2, "scorer must be 'trace'"),
        (["score", "{src}", "--number-reading", "rounded"], 2, "invalid choice: 'rounded'"),
        (["score", "{src}", "--map", "colour=red"], 2, "bad column mapping: unknown role(s) colour"),
        (["score", "{src}", "-o", "out.txt"], 2, "cannot tell the output format"),
        (["score", "{src}", "--images", "/no/such/folder"], 2, "image folder not found"),
        (["score", "{src}", "{missing}"], 1, "file not found"),
        (["score", "{missing}"], 1, "no usable rows"),
        (["score", "{src}", "-o", "/no/such/dir/out.parquet"], 1, "does not exist"),
        (["summary", "{src}"], 1, "not a scored table"),
        (["summary", "{missing}"], 1, "file not found"),
        (["reweight", "{missing}"], 1, "file not found"),
        (["inspect", "{missing}"], 1, "file not found"),
    ],
)
def test_command_line_errors(tmp_path, monkeypatch, argv, code, message):
    monkeypatch.chdir(tmp_path)
    source = write_jsonl(tmp_path / "r.jsonl", diverse_rows()[:2])
    values = {"src": str(source), "missing": str(tmp_path / "missing.jsonl")}
    got, out, err = run_cli(*[a.format(**values) for a in argv])
    assert got == code
    assert message in err + out


def test_summary_formats(tmp_path):
    rows = diverse_rows()
    for i, item in enumerate(rows):
        item["step"] = 100 * (1 + i % 2)
    scored = tmp_path / "s.parquet"
    assert run_cli("score", write_jsonl(tmp_path / "r.jsonl", rows), "-o", scored)[0] == 0
    code, out, _ = run_cli("summary", scored)
    assert code == 0
    for title in ("by task_id", "by annotation_type", "by step", "all rows"):
        assert title in out
    assert "format_failure_rate" in out and "solve_rate" in out
    code, out, _ = run_cli("summary", scored, "--by", "task_id,step", "--format", "csv")
    frame = pd.read_csv(__import__("io").StringIO(out))
    assert frame["grouping"].unique().tolist() == ["task_id,step"] and frame["rows"].sum() == len(rows)
    code, out, _ = run_cli("summary", scored, "--format", "json")
    assert json.loads(out)[-1]["group"] == "all"
    code, out, _ = run_cli("summary", scored, "--format", "markdown", "-o", tmp_path / "s.md")
    assert (tmp_path / "s.md").read_text().startswith("| grouping | group |")
    code, _, err = run_cli("summary", scored, "--by", "colour")
    assert code == 2 and "unknown column(s) for --by: colour" in err


def test_reweight_command(tmp_path):
    scored = tmp_path / "s.parquet"
    assert run_cli("score", write_jsonl(tmp_path / "r.jsonl", diverse_rows()), "-o", scored)[0] == 0
    code, _, err = run_cli("reweight", scored, "--formula", "additive", "--format-weight", "0.5")
    assert code == 0, err
    out = tmp_path / "s.reweighted.parquet"
    table = pd.read_parquet(out)
    assert (table["format_weight"] == 0.5).all()
    assert "mean score" in err and "re-weighted" in err
    code, _, err = run_cli("reweight", scored, "--answer-weight", "-1", "-o", tmp_path / "x.csv")
    assert code == 2 and "answer_weight" in err
    code, _, _ = run_cli("reweight", scored, "--mode", "answer", "-o", tmp_path / "x.csv")
    assert code == 0 and set(pd.read_csv(tmp_path / "x.csv")["trace_output_mode"]) == {"answer"}


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path):
    source = write_jsonl(tmp_path / "r.jsonl", diverse_rows())
    _, _, err = run_cli("score", source, "-o", tmp_path / "a.parquet")
    assert "scoring [" not in err
    _, _, err = run_cli("score", source, "-o", tmp_path / "a.parquet", "--progress")
    assert "scoring [" in err and "100%" in err


def test_python_dash_m_scoring_end_to_end(tmp_path):
    source = write_jsonl(tmp_path / "r.jsonl.gz", diverse_rows(), gz=True)
    done = subprocess.run(
        [sys.executable, "-m", "scoring", "score", str(source), "-o", str(tmp_path / "o.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(tmp_path / "o.csv")) == len(diverse_rows())
    assert done.stdout == ""
    bad = subprocess.run(
        [sys.executable, "-m", "scoring", "score", "--format-weight", "x", str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "invalid float value" in bad.stderr


def test_entry_point_is_the_program_python_m_scoring_runs():
    """``rolloutscope`` is ``python -m scoring``: its ``main`` chooses Arrow's allocator before
    pyarrow loads (scoring.allocator), then runs the command line."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["rolloutscope"].partition(":")
    assert module == "scoring.__main__" and name == "main"



def test_the_program_loads_numpy_only_after_its_choices_and_scipy_only_to_match_sets():
    """``import scoring`` (what importing ``scoring.__main__`` runs first) loads neither numpy nor
    pyarrow, so the program's choices of allocator and BLAS threads come before them; the command
    line itself does not load scipy's solver (about 0.3 s), which the first set matched does."""
    two_points = row('{"answer": 7, "annotation": [[9, 9], [1, 1]]}', annotation_type="point_set",
                     annotation=[[1, 1], [9, 9]], mode="answer_and_annotation")  # fmt: skip
    probe = (
        "import json, sys\n"
        "import scoring.__main__\n"
        "print(sorted({'numpy', 'pyarrow', 'scipy.optimize'} & set(sys.modules)))\n"
        "import scoring.cli\n"
        "print('scipy.optimize' in sys.modules)\n"
        "from scoring import score_trace_response\n"
        f"result = score_trace_response(**json.loads({json.dumps(scorer_kwargs(two_points))!r}))\n"
        "print(result['annotation_reward'], 'scipy.optimize' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split("\n")[:3] == ["[]", "False", "1.0 True"]

SAMPLE_CASES = [
    (["rollouts_ckpt-A.jsonl", "rollouts_ckpt-B.jsonl", "--separate-runs"], 1080),
    (["rollouts_small.csv"], 45),
    (["rollouts_with_errors.jsonl"], 27),
    (["verl/100.jsonl", "verl/200.jsonl", "--instances", "instances.jsonl"], 90),
    (
        [
            "trl/completions_50.parquet",
            "trl/completions_100.parquet",
            "--instances",
            "trl/train_instances.jsonl",
        ],
        160,
    ),
    (["lmms_eval/samples_trace_2026-11-30T10-00-00.jsonl"], 45),
    (["gsm8k_rollouts.jsonl", "--scorer", "last_number"], 100),
]


@pytest.mark.parametrize(("args", "rows"), SAMPLE_CASES, ids=[c[0][0].split("/")[0] for c in SAMPLE_CASES])
def test_sample_data_end_to_end(tmp_path, args, rows):
    argv = [str(SAMPLE / a) if (SAMPLE / a).exists() else a for a in args]
    code, _, err = run_cli("score", *argv, "-o", tmp_path / "o.parquet", "--workers", "1")
    assert code == 0, err
    table = pd.read_parquet(tmp_path / "o.parquet")
    assert len(table) == rows
    if "--instances" in args or "rollouts_small.csv" in args:
        assert table["image_ref"].notna().all()
        assert table["image_width"].notna().all()


def test_gzip_output_of_csv(tmp_path):
    out = tmp_path / "o.csv.gz"
    code, _, _ = run_cli("score", write_jsonl(tmp_path / "r.jsonl", diverse_rows()[:2]), "-o", out)
    assert code == 0
    with gzip.open(out, "rt") as handle:
        assert handle.readline().startswith("run,")


# --------------------------------------------------------------------------- data roots, limits, bundles


def _trace_rows(n: int = 3, **extra) -> list[dict]:
    return [row('{"answer": 7, "annotation": [0, 0, 10, 10]}', id=f"r{i}", **extra) for i in range(n)]


def test_cli_reads_only_inside_the_data_roots(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    good = write_jsonl(root / "good.jsonl", _trace_rows())
    secret = tmp_path / "etc" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0::/root:/bin/sh\n")
    (root / "escape.jsonl").symlink_to(secret)
    monkeypatch.setenv("ROLLOUTSCOPE_DATA_ROOTS", str(root))
    monkeypatch.chdir(tmp_path)
    messages = []
    for target in (secret, secret.with_name("shadow"), root / "escape.jsonl", f"{root}/../etc/passwd"):
        code, _, err = run_cli("score", good, target, "-o", tmp_path / "out.parquet")
        assert code == 1 and "outside the allowed data roots" in err
        assert "root:x" not in err
        messages.append(err.split(f"error: {target}: ")[1].splitlines()[0])
    assert set(messages) == {"outside the allowed data roots"}
    assert len(pd.read_parquet(tmp_path / "out.parquet")) == 3  # the good file is still scored
    code, _, err = run_cli("score", good, "--images", secret.parent, "-o", tmp_path / "o2.parquet")
    assert code == 2 and "outside the allowed data roots" in err
    code, _, err = run_cli("score", f"{secret.parent}/*", "-o", tmp_path / "o3.parquet")
    assert code == 1 and "outside the allowed data roots" in err


def test_cli_expands_folders_and_quoted_globs_without_following_symlink_loops(tmp_path, monkeypatch):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    write_jsonl(tmp_path / "runs" / "a" / "1.jsonl", _trace_rows(2))
    write_jsonl(tmp_path / "runs" / "2.jsonl", _trace_rows(3))
    (tmp_path / "runs" / "a" / "loop").symlink_to(tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("score", "runs/**/*.jsonl", "-o", "glob.parquet")
    assert code == 0, err
    assert len(pd.read_parquet(tmp_path / "glob.parquet")) == 5
    code, _, err = run_cli("score", tmp_path / "runs", "-o", "folder.parquet")
    assert code == 0 and len(pd.read_parquet(tmp_path / "folder.parquet")) == 5
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_GLOB_FILES", "1")
    code, _, err = run_cli("score", "runs/**/*.jsonl", "-o", "x.parquet")
    assert code == 1 and "ROLLOUTSCOPE_MAX_GLOB_FILES" in err


def test_cli_gzip_bomb_line_is_one_error_and_the_other_rows_are_scored(tmp_path, monkeypatch):
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write((json.dumps(_trace_rows(1)[0]) + "\n").encode() + b'{"response": "')
        for _ in range(8):
            out.write(b"x" * (1 << 20))
        out.write(b'"}\n' + (json.dumps(_trace_rows(1)[0]) + "\n").encode())
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_LINE_BYTES", str(1 << 20))
    code, _, err = run_cli("score", path, "-o", tmp_path / "out.parquet")
    assert code == 0
    assert "bomb.jsonl.gz, line 2, field 'response': line length is over the limit of 1 MiB" in err
    assert "ROLLOUTSCOPE_MAX_LINE_BYTES" in err
    assert len(pd.read_parquet(tmp_path / "out.parquet")) == 2


def test_cli_reads_a_zip_bundle_and_a_json_array_in_a_jsonl_file(tmp_path, monkeypatch):
    import zipfile

    from rollout_fixtures import write_png

    rows = _trace_rows(2, image="imgs/a.png")
    png = write_png(tmp_path / "a.png", (30, 20)).read_bytes()
    with zipfile.ZipFile(tmp_path / "run.zip", "w") as handle:
        handle.writestr("run/rollouts.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        handle.writestr("imgs/a.png", png)
    array = tmp_path / "array.jsonl"
    array.write_text(json.dumps(_trace_rows(4), indent=2))
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("score", "run.zip", array, "-o", "out.parquet")
    assert code == 0, err
    table = pd.read_parquet(tmp_path / "out.parquet")
    assert sorted(table["source_file"].unique()) == [str(array), "run.zip!run/rollouts.jsonl"]
    bundled = table[table["source_file"] == "run.zip!run/rollouts.jsonl"]
    assert bundled["image_width"].tolist() == [30.0, 30.0]
    assert set(bundled["image_ref"]) == {f"zip:{(tmp_path / 'run.zip').resolve()}!imgs/a.png"}
    errors = pd.read_csv(tmp_path / "out.errors.csv")
    [note] = errors["reason"].tolist()
    assert "one JSON array" in note and errors["severity"].tolist() == ["warning"]
    code, out, _ = run_cli("inspect", "run.zip", array)
    assert code == 0 and "run.zip!run/rollouts.jsonl (jsonl" in out and "note: the file holds one JSON array" in out


def test_cli_empty_file_says_so(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    good = write_jsonl(tmp_path / "good.jsonl", _trace_rows(1))
    code, _, err = run_cli("score", empty, good, "-o", tmp_path / "out.parquet")
    assert code == 1 and f"error: {empty}: empty file" in err
