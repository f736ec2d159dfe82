"""ding_lite: a registry-based RL framework centred on the Soft Actor-Critic family.

The everyday API is re-exported lazily, e.g. ``from ding_lite import compile_config, POLICY_REGISTRY``.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = '0.1.0'

_LAZY = {
    'ding_lite.registry': ('Registry', 'POLICY_REGISTRY', 'MODEL_REGISTRY', 'ENV_REGISTRY', 'ENV_MANAGER_REGISTRY',
                           'BUFFER_REGISTRY', 'WRAPPER_REGISTRY', 'REWARD_MODEL_REGISTRY'),
    'ding_lite.config': ('compile_config', 'read_config', 'save_config', 'ConfigError'),
    'ding_lite.model': ('model_wrap', 'register_wrapper', 'ContinuousQAC', 'DiscreteQAC'),
    'ding_lite.data': ('default_collate', 'default_decollate', 'ReplayBuffer', 'PrioritizedReplayBuffer'),
    'ding_lite.rl_utils': ('v_1step_td_data', 'v_1step_td_error', 'q_v_1step_td_data', 'q_v_1step_td_error',
                           'get_train_sample'),
    # upper layers, imported only when asked for: the core never imports them at module level
    'policy_zoo': ('Policy', 'SACPolicy', 'DiscreteSACPolicy', 'SQILSACPolicy', 'create_policy', 'get_policy_cls'),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def _entry_names() -> list[str]:
    """The pipelines' public names: ``entry.__all__``, the one list (entry's package imports nothing heavy)."""
    return list(importlib.import_module('entry').__all__)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    if not name.startswith('_') and name in _entry_names():
        return getattr(importlib.import_module('entry'), name)
    raise AttributeError(f"module 'ding_lite' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_WHERE) + _entry_names())
