#!/usr/bin/env bash
# Creates .venv (if missing or stale) and installs cepflow with its development tools and the
# Spark extra (pip install -e '.[dev,spark]'); on Debian/Ubuntu, also what the system lacks:
# Java (Spark), Graphviz (`cepflow graph -o x.svg`) and Chromium (the report tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
missing=()
# Spark (the data pipeline) needs a JVM
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# `cepflow graph -o x.svg|png|pdf` draws with Graphviz's `dot`
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
# the report tests open the HTML reports in headless Chromium (Playwright drives Debian's)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install ${missing[*]} (Java 17 for the Spark pipeline, Graphviz for" \
         "cepflow graph's SVG/PNG/PDF, Chromium for the report tests)" >&2
  fi
fi
if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.cepflow-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  # (setuptools warns that a mapped folder — examples/ as cepflow.examples — makes the editable
  # install an import hook; docs/packaging.md says why that is intended)
  PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e '.[dev,spark]'
  touch "$stamp"
fi
# Python's bytecode of cepflow's own modules, as `pip install` (not editable) writes it: a
# process that may not write it (PYTHONDONTWRITEBYTECODE) otherwise compiles every module
# anew at each start, ~0.2 s of CPU per command (docs/cli.md, "The process's start")
.venv/bin/python -m compileall -q -j 0 src examples >/dev/null
