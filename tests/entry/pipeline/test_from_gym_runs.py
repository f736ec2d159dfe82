"""From gym as a user runs it: the tests of ``tests.envs.test_from_gym`` that train or load through ``entry`` (the core
tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

from easydict import EasyDict
import gymnasium as gym
import pytest

from ding_lite.config import ConfigError
from ding_lite.utils import load_file
from entry import serial_pipeline
from tests.envs.test_from_gym import _cfg, _pendulum


@pytest.mark.parametrize('given', ['make_vec', 'factories', 'envs', 'di_engine'])
def test_a_run_takes_gymnasium_envs_as_their_users_bring_them(tmp_path, given):
    """Each form trains: the collector steps as many envs as were given (``env.collector_env_num`` follows), each
    a GymnasiumEnv around the user's env (actions scaled, seeded)."""
    setting = {'make_vec': lambda: gym.make_vec('Pendulum-v1', num_envs=3, vectorization_mode='sync',
                                                max_episode_steps=20),
               'factories': lambda: [_pendulum] * 3,
               'envs': lambda: [_pendulum() for _ in range(3)],
               'di_engine': lambda: (lambda cfg: _pendulum(), [{}] * 3, [{}] * 2)}[given]()
    serial_pipeline(_cfg(tmp_path, given), seed=0, env_setting=setting, max_train_iter=12)
    rows = (tmp_path / given / 'log' / 'evaluator.csv').read_text().splitlines()[1:]
    assert [row.split(',')[0] for row in rows] == ['0', '10', '12']  # eval_freq 10, and the last weights
    collector = load_file(str(tmp_path / given / 'ckpt' / 'ckpt_last.pth.tar'))['run']['collector']
    assert sorted(collector['return']) == [0, 1, 2] and len(set(collector['env']['seeds'])) == 3
    if given != 'di_engine':  # total_config.py records the envs the run stepped (a re-run of it steps as many)
        assert "'collector_env_num': 3" in (tmp_path / given / 'total_config.py').read_text()


def test_a_batched_action_space_is_not_advised_to_be_flattened():
    """A Box of N rows (N envs glued, or one agent's matrix) is refused; the advice separates the envs rather than
    flattening them into one agent."""
    import numpy as np

    from entry.kit.env_check import _action_size
    with pytest.raises(ConfigError) as info:
        _action_size(EasyDict(type='sac'), gym.spaces.Box(-1, 1, (3, 1), np.float32), "'Glued-v0'")
    message = str(info.value)
    assert 'env.collector_env_num=N' in message and 'env_setting=the VectorEnv' in message
    assert 'flatten' not in message
