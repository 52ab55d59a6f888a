#!/usr/bin/env bash
# The wheels tools/gpu/run.sh needs on the device machine, whose image (Python 3.12,
# torch/jax/cupy with CUDA, numpy, scipy, rich, matplotlib, psutil, threadpoolctl,
# hypothesis, pytest, toolz, cloudpickle, fsspec, jinja2, pyyaml, attrs) reaches no
# package index. Run here, in the repository root; `.whl/` is git-ignored and named
# in the device call's `carry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
pure=(array-api-compat array-api-strict dask partd locket distributed zict tblib
      jsonschema jsonschema-specifications referencing)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp -d .whl "${pure[@]}"
# rpds-py (for jsonschema) and tornado (for distributed) are compiled: manylinux wheels.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl rpds-py tornado
ls -la .whl
du -sh .whl
