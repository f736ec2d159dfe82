"""Load a trained run and act with it in the env's own units: ``load_policy(run).predict(obs)``, and its eval actor
exported as TorchScript."""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from ding_lite.config import compile_config, read_config
from ding_lite.worker import load_checkpoint
from envs import get_vec_env_setting
from envs.adapt import ObsAdapter, adapted_env
from policy_zoo import Policy
from ..pipeline.env_check import fit_model_to_env
from ..pipeline.run_parts import create_run_policy


class Agent:
    """A trained policy and what it needs to act in its env's units: the observation adaptation (and, inside the
    model, the normalisation) of its run, and the scaling of [-1, 1] actions into the env's Box bounds."""

    def __init__(self, policy: Policy, adapter: ObsAdapter, scaler: Any, discrete: bool) -> None:
        self.policy, self._adapter, self._scaler, self._discrete = policy, adapter, scaler, discrete

    def predict(self, obs: Any, deterministic: bool = True) -> np.ndarray | int:
        """The action for one observation (as the run's env gives it) or for a batch of them (a leading axis): the
        eval actor's (``deterministic``) or one sampled from the policy. Box actions come scaled into the env's
        bounds; a Discrete action is an int (an int array for a batch)."""
        single, rows = self._rows(obs)
        mode = self.policy.eval_mode if deterministic else self.policy.collect_mode
        output = mode.forward({i: self._adapter(row) for i, row in enumerate(rows)})
        action = torch.stack([output[i]['action'] for i in range(len(rows))]).cpu().numpy()
        if self._discrete:
            action = action.astype(np.int64)
            return int(action[0]) if single else action
        action = self._scaler(action) if self._scaler is not None else action
        return action[0] if single else action

    def _rows(self, obs: Any) -> tuple[bool, list[Any]]:
        source = self._adapter.source
        if isinstance(source, gym.spaces.Dict) and 'action_mask' not in source.spaces:
            return _dict_rows(obs, source)
        if isinstance(source, gym.spaces.Box):
            array = np.asarray(obs.cpu() if isinstance(obs, Tensor) else obs)
            if array.shape == source.shape:
                return True, [array]
            if array.shape[1:] == source.shape:
                return False, list(array)
            raise ValueError(f"predict takes an observation of shape {source.shape} or a batch [N, "
                             f"{', '.join(map(str, source.shape))}], got shape {array.shape}")
        if isinstance(source, gym.spaces.Discrete) and np.ndim(obs) == 1:
            return False, list(np.asarray(obs))
        return True, [obs]  # one Dict / Tuple / Discrete observation

    def export(self, path: str) -> str:
        """Write the eval actor as TorchScript (``torch.jit.load(path)(obs)``, no ding_lite needed): it takes a batch
        of observations in the model's layout (the env's own for 1-D Box envs; after adaptation, e.g. CHW, else),
        normalises them as the run did, and returns actions in the env's units (Box) or indices (Discrete)."""
        if isinstance(self._adapter.space, gym.spaces.Dict):
            raise ValueError("export traces one tensor input; this run's observations are a Dict (images beside "
                             "vectors): act with load_policy(RUN).predict(obs) instead")
        exported = _ExportedActor(self.policy, self._scaler)
        example = torch.as_tensor(np.asarray(self._adapter(self._adapter.source.sample()))).unsqueeze(0)
        with torch.no_grad():
            traced = torch.jit.trace(exported, example, check_trace=False)
        traced.requires_grad_(False)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        traced.save(path)
        return path


