"""Fuzz cepflow's readers of pattern, EPL, query and metamodel files.

Inputs are random mutations of the shipped files (examples/, tests/*/data/) — spans deleted,
duplicated or swapped, bytes flipped, tokens inserted from a vocabulary of troublemakers
(unbalanced brackets, unterminated strings, comments and action blocks, huge numbers, invalid
UTF-8, NUL) — and grammar-generated deep nesting of patterns and conditions. Each input goes
through what ``cepflow check`` does (decode, parse, check, compile) under a time limit, and must
end in a located diagnostic (a ``DiagnosticError``) or be accepted. Anything else — a traceback,
or running past the limit — is a finding.

    .venv/bin/python scripts/fuzz_patterns.py                  # 5 minutes, random seed
    .venv/bin/python scripts/fuzz_patterns.py --minutes 30 --seed 7 --out fuzz-findings

prints one line per finding and a summary; each finding's input and traceback are written to
the ``--out`` folder (``finding-N.<ext>`` and ``finding-N.txt``); the exit code is 1 if there
was any. tests/language/test_fuzz.py runs a small seeded part of the same campaign in the suite.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("*.vepl", "*.epl", "*.vql", "*.mm")

#: tokens inserted or swapped in: each once broke or could break a reader
VOCABULARY: tuple[bytes, ...] = (
    b"{", b"}", b"(", b")", b"[", b"]", b"<", b">", b",", b";", b":", b".", b"..", b"=",
    b"->", b" OR ", b" AND ", b" NOT ", b" every ", b" where ", b" within ", b" holds-for ",
    b" UNTIL ", b" until ", b" and ", b" or ", b" not ", b"!", b"&&", b"||", b"+", b"-", b"*",
    b"/", b"%", b"^", b"#", b"@", b"$", b"?", b"\\", b"'", b'"', b"//", b"/*", b"*/",
    b"{99999999999999999999}", b"{100000}", b"{0}", b"{1.5}", b"{..}", b"{3..2}",
    b"1e999", b"1e-999", b"0.5", b"9" * 5000, b"-9223372036854775808", b"[1e400 s]",
    b"timer:interval(1e999 sec)", b"a[99999999999999999999].x", b"a[0].x",
    b"action {", b"action { // x\n", b"{ \"", b"{ /*", b"/* x", b"\"\\", b"'\\",
    b"rule R on A action x", b"complexEvent X { as A }", b"atomicEvent A(x : Integer)",
    b"create schema S(x int);", b"insert into Y select * from pattern [every a = A];",
    b"@Name('n') ", b"#time(10 sec)", b".win:length(99999999999999999999)", b"group by x",
    b"having count(*) > 1", b"select ", b"from ", b"pattern [", b"find ", b"check(",
    b"\xff", b"\xfe", b"\xe9", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", "é∀😀".encode(),
    b"\r\n", b"\t", b"\n" * 3,
)


class Timeout(BaseException):
    """An input ran past its time limit (a BaseException: no ``except Exception`` eats it)."""


@dataclass
class Finding:
    """An input that did not end in a diagnostic within the time limit."""

    name: str
    data: bytes
    problem: str  # the traceback, or "timeout after N s"


# ---------------------------------------------------------------- inputs


def shipped_files(root: Path = ROOT) -> list[tuple[str, bytes]]:
    """(name, bytes) of every shipped pattern, EPL, query and metamodel file."""
    files = sorted({p for folder in ("examples", "tests") for glob in SHIPPED
                    for p in (root / folder).rglob(glob)})
    return [(str(p.relative_to(root)), p.read_bytes()) for p in files]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits of ``data``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        n = len(out)
        i, j = sorted((rng.randint(0, n), rng.randint(0, n)))
        j = min(j, i + rng.choice((1, 4, 16, 64, 400)))
        kind = rng.randrange(8)
        if kind == 0:
            del out[i:j]
        elif kind == 1:
            out[i:i] = out[i:j] * rng.choice((1, 2, 30))
        elif kind in (2, 3):
            out[i:i] = rng.choice(VOCABULARY) * rng.choice((1, 1, 1, 3, 50, 2000))
        elif kind == 4:
            out[i:j] = rng.choice(VOCABULARY)
        elif kind == 5 and n:
            out[rng.randrange(n)] = rng.randrange(256)
        elif kind == 6:
            lines = bytes(out).split(b"\n")
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            out = bytearray(b"\n".join(lines))
        else:
            del out[i:]
    return bytes(out)


_HEAD = b"atomicEvent A(x : Integer)\natomicEvent B(x : Integer)\n"
_SCHEMA = b"create schema A(x int);\ncreate schema B(x int);\n"
#: ways to wrap a pattern one level deeper: (VEPL, EPL), ``%`` is the inner pattern
_PATTERN_WRAPS = (
    (b"(%)", b"(%)"), (b"% -> A(x)", b"% -> A"), (b"A(x) -> (%)", b"A -> (%)"),
    (b"% OR B(x)", b"% or B"), (b"(%) AND B(x)", b"(%) and B"), (b"(%)[1 s]", b"every (%)"),
    (b"(%){2}", b"[2] (%)"), (b"(%) within 3 min", b"(%) where timer:within(3 sec)"),
    (b"A(x) -> NOT B(x) -> (%)", b"A -> (%)"),
)
#: ways to wrap a condition one level deeper; ``%`` is the inner condition
_EXPR_WRAPS = (b"(%)", b"-%", b"not %", b"% + x", b"x * (%)", b"f(%)", b"% and x > 1",
               b"(%) or x < 2", b"% == 3", b"max(x, %)")


def _nest(rng: random.Random, leaf: bytes, wraps: tuple[bytes, ...], depth: int) -> bytes:
    text = leaf
    for _ in range(depth):
        text = rng.choice(wraps).replace(b"%", text)
    return text


def deep_input(rng: random.Random) -> tuple[str, bytes]:
    """A grammar-generated input nested between 50 and 3,000 levels deep (VEPL or EPL)."""
    depth = rng.choice((50, 99, 100, 101, 150, 300, 1000, 3000))
    epl = rng.random() < 0.4
    if rng.random() < 0.5:
        wraps = tuple(w[1 if epl else 0] for w in _PATTERN_WRAPS)
        body = _nest(rng, b"A" if epl else b"A(x)", wraps, depth)
    else:
        cond = _nest(rng, b"x", _EXPR_WRAPS, depth)
        body = b"A(" + cond + b")" if epl else b"A(x) where " + cond
    if epl:
        return f"deep-{depth}.epl", _SCHEMA + b"insert into C select * from pattern [" + body \
            + b"];\n"
    return f"deep-{depth}.vepl", _HEAD + b"complexEvent C(x : Integer) { as " + body + b" }\n"


def inputs(rng: random.Random, shipped: list[tuple[str, bytes]], mutations: int, deep: int
           ) -> Iterator[tuple[str, bytes]]:
    """``mutations`` mutated shipped files and ``deep`` deeply nested inputs, shuffled."""
    kinds = [True] * deep + [False] * mutations
    rng.shuffle(kinds)
    for is_deep in kinds:
        if is_deep:
            yield deep_input(rng)
        else:
            name, data = rng.choice(shipped)
            yield name, mutate(rng, data)


# ---------------------------------------------------------------- running one input


def _read(name: str, data: bytes) -> None:
    """What ``cepflow check`` does with a file of this name and content."""
    from cepflow.language.epl import parse_epl
    from cepflow.language.parser import parse
    from cepflow.language.source import decode_source
    from cepflow.loader import diagnose
    from cepflow.models.mmparser import parse_metamodel
    from cepflow.queries.query_parser import parse_queries

    text = decode_source(data, name)
    if name.endswith(".vql"):
        parse_queries(text, name)
    elif name.endswith(".mm"):
        parse_metamodel(text, name)
    else:
        diagnose(parse_epl(text, name) if name.endswith(".epl") else parse(text, name))


def _alarm(signum: int, frame: object) -> None:
    raise Timeout


def run_one(name: str, data: bytes, limit: float,
            read: Callable[[str, bytes], None] | None = None) -> Finding | None:
    """Read one input (with ``read``, by default as ``cepflow check`` does) under a
    ``limit``-second alarm; a Finding unless it ended in a diagnostic or was accepted in time."""
    from cepflow.language.diagnostics import DiagnosticError

    read = read or _read

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    try:
        read(name, data)
    except DiagnosticError:
        return None
    except Timeout:
        return Finding(name, data, f"timeout after {limit} s")
    except Exception:
        return Finding(name, data, traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - start
    return None if elapsed <= limit else Finding(name, data, f"took {elapsed:.2f} s")


def campaign(seed: int, mutations: int, deep: int, limit: float) -> list[Finding]:
    """Run ``mutations`` + ``deep`` inputs drawn with ``seed``; the findings."""
    rng = random.Random(seed)
    shipped = shipped_files()
    return [f for name, data in inputs(rng, shipped, mutations, deep)
            if (f := run_one(name, data, limit)) is not None]


# ---------------------------------------------------------------- the command


def main(argv: list[str] | None = None) -> int:
    """Fuzz for ``--minutes``; print and save findings; exit 1 if there was any."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds allowed per input")
    ap.add_argument("--out", type=Path, default=ROOT / "fuzz-findings")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    deadline = time.monotonic() + 60 * args.minutes
    runs = found = 0
    while time.monotonic() < deadline:
        for f in campaign(seed, mutations=90, deep=10, limit=args.limit):
            found += 1
            args.out.mkdir(parents=True, exist_ok=True)
            ext = Path(f.name).suffix or ".txt"
            (args.out / f"finding-{found}{ext}").write_bytes(f.data)
            (args.out / f"finding-{found}.txt").write_text(
                f"seed {seed}, from {f.name}\n\n{f.problem}", encoding="utf-8")
            last = f.problem.strip().splitlines()[-1]
            print(f"finding {found} (seed {seed}, {f.name}): {last}", flush=True)
        runs += 100
        seed += 1
    print(f"{runs} inputs, {found} finding(s)" + (f" in {args.out}" if found else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
