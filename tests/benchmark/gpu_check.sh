#!/usr/bin/env bash
# Every GPU figure of one session in one run (about 9 minutes on an H100/H200): the CUDA tests, the whole loop
# (bench_e2e's graphed rows, with 1, 4 and 16 envs), where the host's time per env step goes (bench_e2e --parts), how
# a long run's rate moves (--windows), ten seeds on one GPU (bench_seeds, graphed, envs in the learner's process and
# in processes of their own) and the learn step (fp32 and bf16). The eager rows and the sync audit (bench_e2e
# --syncs) run on their own where wanted.
# Run from the repository root on the GPU machine:
#   bash tests/benchmark/gpu_check.sh [OUTDIR]   (each step has a time limit, so the whole fits in 10 minutes)
# Its image has torch but not gymnasium, mujoco, easydict, tensorboardX or DI-treetensor: carry them as cp312 wheels
# in .whl/ (see /work/.library/device/README.md), downloaded here with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 -d .whl gymnasium farama-notifications websockets glfw pyopengl \
#     mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 \
#     easydict tensorboardX DI-treetensor treevalue hbutils pytimeparse bitmath chardet==4.0.0 deprecation enum-tools \
#     graphviz dill
# (mujoco's three packages at one version: mujoco refuses to import beside a newer mujoco-core)
# A second call for what does not fit in this one (each about 2-4 minutes):
#   python3 -m tests.benchmark.bench_seeds --seeds 0-9 --skip-pendulum --halfcheetah 12000 --device cuda \
#     --cuda-graph --processes --no-learn-step      (ten seeds batched against ten one-seed processes; 50000 too)
#   python3 -m tests.benchmark.bench_learn --device cuda --no-compile --policy simba_v2   (and --policy simba)
set -uo pipefail
out=${1:-${OUT:-/tmp/gpu_check}}
mkdir -p "$out"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:.
fi
export MUJOCO_GL=disable PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-.}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
log=$out/gpu_check.log
step() { echo "== $2" | tee -a "$log"; t=$1; shift 2; timeout "$t" "$@" 2>&1 | tee -a "$log"; }
step 90 "CUDA tests" python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py
step 130 "whole loop, graphed" python3 -m tests.benchmark.bench_e2e --device cuda --steps 1200 --rounds 2 --envs 4,16 \
    --graphed-only
step 40 "host time per env step, stream-overlapped graphed loop, 1 env" python3 -m tests.benchmark.bench_e2e \
    --device cuda --parts --steps 1500 --warmup 1000
step 40 "one long run of that loop, its rate per 1000 learn steps" python3 -m tests.benchmark.bench_e2e --device cuda \
    --windows --steps 5000 --warmup 1000
step 140 "ten seeds on one GPU, graphed (envs in the learner's process, then in processes)" \
    python3 -m tests.benchmark.bench_seeds --seeds 0-9 --skip-pendulum --halfcheetah 12000 --device cuda --cuda-graph \
    --env-managers base,subprocess --no-learn-step
step 110 "learn step (and bf16)" python3 -m tests.benchmark.bench_learn --device cuda --no-compile --amp bf16
