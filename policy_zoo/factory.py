"""The registered policy a config names, built from its compiled config (DI-engine's ``create_policy`` and
``get_policy_cls``, also importable from ``policy_zoo.base_policy`` as in DI-engine)."""
from __future__ import annotations

from typing import Any

from torch import nn

from ding_lite.registry import POLICY_REGISTRY, import_names


def get_policy_cls(cfg: dict) -> type:
    """The registered class for ``cfg.type`` (imports ``cfg.import_names`` first)."""
    import_names(cfg.get('import_names'))
    return POLICY_REGISTRY.get(cfg['type'])


def create_policy(cfg: dict, model: nn.Module | None = None,
                  enable_field: tuple[str, ...] | list[str] = ('learn', 'collect', 'eval')) -> Any:
    """Build ``cfg.type`` from the compiled policy config; a given ``model`` gets the policy's own initialisation
    (``model.init``, SAC's ``learn.init_w``), as a built one has (DI-engine applies ``init_w`` to whatever model its
    policy is given)."""
    cls = get_policy_cls(cfg)
    return cls(cfg, model=model if model is None else cls.init_model(model, cfg), enable_field=enable_field)
