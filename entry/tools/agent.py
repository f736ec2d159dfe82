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
from envs.adapt import ObsAdapter
from envs.from_gym import adapted_env
from policy_zoo import Policy
from ..kit.capabilities import ACTING
from ..kit.env_check import fit_model_to_env
from ..kit.run_parts import create_run_policy


class Agent:
    """A trained policy and what it needs to act in its env's units: the observation adaptation (and, inside the
    model, the normalisation) of its run, and the scaling of [-1, 1] actions into the env's Box bounds."""

    def __init__(self, policy: Policy, adapter: ObsAdapter, scaler: Any, discrete: bool, codec: Any = None) -> None:
        self.policy, self._adapter, self._scaler, self._discrete = policy, adapter, scaler, discrete
        self._codec = codec  # a multi-agent env's: each agent's observation as a row, each row as its action

    def predict(self, obs: Any, state: np.ndarray | None = None, episode_start: Any = None,
                deterministic: bool = True, reward: Any = None) -> Any:
        """The action for one observation (as the run's env gives it) or for a batch of them (a leading axis): the
        eval actor's (``deterministic``) or one sampled from the policy. Box actions come scaled into the env's
        bounds; a Discrete action is an int (an int array for a batch). A recurrent run (``model.rnn``) returns
        ``(action, state)`` (SB3-contrib's): pass ``state`` back with the next observation, None or
        ``episode_start`` True where an episode starts; ``reward``: the last reward, where the model reads it.
        A multi-agent run takes ``{agent: observation}`` (PettingZoo's) and returns ``{agent: action}`` (a state row
        per agent in the dict's order)."""
        if self._codec is not None and isinstance(obs, dict):
            return self._predict_agents(obs, state, episode_start, deterministic, reward)
        return self._predict(obs, state, episode_start, deterministic, reward)

    def _predict(self, obs: Any, state: Any, episode_start: Any, deterministic: bool, reward: Any) -> Any:
        """``predict`` for observations in the model's layout (one, or a batch)."""
        single, rows = self._rows(obs)
        mode = self.policy.eval_mode if deterministic else self.policy.collect_mode
        memory = self.policy.memory
        kwargs = {'memory': _memory_inputs(memory, self._state_rows(state, episode_start, reward, len(rows)))} \
            if memory else {}
        output = mode.forward({i: self._adapter(row) for i, row in enumerate(rows)}, **kwargs)
        action = torch.stack([output[i]['action'] for i in range(len(rows))]).cpu().numpy()
        if memory:
            state = _memory_state(memory, torch.stack([output[i]['state'] for i in range(len(rows))]),
                                  torch.as_tensor(action), kwargs['memory'].get('prev_reward')).numpy()
            return self._env_action(action, single), state[0] if single else state
        return self._env_action(action, single)

    def _predict_agents(self, obs: dict[str, Any], state: Any, episode_start: Any, deterministic: bool,
                        reward: Any) -> Any:
        """``predict`` for ``{agent: observation}``: the agents' rows through the model, each row its agent's action."""
        out = self._predict(self._codec.rows(obs), state, episode_start, deterministic, reward)
        rows, state = out if self.policy.memory else (out, None)
        actions = {agent: self._codec.action(self._codec.index[agent], row) for agent, row in zip(obs, rows)}
        return (actions, state) if self.policy.memory else actions

    def _state_rows(self, state: Any, episode_start: Any, reward: Any, n: int) -> Tensor:
        """``predict``'s recurrent ``state`` as ``[n, width]`` rows, zero where an episode starts, the last reward
        written in where the model reads it."""
        width = memory_width(self.policy.memory)
        rows = torch.zeros(n, width) if state is None else torch.as_tensor(np.asarray(state), dtype=torch.float32)
        rows = rows.reshape(n, -1).clone()
        if rows.shape[1] != width:
            raise ValueError(f"predict: state has {rows.shape[1]} values per observation; this run's recurrent state "
                             f"has {width} (pass back the state predict returned, or None at an episode's start)")
        if self.policy.memory['prev_reward']:
            if reward is None and state is not None:
                raise ValueError("predict: this run's model reads the previous reward (model.rnn.prev_reward): pass "
                                 "reward=the reward the last action got")
            if reward is not None:
                rows[:, -1] = torch.as_tensor(np.asarray(reward), dtype=torch.float32).reshape(n)
        if episode_start is not None:
            rows[torch.as_tensor(np.asarray(episode_start), dtype=torch.bool).reshape(n)] = 0
        return rows

    def _env_action(self, action: np.ndarray, single: bool) -> np.ndarray | int:
        if self._discrete:
            action = action.astype(np.int64)
            if single:  # an int, or a row of them for an env with an agent axis (MASAC)
                return int(action[0]) if action[0].ndim == 0 else action[0]
            return action
        action = self._scaler(action) if self._scaler is not None else action
        return action[0] if single else action

    def _rows(self, obs: Any) -> tuple[bool, list[Any]]:
        source = self._adapter.source
        if isinstance(source, gym.spaces.Dict):
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
            raise ValueError(f"export traces one tensor input; this run's observations are a Dict "
                             f"({', '.join(self._adapter.space.spaces)}): act with load_policy(RUN).predict(obs) "
                             f"instead")
        memory = self.policy.memory
        if memory and memory['prev_reward']:
            raise ValueError("export: this run's model reads the previous reward (model.rnn.prev_reward), which an "
                             "exported actor cannot see: act with load_policy(RUN).predict(obs, state, reward=...)")
        exported = _ExportedActor(self.policy, self._scaler)
        example = torch.as_tensor(np.asarray(self._adapter(self._adapter.source.sample()))).unsqueeze(0)
        if memory:  # (obs, state) -> (action, state)
            example = (example, torch.zeros(1, memory_width(memory)))
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
        self._dtype = next(p.dtype for p in policy.model.parameters() if p.is_floating_point())

    def forward(self, obs: Tensor, state: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        if obs.is_floating_point():  # an env's float64 observations, as the run's adapter cast them (traced as a cast)
            obs = obs.to(self._dtype)
        memory = self._policy.memory
        output = self._policy._forward_eval_batch(obs, **({'memory': _memory_inputs(memory, state)} if memory else {}))
        action = output['action']
        next_state = _memory_state(memory, output['state'], action) if memory else None
        if self.low is not None:
            action = self.low + (action.clamp(-1, 1) + 1) * self.half_range
        return action if next_state is None else (action, next_state)


def memory_width(memory: dict[str, Any]) -> int:
    """Values per env in the state ``predict`` and an exported actor pass around: the recurrent state, the
    previous action (in the model's [-1, 1] or index) and reward, where the model reads them."""
    action = memory['prev_action']
    return memory['state_size'] + (int(np.prod(action[0])) if action else 0) + int(memory['prev_reward'])


def _memory_inputs(memory: dict[str, Any], rows: Tensor) -> dict[str, Tensor]:
    """``EnvMemory.inputs``' form of the ``[n, memory_width]`` state rows."""
    size, action = memory['state_size'], memory['prev_action']
    inputs = {'state': rows[:, :size]}
    if action:
        width = int(np.prod(action[0]))
        inputs['prev_action'] = rows[:, size:size + width].reshape(-1, *action[0]).to(getattr(torch, action[1]))
    if memory['prev_reward']:
        inputs['prev_reward'] = rows[:, -1]
    return inputs


def _memory_state(memory: dict[str, Any], state: Tensor, action: Tensor, reward: Tensor | None = None) -> Tensor:
    """The state rows after acting: the new recurrent state, the action taken, the reward slot kept."""
    parts = [state.float()]
    if memory['prev_action']:
        parts.append(action.reshape(state.shape[0], -1).float())
    if memory['prev_reward']:
        parts.append((reward if reward is not None else torch.zeros(state.shape[0])).reshape(-1, 1).float())
    return torch.cat(parts, 1)


def load_policy(path: str, checkpoint: str = 'ckpt_best.pth.tar', device: str = 'cpu') -> Agent:
    """The policy of a run folder (its ``total_config.py`` and ``ckpt/<checkpoint>``, ``ckpt_best`` by default) or
    of a checkpoint file inside one, ready to ``predict``. ``device`` is where it acts."""
    run, ckpt = _locate(path, checkpoint)
    cfg = compile_config(read_config(os.path.join(run, 'total_config.py')), save_cfg=False, pipeline=ACTING)
    cfg.policy.cuda, cfg.policy.device = device.startswith('cuda'), device
    env_fn, _, evaluator_cfgs = get_vec_env_setting(cfg.env)
    env = adapted_env(env_fn, cfg=evaluator_cfgs[0])
    try:
        fit_model_to_env(cfg, env, save=False)
        adapter = getattr(env, 'obs_adapter', None) or ObsAdapter(env.observation_space)
        scaler = getattr(env, 'action_scaler', None)
        discrete = isinstance(env.action_space, gym.spaces.Discrete)
        codec = getattr(env, 'codec', None)
    finally:
        env.close()
    policy = create_run_policy(cfg, enable_field=['collect', 'eval'])
    state = load_checkpoint(ckpt)
    try:
        policy.eval_mode.load_state_dict(state)
    except (KeyError, RuntimeError) as error:
        raise ValueError(f"checkpoint {ckpt} does not fit the policy of {run}/total_config.py: {error}") from error
    return Agent(policy, adapter, scaler, discrete, codec)


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
