"""sbx's SimBa on Pendulum-v1, the peer row of BENCHMARKS.md's "SimBa, SimbaV2 and parameter resets": env steps to -250
of ``SAC('SimbaPolicy')`` at sbx's defaults, five deterministic episodes every 500 env steps.

Run in an environment with sbx (``pip install sbx-rl``; JAX runs on the CPU): ``python -m
tests.benchmark.bench_sbx_simba SEED [--env-steps 5000]``. sbx is a benchmark-only dependency, never imported by
the framework.
"""
from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np


def steps_to(seed: int, env_steps: int = 5000, every: int = 500, stop: float = -250.0) -> int | None:
    """The env step of the first evaluation reaching ``stop`` (None if none did), printing each evaluation."""
    from sbx import SAC
    env, eval_env = gym.make('Pendulum-v1'), gym.make('Pendulum-v1')
    model = SAC('SimbaPolicy', env, seed=seed, verbose=0)
    reached, start = None, time.time()
    for step in range(every, env_steps + 1, every):
        model.learn(every, reset_num_timesteps=False)
        returns = []
        for k in range(5):
            obs, _ = eval_env.reset(seed=1000 + k)
            done, total = False, 0.0
            while not done:
                obs, reward, terminated, truncated, _ = eval_env.step(model.predict(obs, deterministic=True)[0])
                total, done = total + float(reward), terminated or truncated
            returns.append(total)
        print(f"{step} env steps: return {np.mean(returns):.1f} ({time.time() - start:.0f} s)", flush=True)
        reached = step if reached is None and np.mean(returns) >= stop else reached
    return reached


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('seed', type=int)
    parser.add_argument('--env-steps', type=int, default=5000)
    args = parser.parse_args()
    print(f"seed {args.seed}: -250 at {steps_to(args.seed, args.env_steps)} env steps")
