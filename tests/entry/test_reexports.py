"""Layering as a user runs it: the tests of ``tests.ding_lite.test_layering`` that train or load through ``entry`` (the
core tests stay beside the code they test, and import nothing of ``entry``)."""
from __future__ import annotations

import ding_lite


def test_lazy_reexports():
    from ding_lite import POLICY_REGISTRY, ReplayBuffer, SACPolicy, compile_config, model_wrap, serial_pipeline
    from ding_lite.config import compile_config as direct
    from entry import serial_pipeline as entry_pipeline
    assert compile_config is direct and callable(model_wrap) and serial_pipeline is entry_pipeline
    assert SACPolicy.__name__ == 'SACPolicy'
    assert POLICY_REGISTRY.kind == 'policy' and ReplayBuffer.__name__ == 'ReplayBuffer'
    import pytest
    with pytest.raises(AttributeError, match='no_such_name'):
        ding_lite.no_such_name
