#!/usr/bin/env bash
# Regenerate requirements.lock: every dependency of pyproject.toml (with the dev, scale, gemma, docs and track extras) pinned to
# one version, with hashes, for CPython 3.11 on Linux x86_64 (the platform CI runs on).
#
# torch is left out of the lock: it is installed first, on its own (`pip install torch==2.13.0`),
# so that a machine gets the build it wants (CPU here). Its own dependencies are resolved against
# the CPU build (no CUDA packages) and are in the lock. TORCH_WHEELS names where that build is
# found: a folder of wheels or a find-links page (default: PyTorch's).
#
#   pip install uv && scripts/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_WHEELS="${TORCH_WHEELS:-$( [ -d /opt/wheels ] && echo /opt/wheels || echo https://download.pytorch.org/whl/torch/ )}"
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
echo "torch==2.13.0+cpu" > "$constraints"
uv pip compile pyproject.toml --extra dev --extra scale --extra gemma --extra docs --extra track --generate-hashes --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 --find-links "$TORCH_WHEELS" --constraint "$constraints" \
  --no-emit-package torch --custom-compile-command "scripts/lock.sh" -o requirements.lock "$@"
