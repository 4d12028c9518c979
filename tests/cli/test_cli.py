"""The command line: check, run, explain and graph on real files."""

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from cepflow.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
GESTURE = ROOT / "examples" / "gesture" / "gesture.vepl"
EVENTS = ROOT / "examples" / "gesture" / "events.jsonl"
runner = CliRunner()


def test_check_ok() -> None:
    res = runner.invoke(app, ["check", str(GESTURE)])
    assert res.exit_code == 0, res.output
    assert "ok" in res.output


def test_check_reports_every_error_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.vepl"
    bad.write_text("atomicEvent a(x: Integer)\n"
                   "complexEvent C(x: Integer) {\n"
                   "  as a(x) -> missing(x)\n"
                   "}\n"
                   "complexEvent D() { as a(y, z) }\n")
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ": error:" in ln]
    assert any(ln.startswith(f"{bad}:3:14: error:") and "missing" in ln for ln in lines), lines
    assert any(ln.startswith(f"{bad}:5:") for ln in lines), lines


def test_check_syntax_error_position(tmp_path: Path) -> None:
    bad = tmp_path / "syntax.vepl"
    bad.write_text("atomicEvent a\ncomplexEvent C() {\n  as a -> -> a\n}\n")
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1
    assert f"{bad}:3:11:" in res.output


def test_run_writes_matches_and_side_channel(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    lines = EVENTS.read_text().splitlines()[:60]
    lines.insert(5, '{"type": "ForwardStartFound", "ts": "yesterday", "B": "body0"}')
    lines.insert(9, "not json")
    events.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["run", str(GESTURE), "-i", str(events), "-o", str(out)])
    assert res.exit_code == 0, res.output
    matches = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(matches) == 8 and matches[0]["pattern"] == "ForwardGesture"
    assert set(matches[0]) >= {"pattern", "ts", "params", "events"}
    rejected = [json.loads(ln) for ln in out.with_suffix(".rejected.jsonl").read_text()
                .splitlines()]
    assert len(rejected) == 2
    assert {r["location"].split(",")[0] for r in rejected} == {"line 6", "line 10"}


def test_graph_and_explain() -> None:
    res = runner.invoke(app, ["graph", str(GESTURE), "ForwardGesture"])
    assert res.exit_code == 0
    assert res.output.startswith('digraph "ForwardGesture"') and "q3 -> f" in res.output
    res = runner.invoke(app, ["explain", str(GESTURE), "-i", str(EVENTS), "--pattern",
                              "ForwardGesture"])
    assert res.exit_code == 0
    assert "100 match, 0 trap, 0 disposed, 0 partial" in res.output


def test_run_on_spark_equals_local(tmp_path: Path, spark) -> None:  # spark: the shared session
    local, remote = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    assert runner.invoke(app, ["run", str(GESTURE), "-i", str(EVENTS), "-o", str(local)]
                         ).exit_code == 0
    res = runner.invoke(app, ["run", str(GESTURE), "-i", str(EVENTS), "-o", str(remote),
                              "--engine", "spark"])
    assert res.exit_code == 0, res.output
    assert sorted(local.read_text().splitlines()) == sorted(remote.read_text().splitlines())


# ------------------------------------------------------------------ conventions (issue 16)
PATTERNS = """atomicEvent A(k: Integer)
atomicEvent B(k: Integer, x: Double)
complexEvent G(k: Integer) { as A(k) -> B(k, _) }
"""


def folder(tmp_path: Path) -> Path:
    """Two files with interleaving time ranges, and records every engine must reject."""
    src = tmp_path / "ev"
    src.mkdir(exist_ok=True)
    (src / "a.jsonl").write_text('{"type":"A","ts":1,"k":1}\n{"type":"B","ts":5,"k":2,"x":1.5}\n'
                                 '{"type":"A","ts":7,"k":3}\n')
    (src / "b.jsonl").write_text('{"type":"A","ts":2,"k":2}\n{"type":"B","ts":6,"k":1,"x":2}\n'
                                 '{"type":"B","ts":8,"k":3,"x":NaN}\n{"type":"C","ts":9}\n'
                                 '{"type":"B","ts":9,"k":3}\n{"type":"B","ts":10,"k":3,"x":1}\n')
    return src


