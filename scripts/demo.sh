#!/usr/bin/env bash
# The main job of the README: the gesture-recognition case study (000 §7) on the default engine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/cepflow run examples/gesture/gesture.vepl \
  --input examples/gesture/events.jsonl --output out/gestures.jsonl \
  --actions examples/gesture/actions.py --engine spark "$@"
