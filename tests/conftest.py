from __future__ import annotations

import pytest
from easydict import EasyDict

from ding_lite.config import class_default_config
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
    config = dict(env_id='Toy-v0', collector_env_num=1, evaluator_env_num=1)

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