def _dict_rows(obs: Any, space: gym.spaces.Dict) -> tuple[bool, list[dict[str, Any]]]:
    """``(single, rows)`` of a Dict observation, a list of them, or a Dict whose values have a leading batch axis;
    a key or shape that does not fit ``space`` is a ``ValueError`` naming it."""
    if isinstance(obs, (list, tuple)):
        return False, [row for item in obs for row in _dict_rows(item, space)[1]]
    if not isinstance(obs, dict) or sorted(obs) != sorted(space.spaces):
        got = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
        raise ValueError(f"predict takes a Dict observation (or a list or batch of them) with the observation keys "
                         f"{sorted(space.spaces)}; got observation keys {got}; expected {sorted(space.spaces)}")
    arrays = {key: np.asarray(value.cpu() if isinstance(value, Tensor) else value) for key, value in obs.items()}
    batched = {key: arrays[key].shape != space[key].shape for key in arrays if space[key].shape is not None}
    for key, is_batch in batched.items():
        expected = space[key].shape
        if is_batch and arrays[key].shape[1:] != expected:
            raise ValueError(f"predict: observation key {key!r} has shape {arrays[key].shape}; expected {expected} "
                             f"(or [N, {', '.join(map(str, expected))}] for a batch)")
    if not any(batched.values()):
        return True, [arrays]
    sizes = {len(arrays[key]) for key, is_batch in batched.items() if is_batch}
    if len(sizes) != 1 or not all(batched.values()):
        raise ValueError(f"predict: a batch of Dict observations needs the same leading axis on every key; got "
                         f"shapes {({key: value.shape for key, value in arrays.items()})}")
    return False, [{key: value[i] for key, value in arrays.items()} for i in range(sizes.pop())]


class _ExportedActor(nn.Module):
    """The eval actor with the run's normalisation and action scaling, as one module to trace."""

    def __init__(self, policy: Policy, scaler: Any) -> None:
        super().__init__()
        self.policy_model, self._policy = policy.model, policy
        bounds = (scaler.low, scaler.half_range) if scaler is not None else (None, None)
        self.register_buffer('low', None if bounds[0] is None else torch.as_tensor(bounds[0]))
        self.register_buffer('half_range', None if bounds[1] is None else torch.as_tensor(bounds[1]))

    def forward(self, obs: Tensor) -> Tensor:
        action = self._policy._forward_eval_batch(obs)['action']
        if self.low is not None:
            action = self.low + (action.clamp(-1, 1) + 1) * self.half_range
        return action


def load_policy(path: str, checkpoint: str = 'ckpt_best.pth.tar', device: str = 'cpu') -> Agent:
    """The policy of a run folder (its ``total_config.py`` and ``ckpt/<checkpoint>``, ``ckpt_best`` by default) or
    of a checkpoint file inside one, ready to ``predict``. ``device`` is where it acts."""
    run, ckpt = _locate(path, checkpoint)
    cfg = compile_config(read_config(os.path.join(run, 'total_config.py')), save_cfg=False)
    cfg.policy.cuda, cfg.policy.device = device.startswith('cuda'), device
    env_fn, _, evaluator_cfgs = get_vec_env_setting(cfg.env)
    env = adapted_env(env_fn, cfg=evaluator_cfgs[0])
    try:
        fit_model_to_env(cfg, env, save=False)
        adapter = getattr(env, 'obs_adapter', None) or ObsAdapter(env.observation_space)
        scaler = getattr(env, 'action_scaler', None)
        discrete = isinstance(env.action_space, gym.spaces.Discrete)
    finally:
        env.close()
    policy = create_run_policy(cfg, enable_field=['collect', 'eval'])
    state = load_checkpoint(ckpt)
    try:
        policy.eval_mode.load_state_dict(state)
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"checkpoint {ckpt} does not fit the policy of {run}/total_config.py: {error}") from error
    return Agent(policy, adapter, scaler, discrete)


def _locate(path: str, checkpoint: str) -> tuple[str, str]:
    """``(run folder, checkpoint file)`` of a run folder or of a checkpoint file in its ``ckpt/``."""
    if os.path.isdir(path):
        run, ckpt = path, os.path.join(path, 'ckpt', checkpoint)
    else:
        ckpt = path
        run = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    if not os.path.isfile(ckpt):
        raise FileNotFoundError(f"no checkpoint {ckpt}: give a run folder (with ckpt/{checkpoint}) or a checkpoint "
                                f"file inside a run's ckpt/ folder")
    if not os.path.isfile(os.path.join(run, 'total_config.py')):
        raise FileNotFoundError(f"{run} has no total_config.py: load_policy needs the run folder a pipeline wrote")
    return run, ckpt


__all__ = ['Agent', 'load_policy']
