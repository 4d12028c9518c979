"""The grammars' LALR tables cached between processes (language/parser_cache.py): a parser
loaded from the cache reads every example and reports every error as a freshly built one; the
cache is JSON (a pickle put in its place is never unpickled), written private and atomically,
and a file that is not private or does not load is never used."""

import json
import os
import pickle
import stat
from pathlib import Path

import lark
import pytest

from cepflow.language import epl, parser, parser_cache
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.language.parser_cache import cache_directory, lalr_parser

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = 'start: WORD ("," WORD)*\nWORD: /[a-z]+/\n%ignore " "\n'
BROKEN_VEPL = ["pattern p() { a -> }", "event A(x: int)\npattern p( = A", "pattern"]
BROKEN_EPL = ["select from pattern [every a = A ->];", "insert into ; create schema A(x int);"]


def _outcomes(read, texts: list[str]) -> list:
    out = []
    for text in texts:
        try:
            out.append(repr(read(text)))
        except PatternSyntaxError as e:
            out.append([str(d) for d in e.diagnostics])
    return out


def _no_build(*args, **kwargs):
    raise AssertionError("the parser was built, not loaded")


def test_a_loaded_parser_reads_and_reports_as_a_built_one(tmp_path, monkeypatch) -> None:
    vepl = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("examples/*/*.vepl"))]
    epls = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("examples/*/*.epl"))]
    assert vepl and epls
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", "off")
    parser._lark.cache_clear()
    epl._parser.cache_clear()
    built = (_outcomes(parse, vepl + BROKEN_VEPL), _outcomes(parse_epl, epls + BROKEN_EPL))
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(tmp_path))
    for _ in range(2):  # the first pass builds and saves, the second loads
        parser._lark.cache_clear()
        epl._parser.cache_clear()
        got = (_outcomes(parse, vepl + BROKEN_VEPL), _outcomes(parse_epl, epls + BROKEN_EPL))
        assert got == built
        monkeypatch.setattr(lark.Lark, "__init__", _no_build)  # (second pass: loaded only)
    parser._lark.cache_clear()
    epl._parser.cache_clear()
    assert sorted(p.name.split("-")[1] for p in tmp_path.iterdir()) == ["epl", "vepl"]


def test_the_cache_is_private_and_keyed_by_the_grammar(tmp_path, monkeypatch) -> None:
    home = tmp_path / "cache"
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(home))
    lalr_parser(GRAMMAR, "t")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    (saved,) = home.iterdir()
    assert stat.S_IMODE(saved.stat().st_mode) & 0o077 == 0
    lalr_parser(GRAMMAR.replace("[a-z]", "[a-y]"), "t")  # another grammar: another file
    assert len(list(home.iterdir())) == 2
    monkeypatch.setattr(lark.Lark, "__init__", _no_build)
    assert lalr_parser(GRAMMAR, "t").parse("ab, c").children[1] == "c"


def test_a_file_others_can_write_or_that_is_damaged_is_not_used(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(tmp_path))
    lalr_parser(GRAMMAR, "t")
    (saved,) = tmp_path.iterdir()
    saved.chmod(0o666)
    loads: list = []
    real_load = parser_cache._load
    monkeypatch.setattr(parser_cache, "_load",
                        lambda text, objects: loads.append(text) or real_load(text, objects))
    assert lalr_parser(GRAMMAR, "t").parse("x").children == ["x"]
    assert loads == []  # (not read: rebuilt, and saved anew as a private file)
    assert stat.S_IMODE(saved.stat().st_mode) & 0o077 == 0
    saved.write_bytes(b"not a parser")
    assert lalr_parser(GRAMMAR, "t").parse("y").children == ["y"]
    assert len(loads) == 1 and saved.read_bytes() != b"not a parser"


class _Planted:
    """What a pickle can do when unpickled: call a function (here, create a file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_the_cache_is_json_and_a_pickle_in_its_place_is_never_unpickled(tmp_path,
                                                                         monkeypatch) -> None:
    home = tmp_path / "cache"
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(home))
    built = lalr_parser(GRAMMAR, "t")
    (saved,) = home.iterdir()
    assert saved.suffix == ".json"
    assert json.loads(saved.read_text(encoding="utf-8"))["lark"] == lark.__version__

    def no_pickle(*args, **kwargs):
        raise AssertionError("a cache file was unpickled")

    monkeypatch.setattr(pickle, "load", no_pickle)
    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(lark.Lark, "__init__", _no_build)
    loaded = lalr_parser(GRAMMAR, "t")  # (from the JSON file: no build, no pickle)
    assert loaded.parse("ab, c") == built.parse("ab, c")
    monkeypatch.undo()
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(home))
    marker = tmp_path / "unpickled"
    for payload in (pickle.dumps(_Planted(marker)),
                    pickle.dumps({"data": _Planted(marker), "memo": {}})):
        saved.write_bytes(payload)
        saved.chmod(0o600)
        assert lalr_parser(GRAMMAR, "t").parse("ab").children == ["ab"]
        assert not marker.exists()  # (the planted file was read as JSON, failed, rebuilt)
        assert json.loads(saved.read_text(encoding="utf-8"))["lark"] == lark.__version__


def test_the_json_form_gives_back_exactly_what_lark_serialized() -> None:
    # tuples and integer-keyed dicts, which JSON lacks, come back as they were
    value = {"a": (1, [2, (3,)]), "b": {0: "x", 7: (None, True)}, "c": [], "d": {}}
    assert parser_cache._decode(json.dumps(parser_cache._encode(value)).encode()) == value
    with pytest.raises(ValueError):
        parser_cache._encode({"~t": [1]})  # (would read back as a tuple: not written)
    with pytest.raises(ValueError):
        parser_cache._encode({1: "x", "y": 2})
    with pytest.raises(ValueError):
        parser_cache._encode({"x": object()})


def test_a_shared_directory_or_off_means_no_cache(tmp_path, monkeypatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(shared))
    assert cache_directory() is None
    lalr_parser(GRAMMAR, "t")
    assert list(shared.iterdir()) == []
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", "off")
    assert cache_directory() is None
    monkeypatch.delenv("CEPFLOW_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "cepflow"
    monkeypatch.delenv("XDG_CACHE_HOME")

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_directory() is None
    lalr_parser(GRAMMAR, "t")  # (built: no cache, no error)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root")
def test_a_file_of_another_user_is_not_read(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CEPFLOW_CACHE_DIR", str(tmp_path))
    lalr_parser(GRAMMAR, "t")
    (saved,) = tmp_path.iterdir()
    os.chown(saved, 12345, 12345)
    assert not parser_cache._private(saved, directory=False)
