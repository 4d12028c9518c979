"""``cepflow run`` when expressions or rule actions fail on some events: no traceback, every
match written, the failing events in the rejected file (kind ``error``), exit code 3; with
``--on-error fail`` the run stops at the first such event (docs/semantics.md)."""

import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import EXIT_EVALUATION_ERRORS, app

runner = CliRunner()

PATTERNS = """atomicEvent Reading(s: String, temp: Double)
atomicEvent Alarm(s: String)
complexEvent Hot(s: String) { as Reading(s, _) where sqrt(temp) > 3 -> Alarm(s) }
"""


def files(tmp_path: Path, actions: str | None = None) -> tuple[Path, Path, Path]:
    pat = tmp_path / "p.vepl"
    pat.write_text(PATTERNS + ("rule notify on Hot action boom\n" if actions else ""))
    events = tmp_path / "ev.jsonl"
    rows = [("Reading", "a", 16.0), ("Reading", "a", -4.0), ("Alarm", "a", None),
            ("Reading", "b", -1.0), ("Reading", "b", 25.0), ("Alarm", "b", None)]
    events.write_text("".join(
        json.dumps({"type": t, "ts": i, "id": f"e{i}", "s": s,
                    **({"temp": v} if v is not None else {})}) + "\n"
        for i, (t, s, v) in enumerate(rows)))
    return pat, events, tmp_path / "m.jsonl"


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def test_run_records_failed_evaluations_and_writes_every_match(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path)
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out)])
    assert res.exit_code == EXIT_EVALUATION_ERRORS == 5, res.output
    assert "Traceback" not in res.output
    assert [m["events"] for m in lines(out)] == [["e0", "e2"], ["e4", "e5"]]
    rejected = lines(out.with_suffix(".rejected.jsonl"))
    assert [(r["kind"], r["location"], r["field"]) for r in rejected] == [
        ("error", "event e1 at 1", "sqrt(temp) > 3"), ("error", "event e3 at 3", "sqrt(temp) > 3")]
    assert rejected[0]["reason"] == (f"{pat}:3:54: `sqrt(temp) > 3` failed: ValueError: "
                                     "math domain error")
    assert json.loads(rejected[0]["record"])["id"] == "e1"
    assert "2 evaluation error(s)" in res.output


def test_on_error_fail_stops_at_the_first(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path)
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out),
                              "--on-error", "fail"])
    assert res.exit_code == 5, res.output
    assert "stopped at the first evaluation error" in res.output
    assert lines(out) == []           # (the first match would have completed at e2)
    assert [r["location"] for r in lines(out.with_suffix(".rejected.jsonl"))] == [
        "event e1 at 1"]


def test_raising_action_does_not_stop_the_run(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path, actions="boom")
    acts = tmp_path / "acts.py"
    acts.write_text("from cepflow.runtime.actions import action\n\n"
                    "@action('boom')\ndef boom(act):\n    raise KeyError('no operator')\n")
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out),
                              "--actions", str(acts)])
    assert res.exit_code == 5, res.output
    assert len(lines(out)) == 2
    errs = [r for r in lines(out.with_suffix(".rejected.jsonl")) if r["source"] == "rule notify"]
    assert [(r["location"], r["field"]) for r in errs] == [
        ("match 1 of Hot at 2", "action boom"), ("match 2 of Hot at 5", "action boom")]
    assert errs[0]["reason"].endswith("`action boom` failed: KeyError: 'no operator'")


def test_unknown_on_error_is_a_usage_error(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path)
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out),
                              "--on-error", "ignore"], env={"COLUMNS": "250"})
    assert res.exit_code == 2 and "'ignore' is not one of 'skip', 'fail'" in res.output
