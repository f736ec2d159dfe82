"""The registered policy a config names, built from its compiled config (DI-engine's ``create_policy`` and
``get_policy_cls``, also importable from ``policy_zoo.base_policy`` as in DI-engine)."""
from __future__ import annotations

import copy
import inspect
from typing import Any

from torch import nn

from ding_lite.registry import MODEL_REGISTRY, POLICY_REGISTRY, import_names
from ding_lite.utils.default_config import ConfigError


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


def model_kwargs(model_type: str, cfg: dict) -> tuple[str, dict[str, Any]]:
    """``(model_type, its keyword arguments)`` from ``cfg.model``: the keys the model takes (all of them where its
    ``__init__`` takes ``**kwargs``); one it does not take is dropped where it is off (None, False, 0), and refused
    naming it, the policy and the model where it is on (CrossQ's BatchRenorm on another network, say)."""
    model_cfg = copy.deepcopy(dict(cfg.get('model', {})))
    model_cfg.pop('type', None)
    model_cfg.pop('init', None)  # the initialiser's name, applied by init_model
    model_cfg.pop('agent_id_input', None)  # a multi-agent env appends the agent's index to its observations
    if model_type not in MODEL_REGISTRY:
        return model_type, model_cfg
    model_cls = MODEL_REGISTRY.get(model_type)
    if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(model_cls.__init__).parameters.values()):
        return model_type, model_cfg
    taken = model_cls.default_config() if hasattr(model_cls, 'default_config') else {}
    on = {key: value for key, value in model_cfg.items() if key not in taken and value not in (None, False, 0)}
    if on:
        raise ConfigError(f"policy {cfg.get('type')!r} on model {model_type!r}: the model takes no "
                          f"{', '.join(f'{k}={v!r}' for k, v in on.items())}; use a model that has it (the policy's "
                          f"default), or a policy that does not need it")
    return model_type, {key: value for key, value in model_cfg.items() if key in taken}
