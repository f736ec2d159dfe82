"""Policy base class: learn / collect / eval modes over one model."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import torch
from easydict import EasyDict
from torch import Tensor, nn

from ding_lite.utils.default_config import ConfigError, class_default_config
from ding_lite.data.collate import default_collate
from ding_lite.model import NoValidActionError, model_wrap
from ding_lite.model.wrappers import set_training
from ding_lite.model.heads import initialise
from ding_lite.model.recurrent import Memory
from ding_lite.registry import MODEL_REGISTRY
from ding_lite.rl_utils import get_train_sample
from ding_lite.rl_utils.entropy_log import CollectEntropyLog
from ding_lite.utils import resolve_device
from ding_lite.utils.snapshot import SnapshotActor
from .factory import create_policy, get_policy_cls, model_kwargs
from .policy_checks import refuse_unsupported_modes


class Policy:
    """A model plus what each mode does with it.

    Subclasses implement ``_init_{learn,collect,eval}``, ``_forward_learn(batch) -> dict of 0-d tensors``, the
    ``_state_dict_learn``/``_load_state_dict_learn`` pair, and name a MODEL_REGISTRY entry in ``default_model``.
    Collect and eval forward through ``collect_wrapper``/``eval_wrapper`` around the model via ``_act``.
    """

    action_space_type: ClassVar[str] = 'continuous'  # or 'discrete': checked against the env at start-up
    agent_axis: ClassVar[bool] = False  # acts and learns over an agent axis (policy.multi_agent=True: MASAC)
    collect_wrapper: ClassVar[str] = 'base'
    eval_wrapper: ClassVar[str] = 'base'
    # collect-mode kwargs that sample from the policy's own distribution, without any exploration schedule
    plain_sample_kwargs: ClassVar[dict[str, Any]] = {}
    config = dict(
        type=None,                          # the registered policy name
        cuda=False,                         # learn on CUDA (falls back to the CPU with a warning where there is none)
        device=None,                        # None: 'cuda' if cuda and available, else 'cpu'
        deterministic=False,                # bitwise-repeatable GPU kernels (slower); CPU runs repeat without it
        on_policy=False,                    # DI-engine's flag; ding_lite's policies are off-policy
        priority=False,                     # learn returns 'priority' for a prioritized buffer
        priority_IS_weight=False,           # weight TD errors by the buffer's importance-sampling weights
        random_collect_size=0,              # env steps of uniformly random actions before learning
        multi_agent=False,                  # DI-engine's MASAC: 'sac' runs as 'masac' (discrete: 'discrete_masac')
        transition_with_policy_data=False,  # DI-engine's flag; False only (collect.collector_logit keeps logits)
        model=dict(                         # the model's constructor arguments (see its type), and:
            agent_id_input=False,           # a multi-agent env's agent index one-hot after each observation
        ),
        learn=dict(
            update_per_collect=1,           # learn steps per collect call of n_sample transitions
            batch_size=64,                  # transitions per learn step
            ignore_done=False,              # bootstrap through every episode end (done is stored as terminated)
            data_path=None,                 # serial_pipeline_offline's transitions: a demonstration file or a run's
                                            # replay buffer file (ckpt/*.buffer.pth.tar)
        ),
        collect=dict(
            n_sample=None,                  # transitions per collect call
            n_episode=None,                 # DI-engine's episode collector's; None only (pipelines take n_sample)
            unroll_len=1,                   # consecutive transitions per training sample
            collector_logit=False,          # keep the policy's logits in the transitions
            env_num=None,                   # DI-engine's key, set from env.collector_env_num (as DI-engine)
            model_path=None,                # checkpoint an expert loads (SQIL online demonstrations)
            overlap=False,                  # collect a round behind while learning: True, 'auto', 'process',
                                            # 'stream' (docs/usage.md: in a child process or on a CUDA stream)
        ),
        eval=dict(
            env_num=None,                   # DI-engine's key, set from env.evaluator_env_num (as DI-engine)
        ),
        command=dict(),                     # DI-engine's key; empty only (no command mode here)
        other=dict(
            replay_buffer=dict(),           # the replay buffer's config (see its type)
            offline_buffer=dict(            # transitions mixed into every learn batch (serial_pipeline)
                path=None,                  # a demonstration file (collect_demo_data); None: off
                ratio=0.5,                  # its share of each batch, in (0, 1)
            ),
        ),
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        """Refuse, at compile time, settings this policy declares but cannot honour (``ConfigError`` naming the key and
        what is supported): nothing is accepted only to be ignored."""
        refuse_unsupported_modes(cls, cfg)
        cls.model_kwargs(cfg)  # a key the policy sets that its model does not take: refused by name

    @classmethod
    def default_model(cls) -> str:
        raise NotImplementedError(f"{cls.__name__} names no default model; set policy.model.type")

    def __init__(self, cfg: dict, model: nn.Module | None = None,
                 enable_field: tuple[str, ...] | list[str] = ('learn', 'collect', 'eval')) -> None:
        self._cfg = EasyDict(cfg)
        weights = self._cfg.get('reward_weights')  # a vector reward's weights, as the returns of every mode weigh it
        self.reward_weights = np.asarray(weights, dtype=np.float64) if weights else None
        self._device = torch.device(resolve_device(self._cfg.get('cuda', False), self._cfg.get('device')))
        self._model = (model if model is not None else self.create_model(self._cfg)).to(self._device)
        # observation normalisation (env.norm_obs) travels with the model; every mode applies it to what it is given
        self._obs_norm = getattr(self._model, 'obs_norm', None)
        self._reward_norm = getattr(self._model, 'reward_norm', None)  # env.norm_reward: applied in the learn step
        self._enable_field = tuple(enable_field)
        for field in self._enable_field:
            if field not in ('learn', 'collect', 'eval'):
                raise ValueError(f"unknown policy field {field!r}; expected 'learn', 'collect' or 'eval'")
            getattr(self, f'_init_{field}')()

    @property
    def model(self) -> nn.Module:
        """The model every mode shares."""
        return self._model

    @property
    def cfg(self) -> EasyDict:
        """The compiled policy config."""
        return self._cfg

    @property
    def device(self) -> torch.device:
        return self._device

    # the acting seams a run of many seeds (entry's SeedAxis) maps over its seed axis
    def collect_kwargs(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        return self._collect_kwargs(obs, **kwargs)

    def collect_act(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        return self._collect_act(obs, **kwargs)

    def eval_act(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        return self._forward_eval_batch(obs, **kwargs)

    def record_collect(self, output: dict[str, Tensor], kwargs: dict[str, Any]) -> None:
        """A collect forward made outside ``collect_mode`` (for the collect entropy log)."""
        self._entropy_log.record(output, kwargs)

    def acts_in_batches(self, mode: str) -> bool:
        """Whether ``mode``'s forward is Policy's own batch forward, which a seed axis may map."""
        return getattr(type(self), f'_forward_{mode}_batch') is getattr(Policy, f'_forward_{mode}_batch') and \
            self._batch_forward(mode) is not None

    @property
    def memory(self) -> dict[str, Any] | None:
        """What a recurrent model needs kept per env (``EnvMemory``'s spec), None for a feed-forward one."""
        memory = getattr(self._model, 'memory', None)
        return memory and {**memory, 'save_state': self._cfg.get('save_prev_state', True)}

    @classmethod
    def create_model(cls, cfg: dict) -> nn.Module:
        """The model ``cfg.model`` describes (``cfg.model.type``, else ``default_model()``)."""
        model_type, kwargs = cls.model_kwargs(cfg)
        return cls.init_model(MODEL_REGISTRY.build(model_type, **kwargs), cfg)

    @classmethod
    def model_kwargs(cls, cfg: dict) -> tuple[str, dict[str, Any]]:
        """``(model type, its keyword arguments)`` from ``cfg.model`` (``factory.model_kwargs``); a model declaring
        other actions than the policy's (``action_space_type``) is refused naming both."""
        model_type = (cfg.get('model') or {}).get('type') or cls.default_model()
        acts = getattr(MODEL_REGISTRY.get(model_type), 'action_space_type', None) if model_type in MODEL_REGISTRY \
            else None
        if acts not in (None, cls.action_space_type):
            raise ConfigError(f"policy {cfg.get('type')!r} acts on {cls.action_space_type} actions and model "
                              f"{model_type!r} on {acts} ones; set policy.model.type to a {cls.action_space_type} "
                              f"model (the policy's default: {cls.default_model()!r})")
        return model_kwargs(model_type, cfg)

    @classmethod
    def init_model(cls, model: nn.Module, cfg: dict) -> nn.Module:
        """The policy's own initialisation of a model, built or given to a pipeline: ``model.init``'s scheme (SAC
        then ``learn.init_w``)."""
        return initialise(model, (cfg.get('model') or {}).get('init') or 'default')

    # ---- modes ----
    @property
    def learn_mode(self) -> SimpleNamespace:
        return SimpleNamespace(forward=self._forward_learn, reset=self._reset_learn, state_dict=self._state_dict_learn,
                               load_state_dict=self._load_state_dict_learn, monitor_vars=self._monitor_vars_learn,
                               train_reward_models=getattr(self, '_train_reward_models', None), cfg=self._cfg,
                               set_reward_weights=getattr(self, 'set_reward_weights', None),
                               log_extras=self._log_extras_learn, param_reset=getattr(self, 'param_reset', None),
                               set_horizon=getattr(self, 'set_horizon', None))

    @property
    def collect_mode(self) -> SimpleNamespace:
        return SimpleNamespace(forward=self._forward_collect, reset=self._reset_collect,
                               state_dict=self._state_dict_collect, load_state_dict=self._load_state_dict_collect,
                               process_transition=self._process_transition, get_train_sample=self._get_train_sample,
                               forward_batch=self._batch_forward('collect'), pop_entropy=self._pop_collect_entropy,
                               plain_transition_keys=self._plain_transition_keys(), memory=self.memory, cfg=self._cfg,
                               reward_weights=self.reward_weights)

    @property
    def eval_mode(self) -> SimpleNamespace:
        return SimpleNamespace(forward=self._forward_eval, reset=self._reset_eval, state_dict=self._state_dict_eval,
                               load_state_dict=self._load_state_dict_eval, forward_batch=self._batch_forward('eval'),
                               memory=self.memory, cfg=self._cfg, reward_weights=self.reward_weights)

    def _batch_forward(self, mode: str) -> Any:
        """The mode's forward on stacked observations, or None where a subclass changed its per-env forward (the
        workers then keep to that)."""
        if getattr(type(self), f'_forward_{mode}') is not getattr(Policy, f'_forward_{mode}'):
            return None
        return getattr(self, f'_forward_{mode}_batch')

    def _plain_transition_keys(self) -> list[str] | None:
        """The output fields a transition keeps where transitions are ``_process_transition``'s own, one per train
        sample (so a collector may build them as columns); None where the policy builds its own."""
        own = type(self)._process_transition is not Policy._process_transition or \
            type(self)._get_train_sample is not Policy._get_train_sample
        return None if own or (self._cfg.collect.unroll_len != 1 and not self.memory) else self._output_keys

    # ---- collect / eval ----
    def _init_collect(self) -> None:
        self._collect_model = self._acting(self._model, self.collect_wrapper)
        self._snapshot: SnapshotActor | None = None  # act_from_snapshot's
        self._unroll_len = 1 if self.memory else self._cfg.collect.unroll_len  # the buffer cuts a recurrent model's
        self._entropy_log = CollectEntropyLog()  # references only: read when the collector logs
        self._keep_logit = 'logit' in self._output_keys

    @staticmethod
    def _acting(model: nn.Module, wrapper: str) -> Any:
        """``model`` in ``wrapper`` for ``_act``, holding the observation normaliser it acts with (read per forward
        from the wrapper itself, not looked up through it)."""
        acting = model_wrap(model, wrapper)
        acting.obs_norm = getattr(model, 'obs_norm', None)
        return acting

    def _init_eval(self) -> None:
        self._eval_model = self._acting(self._model, self.eval_wrapper)

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Tensor]]:
        return self._by_env(self._forward_collect_batch, data, **kwargs)

    def _forward_collect_batch(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        """The collect model on stacked observations (leading dim = envs), for every collect path."""
        kwargs = self._collect_kwargs(obs, **kwargs)
        output = self._collect_act(obs, **kwargs)
        self.record_collect(output, kwargs)
        return output

    def act_from_snapshot(self) -> None:
        """Collect from a copy of the weights taken at each ``refresh_snapshot()`` (``collect.overlap`` in this
        process; on CUDA on a stream of its own that never waits for the queued learn steps: ``SnapshotActor``)."""
        self._snapshot = SnapshotActor(self._model, self._device, graphed=bool(self._cfg.learn.get('cuda_graph')))
        self._collect_model = self._acting(self._snapshot.model, self.collect_wrapper)

    def refresh_snapshot(self) -> None:
        """``act_from_snapshot``'s copy of the weights as they stand now (a no-op without one)."""
        if self._snapshot is not None:
            self._snapshot.refresh()

    def _collect_kwargs(self, obs: Any, **kwargs: Any) -> dict[str, Any]:
        """A collect forward's keywords (an exploration schedule's value): its host part, which a seed axis leaves."""
        return kwargs

    def _collect_act(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        """The collect model's outputs on stacked observations, changing no state (a seed axis maps it)."""
        if self._snapshot is None:
            return self._collect_outputs(obs, **kwargs)
        # with no keywords the forward is always the same: a graph of it may be replayed (learn.cuda_graph)
        return self._snapshot.act(lambda o: self._collect_outputs(o, **kwargs), obs, key=None if kwargs else ())

    def _collect_outputs(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        output = self._act(self._collect_model, obs, **kwargs)
        # a Gaussian's [mu, sigma] as one [B, 2, A] tensor where transitions keep it or a CUDA graph returns it (a
        # stack costs 5-10 us of a 10-env Pendulum step on a CPU)
        if (self._keep_logit or self._snapshot is not None) and isinstance(output.get('logit'), (list, tuple)):
            output['logit'] = torch.stack(list(output['logit']), dim=1)
        return output

    def _pop_collect_entropy(self) -> float | None:
        """The collect distribution's mean entropy over the latest collect forwards, which it then forgets."""
        return self._entropy_log.pop(self._collect_entropy)

    def _collect_entropy(self, output: dict[str, Tensor], kwargs: dict[str, Any]) -> Tensor | None:
        """Per row, the entropy of the distribution a collect forward (``output``, called with ``kwargs``) sampled
        its actions from."""
        return None

    def _forward_eval(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Tensor]]:
        return self._by_env(self._forward_eval_batch, data, **kwargs)

    def _forward_eval_batch(self, obs: Any, **kwargs: Any) -> dict[str, Tensor]:
        return self._act(self._eval_model, obs, **kwargs)

    @property
    def _output_keys(self) -> list[str]:
        """What the actors hand on per env: the action, and the logits with ``collector_logit``."""
        return ['action', 'logit'] if self._cfg.collect.get('collector_logit') else ['action']

    def _by_env(self, forward: Any, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Tensor]]:
        """Stack the envs' observations once, run ``forward`` once, split its outputs by env id."""
        env_ids = list(data)
        try:
            output = forward(default_collate(list(data.values())), **kwargs)
        except NoValidActionError as error:
            raise NoValidActionError(error.rows, [env_ids[row] for row in error.rows]) from None
        keys = (*self._output_keys, 'state')  # a recurrent model's new state, for the collector to keep
        rows = {k: output[k].cpu().unbind(0) for k in keys if isinstance(output.get(k), Tensor)}
        return {env_id: {k: v[i] for k, v in rows.items()} for i, env_id in enumerate(env_ids)}

    def _act(self, model: Any, obs: Any, memory: dict[str, Tensor] | None = None, **kwargs: Any) -> dict[str, Tensor]:
        """``model`` (in eval mode) on a batch of observations, without gradients: its outputs, on the policy's
        device. ``memory`` (a recurrent model's): the envs' states and previous action and reward
        (``EnvMemory.inputs``)."""
        if model.training:  # the learn mode leaves the shared model in training mode
            set_training(model, False)
        norm = getattr(model, 'obs_norm', self._obs_norm)  # the model's own (``_acting``): a snapshot's is its own
        grad = torch.is_grad_enabled()  # switched by hand: torch.no_grad() as a decorator costs 1 us a call
        torch.set_grad_enabled(False)
        try:
            obs = obs.to(self._device)
            obs = obs if norm is None else norm(obs)
            if memory is not None:  # one step of each env's sequence
                step = {k: v.to(self._device).unsqueeze(1) for k, v in memory.items() if k != 'state'}
                obs = Memory(obs.unsqueeze(1), memory['state'].to(self._device), **step)
            return model.forward(obs, mode='compute_actor', **kwargs)
        finally:
            torch.set_grad_enabled(grad)

    def _normalize_obs(self, obs: Any) -> Any:
        """``obs`` through the model's observation normaliser, where it has one."""
        return obs if self._obs_norm is None else self._obs_norm(obs)

    def _process_transition(self, obs: Any, model_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        """A transition dict; ``timestep.done`` is already *terminated* (the collector clears time-limit ends)."""
        transition = {'obs': obs, 'next_obs': timestep.obs, 'action': model_output['action'],
                      'reward': timestep.reward, 'done': timestep.done}
        if 'logit' in model_output:
            transition['logit'] = model_output['logit']
        return transition

    def _get_train_sample(self, transitions: list[dict]) -> list[Any]:
        return get_train_sample(transitions, self._unroll_len)

    # ---- state ----
    def _state_dict_collect(self) -> dict[str, Any]:
        snapshot = {} if self._snapshot is None else {'snapshot': self._snapshot.state_dict()}
        return {'model': self._model.state_dict(), **snapshot}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        self._model.load_state_dict(state['model'])
        if self._snapshot is not None:  # the weights it acted with, else the model's (a strict run's resume point)
            if 'snapshot' in state:
                self._snapshot.load_state_dict(state['snapshot'])
            else:
                self._snapshot.refresh()

    def _state_dict_eval(self) -> dict[str, Any]:
        return {'model': self._model.state_dict()}

    def _load_state_dict_eval(self, state: dict[str, Any]) -> None:
        self._model.load_state_dict(state['model'])

    def _reset_learn(self, data_id: list[int] | None = None) -> None:
        """A mode's per-env state forgotten for the envs ``data_id`` (None: all): none here, in any mode."""

    _reset_collect = _reset_eval = _reset_learn

    def _monitor_vars_learn(self) -> list[str]:
        return []

    def draws_in_graph(self, buffer: Any) -> bool:
        """Whether a learn step can take a ``Draw`` of ``buffer`` (drawn inside its captured update); SAC's can."""
        return False

    def _log_extras_learn(self, averaged: dict[str, float]) -> dict[str, float]:
        """Scalars the learner's log adds to the ``averaged`` statistics of the steps since the last log."""
        return {}

    # ---- to implement ----
    def _init_learn(self) -> None:
        raise NotImplementedError

    def _forward_learn(self, data: Any) -> dict[str, Tensor]:
        raise NotImplementedError

    def _state_dict_learn(self) -> dict[str, Any]:
        raise NotImplementedError

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(fields={self._enable_field}, device={self._device})"


__all__ = ['Policy', 'create_policy', 'get_policy_cls']  # DI-engine's home of all three
