from __future__ import annotations

import copy
import os

import pytest
from easydict import EasyDict

from ding_lite.utils.default_config import class_default_config
from ding_lite.registry import ENV_REGISTRY, POLICY_REGISTRY


class ToyPolicy:
    """Minimal registered policy for config tests: declares a few SAC-like keys."""

    config = dict(
        type='toy', cuda=False, device=None, priority=False, random_collect_size=0,
        model=dict(), learn=dict(batch_size=64, learning_rate_q=3e-4, discount_factor=0.99, target_theta=0.005),
        collect=dict(n_sample=1, unroll_len=1), eval=dict(), other=dict(eps=dict(type='exp', start=0.95)),
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    @classmethod
    def default_model(cls) -> str:
        return 'continuous_qac'


class ToyEnv:
    config = dict(env_id='Toy-v0', collector_env_num=1, evaluator_env_num=1, stop_value=None, max_reward=0.0, shape=())

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)


@pytest.fixture
def toy_registered():
    POLICY_REGISTRY.register('toy', ToyPolicy, force_overwrite=True)
    ENV_REGISTRY.register('toy_env', ToyEnv, force_overwrite=True)
    yield
    POLICY_REGISTRY._table.pop('toy', None)
    ENV_REGISTRY._table.pop('toy_env', None)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY_PENDULUM = dict(
    exp_name='tiny',
    env=dict(collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=1e9,
             env_kwargs=dict(max_episode_steps=20)),
    policy=dict(
        random_collect_size=40,
        model=dict(obs_shape=3, action_shape=1, actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn=dict(batch_size=16, learner=dict(hook=dict(log_show_after_iter=5, save_ckpt_after_iter=10))),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=10)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000)),
    ),
)
TINY_CREATE = dict(env=dict(type='pendulum'), env_manager=dict(type='base'), policy=dict(type='sac'))


@pytest.fixture
def tiny_pendulum(tmp_path):
    """A seconds-long Pendulum SAC config writing under ``tmp_path``."""
    main = copy.deepcopy(TINY_PENDULUM)
    main['exp_name'] = str(tmp_path / 'tiny')
    return EasyDict(main), EasyDict(copy.deepcopy(TINY_CREATE))


def zoo_config(name: str, exp_dir) -> tuple[EasyDict, EasyDict]:
    """``dizoo_configs/<name>.py`` with its experiment folder moved to ``exp_dir`` (no writes to the CWD)."""
    import os
    from ding_lite.config import read_config
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main, create = read_config(os.path.join(root, 'dizoo_configs', f'{name}.py'))
    main.exp_name = str(exp_dir)
    return main, create


def first_envstep_reaching(csv_path, stop_value: float) -> int | None:
    """The env step of the first evaluation whose mean return reached ``stop_value`` (None if none did)."""
    import csv
    rows = list(csv.DictReader(open(csv_path)))
    reached = [int(r['envstep']) for r in rows if float(r['return_mean']) >= stop_value]
    return reached[0] if reached else None


def small_variant_steps_to(config: str, exp_dir, stop_value: float, max_env_step: int) -> int | None:
    """A SAC-family variant's short learning test: ``dizoo_configs/<config>.py`` at hidden 64 / batch 64 on one
    thread (the sizes its test thresholds were measured at), seed 0, up to ``max_env_step``; the env step of its
    first evaluation reaching ``stop_value`` (None if none did)."""
    from entry import serial_pipeline
    main, create = zoo_config(config, exp_dir)
    main.policy.model.update(actor_head_hidden_size=64, critic_head_hidden_size=64)
    main.policy.learn.batch_size = 64
    main.policy.learn.learner = dict(num_threads=1)  # one thread is faster at these sizes
    serial_pipeline((main, create), seed=0, max_env_step=max_env_step)
    return first_envstep_reaching(os.path.join(str(exp_dir), 'log', 'evaluator.csv'), stop_value)


@pytest.fixture(scope='session')
def pendulum_expert(tmp_path_factory):
    """The zoo Pendulum SAC config trained on seed 0 (to -250), and 10,000 demonstrations from its best checkpoint.

    Returns ``steps`` (env steps the plain run needed), ``demo``, ``ckpt`` (its best checkpoint) and ``csv`` (its
    evaluator.csv).
    """
    from types import SimpleNamespace
    from entry import collect_demo_data, serial_pipeline
    tmp = tmp_path_factory.mktemp('pendulum_expert')
    main, create = zoo_config('pendulum_sac_config', tmp / 'expert')
    serial_pipeline((main, create), seed=0, max_env_step=40_000)
    steps = first_envstep_reaching(tmp / 'expert' / 'log' / 'evaluator.csv', -250)
    ckpt = str(tmp / 'expert' / 'ckpt' / 'ckpt_best.pth.tar')
    demo = str(tmp / 'demo.pt')
    collect_demo_data((main, create), seed=0, collect_count=10_000, expert_data_path=demo, state_dict_path=ckpt)
    return SimpleNamespace(steps=steps, demo=demo, ckpt=ckpt, csv=tmp / 'expert' / 'log' / 'evaluator.csv')


