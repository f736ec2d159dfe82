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
