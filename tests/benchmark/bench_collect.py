"""Collection throughput: the serial collector + replay buffer against a raw gymnasium loop with the same actor.

Run: ``python -m tests.benchmark.bench_collect [--seconds 2] [--rounds 5]``. Both step 10 ``Pendulum-v1`` envs with
the SAC collect policy of the zoo config (one actor call per step for all envs) and push every step's transitions
into a ``ReplayBuffer``: the framework through ``SampleSerialCollector.collect(n_sample=10)``, per env manager; the
raw loop with gymnasium and numpy, as one batch per step. Interleaved rounds; reports env
steps/s and the median framework/raw ratio. The evaluator is timed the same way against a raw evaluation loop.
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
from entry.utils import build_envs
from policy_zoo import create_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZE = 100_000


def _cfg(manager: str, exp: str):
    main, create = read_config(os.path.join(ROOT, 'dizoo_configs', 'pendulum_sac_config.py'))
    main.exp_name, create.env_manager.type = exp, manager
    return compile_config(main, create, save_cfg=False)


class Framework:
    def __init__(self, manager: str, exp: str) -> None:
        cfg = _cfg(manager, exp)
        self.policy = create_policy(cfg.policy, enable_field=['collect', 'eval'])
        self.collector_env, self.evaluator_env = build_envs(cfg)
        self.collector = SampleSerialCollector(cfg.policy.collect.collector, self.collector_env,
                                               self.policy.collect_mode, exp_name=exp)
        self.evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, self.evaluator_env,
                                                    self.policy.eval_mode, exp_name=exp)
        self.buffer = ReplayBuffer({'replay_buffer_size': SIZE})

    def collect(self) -> int:
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

    def __init__(self, model) -> None:
        self.model = model  # the collect model (tanh-Gaussian sample) of the framework's policy
        self.envs = [gym.make('Pendulum-v1') for _ in range(10)]
        self.eval_envs = [gym.make('Pendulum-v1') for _ in range(5)]
        self.obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(self.envs)])
        self.buffer = ReplayBuffer({'replay_buffer_size': SIZE})

    @torch.no_grad()
    def collect(self) -> int:
        action = self.model.forward(torch.from_numpy(self.obs), mode='compute_actor')['action'].numpy()
        next_obs, reward = np.empty_like(self.obs), np.empty(10, np.float32)
        done, reset_obs = np.zeros(10, np.float32), self.obs.copy()
        for i, env in enumerate(self.envs):
            next_obs[i], reward[i], terminated, truncated, _ = env.step(action[i] * 2.0)
            done[i] = terminated
            reset_obs[i] = env.reset()[0] if terminated or truncated else next_obs[i]
        self.buffer.push({'obs': torch.from_numpy(self.obs), 'action': torch.from_numpy(action),
                          'reward': torch.from_numpy(reward), 'next_obs': torch.from_numpy(next_obs),
                          'done': torch.from_numpy(done).bool()})
        self.obs = reset_obs
        return 10

    @torch.no_grad()
    def evaluate(self) -> int:
        obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(self.eval_envs)])
        for _ in range(200):
            mu = self.model.forward(torch.from_numpy(obs), mode='compute_actor')['logit'][0]
            action = torch.tanh(mu).numpy() * 2.0
            obs = np.stack([env.step(action[i])[0] for i, env in enumerate(self.eval_envs)])
        return 1000


def _rate(fn, seconds: float) -> float:
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += fn()
    return steps / (time.perf_counter() - start)


def run(seconds: float = 2.0, rounds: int = 5, managers: tuple[str, ...] = ('base', 'subprocess')) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for manager in managers:
            framework = Framework(manager, os.path.join(tmp, manager))
            raw = Raw(framework.policy._collect_model)
            for name, fw, bare in (('collect', framework.collect, raw.collect),
                                   ('evaluate', framework.evaluate, raw.evaluate)):
                if name == 'evaluate' and manager != 'base':
                    continue
                fw(), bare()
                pairs = [(_rate(fw, seconds), _rate(bare, seconds)) for _ in range(rounds)]
                ratio = sorted(f / b for f, b in pairs)[rounds // 2]
                print(f"{name}, {manager} manager, 10 Pendulum envs: framework {max(f for f, _ in pairs):.0f} "
                      f"env steps/s, raw gymnasium loop {max(b for _, b in pairs):.0f}/s, ratio {ratio:.2f}",
                      flush=True)
            framework.close()


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--seconds', type=float, default=2.0)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    run(args.seconds, args.rounds)