def synthetic_demo(path, n: int = 300, obs_dim: int = 3, act_dim: int = 1, env_id: str = 'Pendulum-v1',
                   discrete: bool = False, reward: float = -1.0) -> str:
    """A small demonstration file of random transitions (plumbing tests need its shapes, not an expert's skill)."""
    import torch
    from ding_lite.data import save_demo
    generator = torch.Generator().manual_seed(0)
    action = torch.randint(act_dim, (n,), generator=generator) if discrete else \
        torch.rand(n, act_dim, generator=generator) * 2 - 1
    batch = {'obs': torch.randn(n, obs_dim, generator=generator), 'action': action,
             'reward': torch.full((n,), reward), 'next_obs': torch.randn(n, obs_dim, generator=generator),
             'done': torch.zeros(n, dtype=torch.bool)}
    save_demo(str(path), batch, env_id=env_id)
    return str(path)


def pendulum_controller_action(obs) -> float:
    """A hand-made Pendulum-v1 swing-up (energy pumping, then a PD hold near the top; about -130 a episode), in
    the policy's [-1, 1] units."""
    import numpy as np
    cos, sin, speed = obs
    if cos > 0.85:
        torque = -(10.0 * np.arctan2(sin, cos) + 2.0 * speed)
    else:  # pump towards the upright energy: inertia 1/3, potential 5 cos(theta)
        torque = 2.0 * np.sign((5.0 - speed * speed / 6.0 - 5.0 * cos) * speed + 1e-6)
    return float(np.clip(torque, -2.0, 2.0)) / 2.0


def pendulum_expert_demo(path, n: int = 10000, explore: float = 0.3, seed: int = 0, noise: float = 0.2) -> str:
    """A demonstration file of ``n`` Pendulum-v1 transitions of the hand-made controller, a share ``explore`` of
    its actions uniformly random and the rest with Gaussian noise of std ``noise`` (offline learning needs the data's
    spread; ``explore=0, noise=0``: the controller's deterministic actions alone)."""
    import gymnasium as gym
    import numpy as np
    import torch
    from ding_lite.data import save_demo
    rng, env = np.random.default_rng(seed), gym.make('Pendulum-v1')
    obs, _ = env.reset(seed=seed)
    columns = {key: [] for key in ('obs', 'action', 'reward', 'next_obs', 'done')}
    for _ in range(n):
        action = rng.uniform(-1, 1) if rng.random() < explore else \
            np.clip(pendulum_controller_action(obs) + rng.normal(0, noise), -1, 1)
        next_obs, reward, terminated, truncated, _ = env.step([2.0 * action])
        for key, value in (('obs', obs), ('action', [action]), ('reward', reward), ('next_obs', next_obs),
                           ('done', terminated)):
            columns[key].append(value)
        obs = env.reset()[0] if terminated or truncated else next_obs
    batch = {key: torch.as_tensor(np.asarray(value), dtype=torch.bool if key == 'done' else torch.float32)
             for key, value in columns.items()}
    save_demo(str(path), batch, env_id='Pendulum-v1')
    return str(path)


def untrained_checkpoint(cfg: tuple, path) -> str:
    """A ding_lite checkpoint of ``cfg``'s policy, untrained (for tests of the plumbing around checkpoints)."""
    from ding_lite.config import compile_config
    from ding_lite.utils import save_file
    from ding_lite.worker.learner import CHECKPOINT_KIND
    from policy_zoo import create_policy
    policy = create_policy(compile_config(*cfg, save_cfg=False).policy, enable_field=['learn'])
    save_file(str(path), {'kind': CHECKPOINT_KIND, 'last_iter': 0, **policy.learn_mode.state_dict()})
    return str(path)


SLOW_TIMEOUT_S = 1800  # a slow learning test's own limit (pytest.ini's timeout is the default run's, per test)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests (left out by default) get a longer per-test limit than the default run's."""
    for item in items:
        if item.get_closest_marker('slow') and not item.get_closest_marker('timeout'):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
