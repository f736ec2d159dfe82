"""``serial_pipeline``: one seed's run, or many seeds trained as one batched run."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from easydict import EasyDict
from torch import nn

from policy_zoo import Policy
from .seeds import train_seeds
from .single import train_one
from ..kit.steps import learn_sampler


def serial_pipeline(input_cfg: str | tuple | list, seed: int | list[int] | None = None,
                    env_setting: list | None = None, model: nn.Module | None = None, max_train_iter: int = int(1e10),
                    max_env_step: int = int(1e10), resume: bool | str = False,
                    overrides: dict[str, Any] | None = None) -> Policy | list[Policy]:
    """Train the config's policy serially; returns the trained policy (DI-engine's signature).

    ``seed`` a list (``[0, 1, 2, 3, 4]``) trains those seeds as one batched run, each in its own
    ``<exp_name>_seed<N>/``, and returns their policies in seed order (``entry.pipeline.seeds``).

    ``input_cfg`` is a config file path or a ``(main_config, create_config)`` pair; ``env_setting`` an optional
    ``(env_fn, collector_env_cfgs, evaluator_env_cfgs)`` replacing the registered env. With
    ``policy.other.offline_buffer.path`` set, each batch mixes that file's transitions (real rewards) at ``ratio``.
    ``seed`` None runs the config's own seed (a saved ``total_config.py`` records it), else 0. ``resume`` True
    continues the newest complete checkpoint of ``exp_name`` (``ckpt/latest``); a path continues that checkpoint.
    ``overrides`` (``{'policy.learn.batch_size': 512}``, the CLI's ``--set``) change the config's values, checked as
    the config file's are.
    """
    kwargs = dict(env_setting=env_setting, model=model, max_train_iter=max_train_iter, max_env_step=max_env_step,
                  resume=resume, overrides=overrides)
    if not isinstance(seed, (list, tuple, range)):
        return train_one(input_cfg, seed, **kwargs)
    return train_seeds(train_one, input_cfg, seed, serial_setup, **kwargs)


def serial_setup(cfg: EasyDict, run: SimpleNamespace, resume_path: str | None) -> tuple:
    """A seed's learn sampler in a run of many (and no after-collect step)."""
    return learn_sampler(cfg, run.buffer, run.collector_env.env_ref), None
