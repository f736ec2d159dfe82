#!/usr/bin/env bash
# Every GPU figure of one session in one run (about 9 minutes on an H100/H200): the CUDA tests, the whole loop
# (bench_e2e's graphed rows: the batch drawn inside the update's graph against copied into it, 1 and 4 envs), where
# the host's time per env step goes (bench_e2e --parts), ten seeds on one GPU (bench_seeds, graphed: the envs in
# shared-memory workers and in the learner's process, and against ten one-seed processes started together), the env
# managers on the host's cores, and SimbaV2's learn step against SAC's. The eager rows, the sync audit (bench_e2e
# --syncs), a long run's windows (--windows) and the bf16 learn step run on their own where wanted.
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
#   python3 -m tests.benchmark.bench_seeds --seeds 0-9 --skip-pendulum --halfcheetah 50000 --device cuda \
#     --cuda-graph --env-managers shared_memory --processes --no-learn-step   (the ten seeds' row at 50k env steps)
#   python3 -m tests.benchmark.bench_e2e --device cuda --returns 20000   (seeds 0-2's returns with the batch drawn in
#     the graph, strict stacked against overlapped: about 3 minutes)
#   python3 -m tests.benchmark.bench_e2e --device cuda --windows --steps 5000 --warmup 1000
#   python3 -m tests.benchmark.bench_seeds --seeds 0-9 --skip-pendulum --halfcheetah 12000 --device cuda \
#     --cuda-graph --env-managers shared_memory --no-learn-step --profile   (where the ten seeds' host time goes)
#   python3 -m tests.benchmark.bench_e2e --device cuda --profile   (the one-env loop's, the push's pinned staging)
#   python3 -m tests.benchmark.bench_learn --device cuda --no-compile --amp bf16   (and --policy simba)
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
step 100 "CUDA tests" python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py
step 130 "whole loop, graphed (the batch drawn in the graph, and copied in)" python3 -m tests.benchmark.bench_e2e \
    --device cuda --steps 1200 --rounds 2 --envs 4 --graphed-only
step 35 "host time per env step, stream-overlapped graphed loop, 1 env" python3 -m tests.benchmark.bench_e2e \
    --device cuda --parts --steps 1500 --warmup 1000
step 190 "ten seeds on one GPU, graphed (envs in shared-memory workers, then in the learner's process), and as ten \
processes" python3 -m tests.benchmark.bench_seeds --seeds 0-9 --skip-pendulum --halfcheetah 12000 --device cuda \
    --cuda-graph --env-managers shared_memory,base --processes --no-learn-step
step 25 "env managers on this host's cores, HalfCheetah" python3 -m tests.benchmark.bench_env_managers --envs 2 4 \
    --seconds 2 --rounds 1
step 70 "learn step, SimbaV2 against SAC" python3 -m tests.benchmark.bench_learn --device cuda --no-compile \
    --policy simba_v2
