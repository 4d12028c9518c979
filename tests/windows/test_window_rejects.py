"""Input a window statement cannot take (a value an aggregate cannot aggregate): with a side
channel given to the Engine it goes there with its reason — statement, field, value — while
the statement's state stays as if the event had not come and the event still reaches every
other pattern and statement; without one it stops the run (EngineError). Through `cepflow run`
the rejected records are counted and written like the readers' rejects."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.events.event import Event, SideChannel
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine, EngineError
from cepflow.runtime.state import save_state

EPL = """
create schema T(k string, v object);
insert into Total select k, sum(v) as total from T#length(3) group by k;
insert into Big from pattern [every t=T(k = 'a')];
"""


def events(values: list) -> list[Event]:
    return [Event("T", ("a", v), (i + 1) * 1000.0, None, i) for i, v in enumerate(values)]


def run(values: list, side: SideChannel | None) -> tuple[Engine, list]:
    engine = Engine(load_module(parse_epl(EPL)), side=side)
    out = [m for e in events(values) for m in engine.process(e)]
    return engine, out


def test_a_value_sum_cannot_take_goes_to_the_side_channel_with_its_reason() -> None:
    side = SideChannel()
    engine, out = run([1, "x", 2], side)
    totals = [m.params[1] for m in out if m.type == "Total"]
    assert totals == [1, 3]  # as if "x" had not come
    assert [m.parts[0].params[1] for m in out if m.type == "Big"] == [1, "x", 2]  # patterns
    (r,) = side.malformed
    assert r.source == "statement Total" and r.field == "v" and r.record.params == ("a", "x")
    assert "cannot aggregate the value 'x'" in r.reason and "Total" in r.reason
    assert engine.stats.rejected == 1


def test_the_statement_state_is_unchanged_by_the_refused_event() -> None:
    with_bad, _ = run([1, 2, "x", 3, 4], SideChannel())
    clean = Engine(load_module(parse_epl(EPL)))
    for e in events([1, 2, "x", 3, 4]):
        if e.params[1] != "x":
            clean.process(e)
    assert save_state(with_bad)["windows"] == save_state(clean)["windows"]


def test_without_a_side_channel_it_stops_the_run() -> None:
    with pytest.raises(EngineError, match="cannot aggregate"):
        run([1, "x"], None)


def test_cepflow_run_reports_and_writes_the_refused_events(tmp_path: Path) -> None:
    pat = tmp_path / "p.epl"
    pat.write_text(EPL)
    ev = tmp_path / "ev.jsonl"
    ev.write_text("".join(json.dumps({"type": "T", "ts": (i + 1) * 1000, "k": "a", "v": v})
                          + "\n" for i, v in enumerate([1, "x", 2, True])))
    out = tmp_path / "m.jsonl"
    res = CliRunner().invoke(app, ["run", str(pat), "-i", str(ev), "-o", str(out),
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "refused by window statements" in res.output
    assert "2 record(s) were not processed" in res.output
    totals = [json.loads(ln)["params"]["total"] for ln in out.read_text().splitlines()
              if json.loads(ln)["pattern"] == "Total"]
    assert totals == [1, 3]
    rejected = [json.loads(ln) for ln in out.with_suffix(".rejected.jsonl").read_text()
                .splitlines()]
    assert [(r["source"], r["field"], json.loads(r["record"])["params"][1])
            for r in rejected] == [("statement Total", "v", "x"), ("statement Total", "v", True)]
