"""Draw the pictures of docs/petri.md: for each construct, the subnet the translation makes of
a small pattern (Graphviz SVG into docs/petri/). Run again after changing the translation.

    .venv/bin/python scripts/petri_pictures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from cepflow.automaton.dot import to_svg
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.petri.draw import net_to_dot
from cepflow.petri.translate import translate

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "petri"
SCHEMA = "create schema A(k int, v int);\ncreate schema B(k int, v int);\n" \
         "create schema C(k int, v int);\n"

#: picture name -> (EPL statements after the schemas, the subnets to draw)
PICTURES = {
    "stream": ("insert into P select a.k as k from pattern [every a = A];", {"stream"}),
    "every-spawn": ("insert into P select a.k as k, b.v as v\n"
                    "from pattern [every a = A -> b = B(b.k = a.k)];", {"P"}),
    "every-restart": ("insert into P select a.k as k, b.v as v\n"
                      "from pattern [every (a = A -> b = B)];", {"P"}),
    "once": ("insert into P select a.k as k from pattern [a = A(a.v > 1)];", {"P"}),
    "inner-every": ("insert into P select a.k as k, b.v as v\n"
                    "from pattern [every a = A -> every b = B(b.k = a.k)];", {"P"}),
    "within": ("insert into P select a.k as k\n"
               "from pattern [every a = A -> b = B(b.k = a.k) where timer:within(5 sec)];",
               {"P"}),
    "and-not": ("insert into P select a.k as k\n"
                "from pattern [every a = A -> (b = B and not C(k = a.k))];", {"P"}),
    "or": ("insert into P select a.k as k\n"
           "from pattern [every a = A -> (b = B or c = C)];", {"P"}),
    "and": ("insert into P select b.k as k\n"
            "from pattern [every a = A -> (b = B and c = C)];", {"P"}),
    "distinct": ("insert into P select a.k as k\n"
                 "from pattern [every-distinct(a.k, 10 sec) a = A -> b = B];", {"P"}),
    "insert-into": ("insert into P select a.k as k, a.v as v from pattern [every a = A];\n"
                    "insert into Q select p.k as k from pattern [every p = P -> b = B];",
                    {"Q"}),
    "sliding-time": ("insert into W select count(*) as n from A.win:time(10 sec);", {"W"}),
    "length-group": ("insert into W select k, avg(v) as a from A.std:groupwin(k)"
                     ".win:length(3) group by k;", {"W"}),
    "time-batch": ("insert into W select k, count(*) as n from A.win:time_batch(10 sec)"
                   " group by k;", {"W"}),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for pic, (text, pages) in PICTURES.items():
        prog = load_module(parse_epl(SCHEMA + text))
        net = translate(prog).net
        svg = to_svg(net_to_dot(net, only=pages))
        # (Graphviz's comments name its version: nothing the picture needs)
        svg = "\n".join(ln for ln in svg.splitlines() if not ln.startswith("<!--"))
        (OUT / f"{pic}.svg").write_text(svg + "\n", encoding="utf-8")
        print(f"wrote {OUT / pic}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
