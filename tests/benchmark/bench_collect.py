"""Collection throughput: the serial collector + replay buffer against a raw gymnasium loop with the same actor.

Run: ``python -m tests.benchmark.bench_collect [--seconds 10] [--rounds 5] [--envs ...] [--managers ...]``. Both
step 10 envs (Pendulum-v1 or HalfCheetah-v5, 200-step episodes) with the SAC collect policy (one actor call per
step for all envs) and push every step's transitions into a ``ReplayBuffer``: the framework through
``SampleSerialCollector.collect(n_sample=10)``, per env manager (``base``, ``subprocess``, ``envpool`` sync, and
async with batches of 5); the raw loop with gymnasium and numpy, one batch per step. The evaluator (5 envs) is timed
the same way against a raw loop. The two loops take turns every ``CHUNK`` seconds for ``--seconds`` per row, so
that both see the machine at the same speed (a VM's speed can change 2x within seconds); the ratio is of the summed
rates, with its range over ``--rounds`` equal blocks of the row.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import gymnasium as gym
import numpy as np
import torch

from ding_lite.config import compile_config, read_config
from ding_lite.data import ReplayBuffer
from ding_lite.worker import InteractionSerialEvaluator, SampleSerialCollector
from entry.kit.run_parts import build_envs
from policy_zoo import create_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZE = 100_000


ENVS = {'Pendulum-v1': ('pendulum', 3, 1), 'HalfCheetah-v5': ('mujoco', 17, 6)}
MANAGERS = {'base': {}, 'subprocess': {}, 'envpool': {}, 'envpool async': {'batch_size': 5}}


def _cfg(env_id: str, manager: str, exp: str):
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
    env_type, obs, act = ENVS[env_id]
    main.exp_name, main.env.env_id, main.env.env_kwargs = exp, env_id, dict(max_episode_steps=200)
    main.env.manager = dict(MANAGERS[manager])
    main.policy.model.update(obs_shape=obs, action_shape=act)
    create.env.type, create.env_manager.type = env_type, manager.split()[0]
    return compile_config(main, create, save_cfg=False)


class Framework:
    def __init__(self, env_id: str, manager: str, exp: str) -> None:
        cfg = _cfg(env_id, manager, exp)
        self.policy = create_policy(cfg.policy, enable_field=['collect', 'eval'])
        self.collector_env, self.evaluator_env = build_envs(cfg)
        self.collector = SampleSerialCollector(cfg.policy.collect.collector, self.collector_env,
                                               self.policy.collect_mode, exp_name=exp)
        self.evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, self.evaluator_env,
                                                    self.policy.eval_mode, exp_name=exp)
        self.buffer = ReplayBuffer({'replay_buffer_size': SIZE})

    def collect(self) -> int:
        before = self.collector.envstep
        self.buffer.push(self.collector.collect_batch(10))
        return self.collector.envstep - before

    def collect_list(self) -> int:
        """DI-engine's list API, as a hand-written loop uses it: ``collect()``'s transition dicts into the buffer."""
        before = self.collector.envstep
        self.buffer.push(self.collector.collect(10))
        return self.collector.envstep - before

    def evaluate(self) -> int:
        return len(self.evaluator.run_episodes()) * 200

    def close(self) -> None:
        self.collector.close()
        self.evaluator.close()


class Raw:
    """The same actor call and storage, written by hand over gymnasium."""

    def __init__(self, env_id: str, model, eval_model) -> None:
        self.model = model  # the collect model (tanh-Gaussian sample) of the framework's policy
        self.eval_model = eval_model  # and its eval model (tanh of the mean): no noise drawn, as the evaluator
        self.envs = [gym.make(env_id, max_episode_steps=200) for _ in range(10)]
        self.eval_envs = [gym.make(env_id, max_episode_steps=200) for _ in range(5)]
        self.obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(self.envs)]).astype(np.float32)
        space = self.envs[0].action_space
        self.low, self.half = space.low, (space.high - space.low) / 2
        self.buffer = ReplayBuffer({'replay_buffer_size': SIZE})

    @torch.no_grad()
    def collect(self) -> int:
        action = self.model.forward(torch.from_numpy(self.obs), mode='compute_actor')['action'].numpy()
        next_obs, reward = np.empty_like(self.obs), np.empty(10, np.float32)
        done, reset_obs = np.zeros(10, np.float32), self.obs.copy()
        for i, env in enumerate(self.envs):
            next_obs[i], reward[i], terminated, truncated, _ = env.step(self.low + (action[i] + 1) * self.half)
            done[i] = terminated
            reset_obs[i] = env.reset()[0] if terminated or truncated else next_obs[i]
        self.buffer.push({'obs': torch.from_numpy(self.obs), 'action': torch.from_numpy(action),
                          'reward': torch.from_numpy(reward), 'next_obs': torch.from_numpy(next_obs),
                          'done': torch.from_numpy(done).bool()})
        self.obs = reset_obs
        return 10

    @torch.no_grad()
    def evaluate(self) -> int:
        """One episode per env (200 steps: the time limit, which ends every episode together), returns tallied
        as the evaluator tallies them."""
        obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(self.eval_envs)]).astype(np.float32)
        returns = np.zeros(len(self.eval_envs))
        for _ in range(200):
            act = self.eval_model.forward(torch.from_numpy(obs), mode='compute_actor')['action'].numpy()
            action = self.low + (act + 1) * self.half
            steps = [env.step(action[i]) for i, env in enumerate(self.eval_envs)]
            obs = np.stack([step[0] for step in steps]).astype(np.float32)
            returns += [step[1] for step in steps]
        self.returns = returns
        return 1000


CHUNK = 0.02  # seconds each loop runs before the other takes its turn


def _chunk(fn, seconds: float) -> tuple[int, float]:
    """Calls of ``fn`` for at least ``seconds``: (env steps, seconds taken)."""
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += fn()
    return steps, elapsed


def interleaved(fw, bare, seconds: float, rounds: int) -> tuple[float, float, list[float]]:
    """``fw`` and ``bare`` taking turns every ``CHUNK`` seconds for ``seconds`` in all: (framework env steps/s, raw
    env steps/s, the ratio in each of ``rounds`` equal blocks)."""
    totals, ratios = np.zeros(4), []
    for _ in range(rounds):
        block, end = np.zeros(4), time.perf_counter() + seconds / rounds
        while time.perf_counter() < end:
            block += (*_chunk(fw, CHUNK), *_chunk(bare, CHUNK))
        ratios.append(block[0] / block[1] / (block[2] / block[3]))
        totals += block
    return totals[0] / totals[1], totals[2] / totals[3], ratios


def run(seconds: float = 10.0, rounds: int = 5, env_ids: tuple[str, ...] = tuple(ENVS),
        managers: tuple[str, ...] = tuple(MANAGERS)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for env_id in env_ids:
            for manager in managers:
                framework = Framework(env_id, manager, os.path.join(tmp, f'{env_id}_{manager}'))
                raw = Raw(env_id, framework.policy._collect_model, framework.policy._eval_model)
                for name, fw, bare in (('collect', framework.collect, raw.collect),
                                       ('collect() list API', framework.collect_list, raw.collect),
                                       ('evaluate', framework.evaluate, raw.evaluate)):
                    if name != 'collect' and manager not in ('base', 'envpool'):
                        continue
                    fw(), bare()
                    fast, slow, ratios = interleaved(fw, bare, seconds, rounds)
                    print(f"{name}, {env_id}, {manager} manager, {5 if name == 'evaluate' else 10} envs: framework "
                          f"{fast:.0f} env steps/s, raw gymnasium loop {slow:.0f}/s, ratio {fast / slow:.3f} (blocks "
                          f"{min(ratios):.3f}-{max(ratios):.3f})", flush=True)
                framework.close()


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--envs', nargs='+', default=list(ENVS), choices=list(ENVS))
    parser.add_argument('--managers', nargs='+', default=list(MANAGERS), choices=list(MANAGERS))
    args = parser.parse_args()
    run(args.seconds, args.rounds, tuple(args.envs), tuple(args.managers))
