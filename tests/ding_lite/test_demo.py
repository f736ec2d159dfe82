from __future__ import annotations

import pytest
import torch

from ding_lite.data import ReplayBuffer, demo_buffer, load_demo, save_demo


def _transitions(n=6, obs=3, discrete=False):
    action = (lambda i: torch.tensor(i % 2)) if discrete else (lambda i: torch.tensor([0.1 * i]))
    return [{'obs': torch.full((obs,), float(i)), 'action': action(i), 'reward': float(-i),
             'next_obs': torch.full((obs,), float(i + 1)), 'done': i == n - 1} for i in range(n)]


def test_round_trip_with_header(tmp_path):
    path = str(tmp_path / 'demo.pt')
    header = save_demo(path, _transitions(), env_id='Pendulum-v1', return_mean=-3.5, policy='sac')
    assert header['count'] == 6 and header['fields']['obs'] == {'shape': [3], 'dtype': 'float32'}
    batch, loaded = load_demo(path, obs_shape=3, action_shape=1, env_id='Pendulum-v1', discrete=False)
    assert loaded == header and loaded['return_mean'] == -3.5
    assert batch.reward.tolist() == [0.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    assert batch.done.tolist() == [False] * 5 + [True]
    buffer = demo_buffer(path, ReplayBuffer, {'model': {'obs_shape': 3, 'action_shape': 1}}, 'Pendulum-v1', False)
    assert buffer.count() == 6 and buffer.size == 6


def test_missing_truncated_foreign_and_old_files(tmp_path):
    with pytest.raises(FileNotFoundError, match='demonstration file not found'):
        load_demo(str(tmp_path / 'none.pt'))
    path = tmp_path / 'demo.pt'
    save_demo(str(path), _transitions(), env_id='Pendulum-v1')
    cut = tmp_path / 'cut.pt'
    cut.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match='not a readable torch file'):
        load_demo(str(cut))
    torch.save({'obs': torch.zeros(3)}, tmp_path / 'foreign.pt')
    with pytest.raises(ValueError, match='not a ding_lite demonstration file'):
        load_demo(str(tmp_path / 'foreign.pt'))
    state = torch.load(path, weights_only=True)
    torch.save(dict(state, version=99), tmp_path / 'future.pt')
    with pytest.raises(ValueError, match='format version 99, expected 1'):
        load_demo(str(tmp_path / 'future.pt'))
    state['data']['obs'] = state['data']['obs'][:4]
    torch.save(state, tmp_path / 'damaged.pt')
    with pytest.raises(ValueError, match=r"damaged: field 'obs' should hold 6 x \[3\]"):
        load_demo(str(tmp_path / 'damaged.pt'))


def test_mismatch_with_the_run(tmp_path):
    path = str(tmp_path / 'demo.pt')
    save_demo(path, _transitions(), env_id='Pendulum-v1')
    with pytest.raises(ValueError, match="recorded on env 'Pendulum-v1', but this run uses 'CartPole-v1'"):
        load_demo(path, env_id='CartPole-v1')
    with pytest.raises(ValueError, match=r"observations of shape \[3\], but policy.model.obs_shape is 4"):
        load_demo(path, obs_shape=4)
    with pytest.raises(ValueError, match=r"actions of shape \[1\], but policy.model.action_shape is 2"):
        load_demo(path, action_shape=2, discrete=False)
    with pytest.raises(ValueError, match='holds continuous actions'):
        load_demo(path, discrete=True)
    discrete = str(tmp_path / 'discrete.pt')
    save_demo(discrete, _transitions(discrete=True), env_id='CartPole-v1')
    with pytest.raises(ValueError, match='holds discrete actions'):
        load_demo(discrete, discrete=False)
    batch, header = load_demo(discrete, obs_shape=3, action_shape=2, discrete=True)  # a scalar index per action
    assert header['env_id'] == 'CartPole-v1' and header['count'] == 6
    assert batch.action.tolist() == [0, 1, 0, 1, 0, 1] and batch.obs[:, 0].tolist() == [0, 1, 2, 3, 4, 5]


def test_save_needs_transition_fields_and_keeps_old_file_on_error(tmp_path):
    path = tmp_path / 'demo.pt'
    save_demo(str(path), _transitions(), env_id='Pendulum-v1')
    before = path.read_bytes()
    with pytest.raises(ValueError, match="missing \\['next_obs'\\]"):
        save_demo(str(path), [{k: v for k, v in t.items() if k != 'next_obs'} for t in _transitions()], env_id='x')
    assert path.read_bytes() == before
