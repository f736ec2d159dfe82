from __future__ import annotations

import pytest
import torch

from ding_lite.utils import resolve_device


def test_resolve_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert resolve_device(False) == 'cpu' and resolve_device(False, 'cpu') == 'cpu'
    with pytest.warns(UserWarning, match="'cuda' was asked for but CUDA is not available"):
        assert resolve_device(True) == 'cpu'
    with pytest.warns(UserWarning, match="'cuda:1'"):
        assert resolve_device(False, 'cuda:1') == 'cpu'   # a total_config.py saved on a GPU machine
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    assert resolve_device(True) == 'cuda' and resolve_device(True, 'cpu') == 'cpu'


@pytest.mark.parametrize('cuda, buffer_device, expected', [(True, None, 'cuda'), (True, 'cpu', 'cpu'),
                                                           (False, None, 'cpu')])
def test_replay_buffer_follows_the_learner_unless_placed(monkeypatch, cuda, buffer_device, expected):
    from ding_lite.config import compile_config
    from ding_lite.data import ReplayBuffer
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    replay_buffer = {} if buffer_device is None else {'device': buffer_device}
    main = dict(exp_name='unused', policy=dict(cuda=cuda, model=dict(obs_shape=3, action_shape=1),
                                               other=dict(replay_buffer=replay_buffer)))
    policy = compile_config(main, create_cfg=dict(policy=dict(type='sac')), save_cfg=False).policy
    assert policy.device == ('cuda' if cuda else 'cpu')
    assert ReplayBuffer(policy.other.replay_buffer).device.type == expected   # storage is allocated at the first push
    if not cuda:  # saved as None: the same total_config.py re-run with cuda=True puts the buffer on the GPU
        assert policy.other.replay_buffer.device is None
