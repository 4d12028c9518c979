"""``cepflow check`` and ``run`` announce the patterns whose partial matches can grow with
the stream; ``run --max-partial-matches N`` stops at the event that passes N (exit code 4),
with the matches found before it written."""

import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import EXIT_PARTIAL_MATCH_LIMIT, app

runner = CliRunner()

PATTERNS = """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent Open(x: Integer) { as A(x) -> B(x) }
complexEvent Windowed(x: Integer) { as (A(x) -> B(x))[10] }
"""


def files(tmp_path: Path, n: int = 50) -> tuple[Path, Path, Path]:
    pat = tmp_path / "p.vepl"
    pat.write_text(PATTERNS)
    events = tmp_path / "ev.jsonl"
    rows = [{"type": "A", "ts": 0, "x": 0, "id": "a0"}, {"type": "B", "ts": 1, "x": 0, "id": "b0"}]
    rows += [{"type": "A", "ts": 2 + i, "x": i + 1, "id": f"a{i + 1}"} for i in range(n)]
    events.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pat, events, tmp_path / "m.jsonl"


def test_check_and_run_announce_growing_patterns(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path)
    for args in (["check", str(pat)], ["run", str(pat), "-i", str(events), "-o", str(out)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        warned = [ln for ln in res.output.splitlines() if ": warning: " in ln]
        assert len(warned) == 1, res.output
        assert warned[0].startswith(f"{pat}:3:14: warning: pattern Open: its partial matches "
                                    "can grow with the stream")


def test_max_partial_matches_stops_the_run(tmp_path: Path) -> None:
    pat, events, out = files(tmp_path)
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out),
                              "--max-partial-matches", "20"])
    assert res.exit_code == EXIT_PARTIAL_MATCH_LIMIT == 6, res.output
    assert ("stopped at more partial matches than --max-partial-matches: 22 partial matches "
            "held at event a11 at 12, more than max_partial_matches 20 (Open 11, Windowed 11)"
            ) in " ".join(res.output.split())
    written = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert sorted(m["pattern"] for m in written) == ["Open", "Windowed"]  # (a0, b0)
    res = runner.invoke(app, ["run", str(pat), "-i", str(events), "-o", str(out),
                              "--max-partial-matches", "1000"])
    assert res.exit_code == 0, res.output
