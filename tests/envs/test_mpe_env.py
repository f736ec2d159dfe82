"""DI-engine's ``petting_zoo`` env on mpe2: its observation dict, its team reward and its episode end."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.utils.default_config import ConfigError

mpe = pytest.importorskip('mpe2.simple_spread_v3')
from envs import MPESpreadEnv  # noqa: E402


def test_the_observation_dict_and_the_team_reward_are_di_engines():
    env = MPESpreadEnv({'n_agent': 3, 'n_landmark': 3, 'max_cycles': 4})
    twin = mpe.parallel_env(N=3, local_ratio=0.5, max_cycles=4)
    env.seed(7, dynamic_seed=False)
    obs = env.reset()
    raw, _ = twin.reset(seed=7)
    own = np.stack([raw[a] for a in twin.agents])
    assert np.array_equal(obs['agent_state'], own) and obs['agent_state'].shape == (3, 18)
    glob = obs['global_state']
    assert glob.shape == (4 * 3 + 2 * 3 + 2 * 3 * 2,) == env.observation_space['global_state'].shape
    assert np.array_equal(glob[:2], own[0, 2:4])                      # agent 0's position first
    assert np.array_equal(glob[-12:], own[:, -4:].reshape(-1))        # every agent's communication last
    assert obs['action_mask'].shape == (3, 5) and obs['action_mask'].all()
    assert np.all(obs['agent_alone_padding_state'][:, 10:14] == 0)   # the other agents' positions padded out
    for step in range(4):
        timestep = env.step(np.array([1, 2, 3]))
        _, rewards, _, truncations, _ = twin.step({'agent_0': 1, 'agent_1': 2, 'agent_2': 3})
        # each agent's global + local reward, summed: twice mpe2's local_ratio=0.5 mix
        assert timestep.reward.shape == (1,) and timestep.reward[0] == pytest.approx(2 * sum(rewards.values()))
        assert timestep.done == (step == 3)
    assert timestep.info['TimeLimit.truncated'] and 'eval_episode_return' in timestep.info
    each = timestep.info['agent_metrics']  # logged per agent beside the team's return
    assert sum(each[f'return_agent_{a}'] for a in range(3)) == pytest.approx(timestep.info['eval_episode_return'])
    assert each['length_agent_2'] == 4


def test_agent_specific_global_state_continuous_actions_and_refusals():
    env = MPESpreadEnv({'n_agent': 2, 'n_landmark': 2, 'continuous_actions': True,
                        'agent_specific_global_state': True})
    env.seed(0)
    obs = env.reset()
    assert obs['global_state'].shape == (2, 12 + 4 * 2 + 2 * 2 + 2 * 2 * 1)
    assert np.array_equal(obs['global_state'][:, :12], obs['agent_state'])  # each agent's own view first
    assert env.action_space.shape == (5,) and env.action_space.low.min() == -1.0
    assert env.step(np.zeros((2, 5), np.float32)).obs['agent_state'].shape == (2, 12)
    with pytest.raises(ConfigError, match="env.type='pettingzoo_agents' with env_id its module"):
        MPESpreadEnv({'env_id': 'simple_tag_v2'})
    with pytest.raises(ConfigError, match='one landmark per agent'):
        MPESpreadEnv({'n_agent': 3, 'n_landmark': 2})


def test_the_env_types_say_which_design_they_are_and_their_old_names_still_work():
    """``pettingzoo_agents``: an env slot per agent; ``pettingzoo_team``: one env with an agent axis (MASAC's). The
    names they had (``pettingzoo``; DI-engine's ``petting_zoo``) are aliases of the same classes."""
    from ding_lite.registry import ENV_REGISTRY
    from envs.mpe_env import MPESpreadEnv
    from envs.pettingzoo_env import PettingZooEnv
    assert ENV_REGISTRY.get('pettingzoo_agents') is ENV_REGISTRY.get('pettingzoo') is PettingZooEnv
    assert ENV_REGISTRY.get('pettingzoo_team') is ENV_REGISTRY.get('petting_zoo') is MPESpreadEnv
    assert PettingZooEnv.agent_slots and not getattr(PettingZooEnv, 'agent_axis', False)
    assert MPESpreadEnv.agent_axis and not getattr(MPESpreadEnv, 'agent_slots', False)