def invoke(tmp_path: Path, *args: str, patterns: str = PATTERNS):
    pat = tmp_path / "p.vepl"
    pat.write_text(patterns)
    return runner.invoke(app, ["run", str(pat), *args, "--no-progress"])


def test_run_merges_a_folder_by_time_and_rejects_with_reasons(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    res = invoke(tmp_path, "-i", str(folder(tmp_path)), "-o", str(out))
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines == [
        '{"pattern":"G","ts":5,"params":{"k":2},"events":["b.jsonl:0","a.jsonl:1"]}',
        '{"pattern":"G","ts":6,"params":{"k":1},"events":["a.jsonl:0","b.jsonl:1"]}',
        # (N: the position among the file's accepted events)
        '{"pattern":"G","ts":10,"params":{"k":3},"events":["a.jsonl:2","b.jsonl:2"]}']
    rejected = [json.loads(ln) for ln in out.with_suffix(".rejected.jsonl").read_text()
                .splitlines()]
    assert [(r["kind"], Path(r["source"]).name, r["location"], r["field"]) for r in rejected] == [
        ("malformed", "b.jsonl", "line 3", "x"), ("malformed", "b.jsonl", "line 4", "type"),
        ("malformed", "b.jsonl", "line 5", "x")]
    assert [r["reason"] for r in rejected] == [
        "not a finite number: NaN", "unknown event type 'C'", "missing required parameter 'x'"]
    # opt in to keeping such records
    res = invoke(tmp_path, "-i", str(folder(tmp_path)), "-o", str(out), "--unknown-types",
                 "keep", "--missing-fields", "null")
    assert res.exit_code == 0, res.output
    reasons = [json.loads(ln)["reason"] for ln in out.with_suffix(".rejected.jsonl")
               .read_text().splitlines()]
    assert reasons == ["not a finite number: NaN"]


def test_run_output_format_follows_the_extension(tmp_path: Path) -> None:
    src = folder(tmp_path)
    res = invoke(tmp_path, "-i", str(src), "-o", "-")
    assert res.exit_code == 0, res.output
    stdout = [ln for ln in res.stdout.splitlines() if ln.startswith('{"pattern"')]
    assert len(stdout) == 3 and not (tmp_path / "-").exists()
    assert '"reason":"not a finite number: NaN"' in res.stderr  # no side file: on stderr
    assert invoke(tmp_path, "-i", str(src), "-o", str(tmp_path / "m.parquet")).exit_code == 0
    table = pq.read_table(tmp_path / "m.parquet")
    assert table.num_rows == 3 and table.schema.field("ts").type == pa.int64()
    assert invoke(tmp_path, "-i", str(src), "-o", str(tmp_path / "m.csv")).exit_code == 0
    rows = list(csv.DictReader((tmp_path / "m.csv").open()))
    assert json.loads(rows[0]["events"]) == ["b.jsonl:0", "a.jsonl:1"]
    res = invoke(tmp_path, "-i", str(src), "-o", str(tmp_path / "m.txt"))
    assert res.exit_code == 2 and "unsupported output format '.txt'" in res.stderr
    assert not (tmp_path / "m.txt").exists()


def one_line_error(res) -> str:
    assert "Traceback" not in res.output
    (line,) = res.stderr.strip().splitlines()
    return line


def test_run_refuses_unusable_paths_and_options_in_one_line(tmp_path: Path) -> None:
    src = folder(tmp_path)
    out = tmp_path / "m.jsonl"
    (tmp_path / "notes.txt").write_text("x")
    res = invoke(tmp_path, "-i", str(tmp_path / "notes.txt"), "-o", str(out))
    assert res.exit_code == 2 and "unsupported input format '.txt'" in one_line_error(res)
    res = invoke(tmp_path, "-i", str(tmp_path / "missing.jsonl"), "-o", str(out))
    assert res.exit_code == 2 and "no such file or folder" in one_line_error(res)
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = invoke(tmp_path, "-i", str(src), "-o", str(blocker / "m.jsonl"))
    assert res.exit_code == 2 and "cannot write" in one_line_error(res)
    res = invoke(tmp_path, "-i", str(src), "-o", str(out), "--lateness", "-5")
    assert res.exit_code == 2 and "--lateness must be 0 or more" in one_line_error(res)
    assert not out.exists() and not out.with_suffix(".rejected.jsonl").exists()
    pat = str(tmp_path / "p.vepl")
    res = runner.invoke(app, ["stream", pat, "--source", str(src), "--sink", str(tmp_path / "s"),
                              "--checkpoint", str(tmp_path / "c"), "--lateness", "-1"])
    assert res.exit_code == 2 and "--lateness" in one_line_error(res)
    res = runner.invoke(app, ["explain", pat, "-i", str(tmp_path / "notes.txt")])
    assert res.exit_code == 2 and "unsupported input format" in one_line_error(res)


def test_a_stale_side_file_does_not_survive_a_clean_run(tmp_path: Path) -> None:
    src = folder(tmp_path)
    out = tmp_path / "m.jsonl"
    assert invoke(tmp_path, "-i", str(src), "-o", str(out)).exit_code == 0
    assert out.with_suffix(".rejected.jsonl").exists()
    (src / "b.jsonl").write_text('{"type":"A","ts":2,"k":2}\n')
    res = invoke(tmp_path, "-i", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert not out.with_suffix(".rejected.jsonl").exists()


def test_exit_codes_tell_when_nothing_or_too_little_was_processed(tmp_path: Path) -> None:
    src = folder(tmp_path)
    out = tmp_path / "m.jsonl"
    res = invoke(tmp_path, "-i", str(src), "-o", str(out), "--max-rejects", "2")
    assert res.exit_code == 4 and "more than --max-rejects 2" in res.stderr
    assert out.exists()  # the run is complete: the code says the rejections were too many
    assert invoke(tmp_path, "-i", str(src), "-o", str(out), "--max-rejects", "3").exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"C","ts":1}\nnot json\n')
    res = invoke(tmp_path, "-i", str(bad), "-o", str(out))
    assert res.exit_code == 3 and "no event could be processed (2 record(s) rejected)" in (
        res.stderr)


def test_context_is_applied_or_refused_never_ignored(tmp_path: Path) -> None:
    own = PATTERNS + "complexEvent I(k: Integer) { as A(k) -> B(k, _) context immediate }\n"
    events = tmp_path / "e.jsonl"
    events.write_text('{"type":"A","ts":1,"k":1}\n{"type":"B","ts":2,"k":2,"x":0}\n'
                      '{"type":"A","ts":3,"k":1}\n{"type":"B","ts":4,"k":1,"x":0}\n')
    out = tmp_path / "m.jsonl"
    res = invoke(tmp_path, "-i", str(events), "-o", str(out), "--context", "strict",
                 patterns=own)
    assert res.exit_code == 2 and not out.exists()
    assert "--context strict conflicts with the context pattern(s) I (immediate)" in (
        one_line_error(res))

    def first_a(*args: str) -> list[str]:
        res = invoke(tmp_path, "-i", str(events), "-o", str(out), *args, patterns=own)
        assert res.exit_code == 0, res.output
        return [json.loads(ln)["events"][0] for ln in out.read_text().splitlines()
                if json.loads(ln)["pattern"] == "G"]

    assert first_a() == ["0"]  # chronicle: the oldest A
    # applied to G: B(2) is noise to A(1) under immediate, so the match starts at the next A
    assert first_a("--context", "immediate") == ["2"]


def test_repeated_ids_are_rejected_unless_kept(tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text('{"type":"A","ts":1,"k":1,"id":"a"}\n{"type":"B","ts":2,"k":1,"x":0,'
                      '"id":"a"}\n')
    out = tmp_path / "m.jsonl"
    assert invoke(tmp_path, "-i", str(events), "-o", str(out)).exit_code == 0
    (rejected,) = out.with_suffix(".rejected.jsonl").read_text().splitlines()
    assert json.loads(rejected)["reason"].startswith("duplicate id 'a'")
    assert out.read_text() == ""
    assert invoke(tmp_path, "-i", str(events), "-o", str(out), "--duplicate-ids",
                  "keep").exit_code == 0
    assert json.loads(out.read_text())["events"] == ["a", "a"]
