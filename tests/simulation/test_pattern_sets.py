"""Pattern sets in several files (an application and its properties): read as one module, each
diagnostic in its own file; the motorbike properties in both syntaxes."""

from pathlib import Path

import pytest

from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.loader import diagnose_paths, parse_path

MOTORBIKE = Path(__file__).resolve().parents[2] / "examples" / "motorbike"


def test_the_properties_read_the_same_in_both_syntaxes() -> None:
    epl = parse_path(MOTORBIKE / "properties.epl")
    assert [d.name for d in epl.decls] == ["TwoAccidentsTheSameDay", "TooHighTirePressure"]
    assert epl.decls == parse_path(MOTORBIKE / "properties.vepl").decls
    for app, props in (("motorbike.epl", "properties.epl"), ("motorbike.vepl",
                                                             "properties.vepl")):
        diags, program = diagnose_paths([MOTORBIKE / app, MOTORBIKE / props])
        assert diags == [] and program is not None
        assert [a.name for a in program.automata][-2:] == ["TwoAccidentsTheSameDay",
                                                           "TooHighTirePressure"]


def test_errors_are_located_in_their_own_file(tmp_path: Path) -> None:
    props = tmp_path / "props.epl"
    props.write_text("// properties\n\n@Name('P')\ninsert into P select a.motorbikeId as x\n"
                     "from pattern [every a = Accidnet];\n")
    diags, program = diagnose_paths([MOTORBIKE / "motorbike.epl", props])
    assert program is None
    assert f"{props}:5:25: error: undeclared event pattern 'Accidnet'; did you mean " \
        "'Accident'?" in [str(d) for d in diags]
    bad = tmp_path / "bad.epl"
    bad.write_text("@Name('P')\ninsert into P select from pattern [every a = Accident];\n")
    with pytest.raises(PatternSyntaxError) as e:
        diagnose_paths([MOTORBIKE / "motorbike.epl", bad])
    assert all(d.file == str(bad) and d.line == 2 for d in e.value.diagnostics)


def test_one_language_per_set() -> None:
    with pytest.raises(PatternSyntaxError, match=r"all \.epl"):
        diagnose_paths([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.vepl"])
