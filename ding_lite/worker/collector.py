"""Serial collectors: step the env manager with the policy's collect mode and return training data."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import torch
from easydict import EasyDict
from torch import Tensor

from ..data.collate import to_float32, to_ndarray, to_scalar, true_rows
from ..utils.checkpoint import to_safe
from ..registry import SERIAL_COLLECTOR_REGISTRY, import_names
from ..utils.default_config import class_default_config, with_defaults
from .episode_metrics import ReturnTally, episode_metrics, pop_env_stats, return_metrics
from .finite_check import all_finite, env_label, nonfinite_error, nonfinite_fields, nonfinite_rows
from .collect_round import collect_batches, column_batch, transition_rows
from .logger import build_logger, log_episodes
from .transition_reports import Scorer, TransitionReports
from .manager_protocol import begin_step_batch, offers, policy_mode
from .memory import EnvMemory
from .episode_totals import EpisodeTotals


class BaseSerialCollector:
    """Shared stepping: one policy call for all ready envs, then one env step each."""

    config = dict(
        type=None,                   # the registered collector name
        collect_print_freq=100,      # train iterations between collector log lines
        report_collected=False,      # ML-Agents' reports per collected episode: value_estimate (the critics' Q of
                                     # the actions taken) and <signal>_return per reward signal (a forward per step)
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, cfg: dict | None, env: Any = None, policy: SimpleNamespace | None = None,
                 tb_logger: Any = None, exp_name: str = 'default_experiment', instance_name: str = 'collector', *,
                 on_nonfinite: str = 'stop', norm_reward: bool = False, episode_fields: bool = False,
                 scorer: Scorer | None = None) -> None:
        """A NaN/inf from the env stops the run (``on_nonfinite='stop'``) or drops the transition (``'skip'``); each
        transition carries its env's running return with ``norm_reward`` (SB3's rule), ``env_id`` and
        ``episode_start`` with ``episode_fields``; ``scorer``: ``report_collected``'s per-row reports."""
        self._cfg = with_defaults(type(self), cfg)
        self._tb_logger, self.logger = tb_logger, build_logger(exp_name, instance_name)
        self.envstep = self.total_episode = 0
        self.env_restarts = 0  # episodes broken off by an env restart (the subprocess manager's abnormal steps)
        self.on_nonfinite, self.norm_reward, self.episode_fields = on_nonfinite, norm_reward, episode_fields
        self._reports = TransitionReports(scorer, 0)  # sized by reset_env
        self.nonfinite_dropped = 0  # transitions skipped for a NaN/inf
        self._episode_info: list[dict[str, float]] = []  # since the last log line
        self.finished_episodes: list[dict[str, float]] = []  # all of this collector's episodes
        self._last_print_iter = 0
        self._env = self._policy = self._memory = None
        self._totals = EpisodeTotals(0)
        if env is not None:
            self.reset_env(env)
        if policy is not None:
            self.reset_policy(policy)

    def reset_env(self, env: Any) -> None:
        self._env = env
        self._env.launch()
        self._offers = offers(env)
        self._reports = TransitionReports(self._reports.scorer, env.env_num)
        self._traj: dict[int, list[dict]] = {i: [] for i in range(env.env_num)}
        dims = self._totals.dims
        self._totals = EpisodeTotals(env.env_num, None if dims is None else dims.shape[1])
        self._all_ids = list(range(env.env_num))
        # each env's last obs and policy output: an async manager returns envs acted on in an earlier step
        self._obs_pool: dict[int, Any] = {}
        self._output_pool: dict[int, Any] = {}

    def reset_policy(self, policy: SimpleNamespace) -> None:
        self._policy = policy = policy_mode(policy)
        self._tally = ReturnTally(policy)
        dims = self._totals.dims
        if self._tally.dim and (dims is None or dims.shape[1] != self._tally.dim):  # kept across a warm-up's policy
            self._totals.dims = np.zeros((self._env.env_num, self._tally.dim))  # a vector reward's, per dimension
        spec = policy.memory
        self._unroll_len = 1 if spec else policy.cfg.collect.unroll_len  # a recurrent model's buffer cuts sequences
        if spec and (self._memory is None or self._memory.spec != spec):  # kept across a warm-up's stand-in policy
            self._memory = EnvMemory(spec, self._env.env_num)
        self._policy.reset()

    def _forward_rows(self, ids: list[int], obs: Tensor, policy_kwargs: dict | None) -> dict[str, Tensor]:
        """The policy's batch forward for the envs ``ids`` (with their recurrent memory, where it has one)."""
        memory = {'memory': self._memory.inputs(ids)} if self._memory is not None else {}
        return self._policy.forward_batch(obs, **(policy_kwargs or {}), **memory)

    def _step(self, policy_kwargs: dict | None) -> list[tuple[int, dict | None, bool]]:
        """Advance every ready env one step: ``[(env_id, transition, episode_ended)]``; the transition is None
        where a non-finite value dropped it (``on_nonfinite='skip'``)."""
        obs = self._env.ready_obs
        ids = list(obs)
        memory = {'memory': self._memory.inputs(ids)} if self._memory is not None else {}
        output = self._policy.forward(obs, **(policy_kwargs or {}), **memory)
        if memory:  # each env's transition keeps its memory before acting
            columns = self._memory.acted(ids, torch.stack([output[i]['state'] for i in ids]))
            for row, env_id in enumerate(ids):
                output[env_id] = {**output[env_id], 'memory': {k: v[row] for k, v in columns.items()}}
        self._obs_pool.update(obs)
        self._output_pool.update(output)
        # envs get numpy actions, as DI-engine's collector hands them out (and a row's .numpy() is a view)
        actions = {i: to_ndarray(out['action']) for i, out in output.items()}
        timesteps = self._env.step(actions)
        obs, output, steps = self._obs_pool, self._output_pool, []
        stepped = timesteps.values()  # one check per field for all envs; per transition only on a failure
        checked = all_finite([t.reward for t in stepped]) and all_finite([t.obs for t in stepped]) and \
            all_finite([to_ndarray(obs[i]) for i in timesteps]) and all_finite([actions[i] for i in timesteps])
        for env_id, timestep in timesteps.items():
            info = timestep.info
            if info.get('abnormal'):  # the env was restarted: drop the broken episode, store nothing
                self.env_restarts += 1
                self._end_episode(env_id)
                continue
            reward = self._tally.reward(timestep.reward, f"env {env_id}'s reward")
            done = bool(to_scalar(timestep.done, f"env {env_id}'s done"))
            # store done = terminated: an episode cut by a time limit must still bootstrap
            terminated = done and not info.get('TimeLimit.truncated', False)
            raw = {'reward': reward, 'obs': obs[env_id], 'next_obs': timestep.obs, 'action': output[env_id]['action']}
            transition = None
            if not checked and nonfinite_fields(raw):
                self._drop_nonfinite(env_id, raw, len(steps))
            else:
                transition = self._policy.process_transition(obs[env_id], output[env_id],
                                                             timestep._replace(reward=reward, done=terminated))
                if self._memory is not None:
                    transition.update(output[env_id]['memory'])
                    self._memory.stepped([env_id], to_ndarray(output[env_id]['action'])[None], np.float32(reward))
                if self.episode_fields:
                    transition.update(env_id=np.int64(env_id), episode_start=np.bool_(self._totals.length[env_id] == 0))
                running = self._totals.add(env_id, reward, self._tally, self.norm_reward)
                if running is not None:
                    transition['running_return'] = running
            self._totals.length[env_id] += 1
            if done:
                self._finish_episode(env_id, info)
            steps.append((env_id, transition, done))
        self.envstep += len(steps)
        return steps

    def _ready_columns(self) -> tuple[list[int], np.ndarray] | None:
        """The ready envs' ids and their observations stacked (float32); None where they do not stack."""
        ready = self._env.ready_obs_batch()
        return None if ready is None else (ready[0], to_float32(ready[1]))

    def _begin_step_columns(self, keys: list[str], ids: list[int], obs: np.ndarray,
                            output: dict[str, Tensor]) -> Callable[[], tuple]:
        """``_step`` as columns (an array per transition field, a row per env) through the env manager's
        ``step_batch``, begun (the envs' step sent, where they step in processes of their own): the ready envs ``ids``
        (``_ready_columns``) act on the policy's ``output`` for ``obs``; the call returned finishes it, giving
        ``_stepped_columns``' arguments."""
        columns = {k: output[k].numpy(force=True) for k in keys if isinstance(output.get(k), Tensor)}
        if self._memory is not None:
            columns.update(self._memory.acted(ids, output['state']))
        finish = begin_step_batch(self._env, ids, columns['action'])
        return lambda: (ids, obs, columns, finish())

    def _stepped_columns(self, ids: list[int], obs: np.ndarray, columns: dict[str, np.ndarray],
                         step: Any) -> dict[str, np.ndarray]:
        """The transitions of the envs' ``step`` on ``columns`` from ``obs``, as columns."""
        for env_id in step.restarted:  # a restarted env's broken step: no transition
            self.env_restarts += 1
            self._end_episode(env_id)
        if self._offers.asynchronous:
            obs, columns = self._sent_with(ids, obs, columns, step.env_id)
        elif step.env_id != ids:
            rows = [k for k, i in enumerate(ids) if i not in step.restarted]
            obs, columns = obs[rows], {k: v[rows] for k, v in columns.items()}
        self._tally.column(step.reward, step.env_id)
        index = slice(None) if step.env_id == self._all_ids else np.asarray(step.env_id, dtype=np.int64)
        batch = column_batch(obs, to_float32(step.obs) if step.env_id else obs[:0], columns, step.reward,
                             step.terminated)
        if self.episode_fields:
            env_ids = np.asarray(step.env_id, np.int64)
            batch.update(env_id=env_ids, episode_start=self._totals.length[env_ids] == 0)
        bad = nonfinite_rows(batch)
        if bad is not None:  # raises, or drops those rows; they add nothing to the episode's return
            for k in np.flatnonzero(bad).tolist():
                self._drop_nonfinite(step.env_id[k], {key: value[k] for key, value in batch.items()}, k)
            batch = {key: value[~bad] for key, value in batch.items()}
        if self._memory is not None:
            self._memory.stepped(step.env_id, columns['action'], step.reward)
        reward = step.reward if bad is None else np.where(bad.reshape(-1, *[1] * (step.reward.ndim - 1)), 0.0,
                                                          step.reward)
        running = self._totals.add(index, reward, self._tally, self.norm_reward)
        if running is not None:
            batch['running_return'] = running if bad is None else running[~bad]
        self._totals.length[index] += 1
        self._reports.add(batch, step.env_id if bad is None else [i for i, b in zip(step.env_id, bad) if not b])
        self._count_step(step)
        return batch

    def _steps_plainly(self, ids: list[int], step: Any) -> bool:
        """Whether ``step`` (of the envs ``ids``) is every env's, unbroken, with nothing kept per transition beyond
        the episode totals (no recurrent memory, episode fields, reports or vector reward): a step ``StepsTogether``
        counts with other collectors' in one pass."""
        return ids == step.env_id == self._all_ids and not step.restarted and not self._offers.asynchronous and \
            self._memory is None and not self.episode_fields and self._reports.scorer is None and \
            self._tally.dim is None and step.reward.ndim == 1

    def _count_step(self, step: Any) -> None:
        """After a step's transitions: the episodes it ended, and the env steps it took."""
        for k in true_rows(step.done):
            self._finish_episode(step.env_id[k], (step.info or {}).get(step.env_id[k]))
        self.envstep += len(step.env_id)

    def _drop_nonfinite(self, env_id: int, transition: dict[str, Any], row: int) -> None:
        """A transition with a NaN/inf (the ``row``-th of this env step): ``NonFiniteEnvError`` naming the env, the
        step and the field, or with ``on_nonfinite='skip'`` counted (the caller drops it)."""
        if self.on_nonfinite != 'skip':
            where = f"at env step {self.envstep + row + 1} (step {int(self._totals.length[env_id]) + 1} of its episode)"
            raise nonfinite_error(env_label(self._env, env_id), where, transition)
        self.nonfinite_dropped += 1

    def _sent_with(self, ids: list[int], obs: np.ndarray, columns: dict[str, np.ndarray],
                   returned: list[int]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """An async manager returns envs sent in this step or an earlier one: the obs and policy output each of
        ``returned`` was sent with (kept per env, as ``_step`` keeps them)."""
        for row, env_id in enumerate(ids):
            self._obs_pool[env_id] = obs[row]
            self._output_pool[env_id] = {k: v[row] for k, v in columns.items()}
        if not returned:
            return obs[:0], {k: v[:0] for k, v in columns.items()}
        return (np.array([self._obs_pool[i] for i in returned]),
                {k: np.array([self._output_pool[i][k] for i in returned]) for k in columns})

    def _columnar_keys(self) -> list[str] | None:
        """The policy-output fields of a transition where this collector may step as columns, else None (a round
        begins here: what the env manager offers is read again)."""
        self._offers = offers(self._env)
        keys = self._policy.plain_transition_keys
        return keys if keys is not None and self._policy.forward_batch is not None and self._offers.steps_columns \
            else None

    def _finish_episode(self, env_id: int, info: dict | None) -> None:
        """``env_id``'s episode ended: its finished-episode record (the manager's ``episodes``: an agent slot's is
        its team's, once the team's episode ends) counted, and handed to the round's hooks."""
        episode = self._offers.episodes.record(env_id, info, lambda: self._own_record(env_id, info))
        if episode is not None:
            self._episode_info.append(episode)
            self.finished_episodes.append(episode)
            self.total_episode += 1
            for hook in self._offers.hooks:
                hook.collected(episode)
        self._end_episode(env_id, keep_traj=True)

    def _own_record(self, env_id: int, info: dict | None) -> dict[str, float]:
        totals = self._totals
        return {'return': float(totals.ret[env_id]), 'length': int(totals.length[env_id]),
                **return_metrics(totals.ret[env_id], totals.discounted[env_id], totals.length[env_id]),
                **(self._tally.dim_metrics(totals.dims[env_id]) if self._tally.dim else {}),
                **episode_metrics(info, self._offers.info_metrics),
                **self._reports.episode(env_id, totals.length[env_id])}

    def _end_episode(self, env_id: int, keep_traj: bool = False) -> None:
        self._totals.end(env_id)
        self._reports.end(env_id)
        if not keep_traj:
            self._traj[env_id] = []
        if self._memory is not None:
            self._memory.reset(env_id)
        self._policy.reset([env_id])

    def _maybe_log(self, train_iter: int) -> None:
        """After each collect call: the round's hooks (lessons moved on where due), and the log line every
        collect_print_freq."""
        for hook in self._offers.hooks:
            hook.round_done(self.envstep, self.logger, self._tb_logger)
        if train_iter - self._last_print_iter < self._cfg.collect_print_freq or not self._episode_info:
            return
        self._last_print_iter = train_iter
        for hook in self._offers.hooks:
            hook.log(self.envstep, self._tb_logger)
        self.write_log(self._episode_info, train_iter, self.envstep, self.env_restarts, self.pop_entropy(),
                       self.nonfinite_dropped, pop_env_stats(self._env))
        self._episode_info = []

    def write_log(self, *args: Any) -> None:
        """``log_episodes`` to this collector's tensorboard and text log (its arguments after the two loggers)."""
        log_episodes(self._tb_logger, self.logger, *args)

    def pop_episodes(self) -> list[dict[str, float]]:
        """The episodes finished since the last call (``{'return', 'length', <info metrics>}`` each), for a caller
        that logs them itself (a Ray collector's driver); forgets them here."""
        episodes, self.finished_episodes, self._episode_info = self.finished_episodes, [], []
        return episodes

    def pop_entropy(self) -> float | None:
        """The collecting policy's mean entropy since the last call (None where the policy does not say)."""
        pop = self._policy.pop_entropy
        return pop() if pop is not None else None

    def state_dict(self) -> dict[str, Any]:
        """Counters, unfinished trajectories, the envs (see ``BaseEnvManager.state_dict``) and the collect mode's
        own state (the eps clock; its weights are the learner's)."""
        policy_state = {k: v for k, v in self._policy.state_dict().items() if k != 'model'}
        return to_safe({'envstep': self.envstep, 'total_episode': self.total_episode,
                        'env_restarts': self.env_restarts, 'last_print_iter': self._last_print_iter,
                        'nonfinite_dropped': self.nonfinite_dropped,
                        'episode_info': self._episode_info, 'return': dict(enumerate(self._totals.ret.tolist())),
                        'length': dict(enumerate(self._totals.length.tolist())),
                        'discounted': dict(enumerate(self._totals.discounted.tolist())),
                        'running_return': dict(enumerate(self._totals.running.tolist())),
                        'traj': self._traj, 'env': self._env.state_dict(), 'policy': policy_state,
                        **({'memory': self._memory.state_dict()} if self._memory is not None else {})})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.envstep, self.total_episode = state['envstep'], state['total_episode']
        self.env_restarts, self._last_print_iter = state['env_restarts'], state['last_print_iter']
        self.nonfinite_dropped = state.get('nonfinite_dropped', 0)  # absent from checkpoints before it was counted
        self._episode_info = list(state['episode_info'])
        totals = self._totals
        for key, values in (('return', totals.ret), ('length', totals.length), ('discounted', totals.discounted),
                            ('running_return', totals.running)):
            for k, v in state.get(key, {}).items():  # (discounted, running: absent from older resume points)
                values[int(k)] = v
        self._traj = {int(k): list(v) for k, v in state['traj'].items()}
        self._env.load_state_dict(state['env'])
        if self._memory is not None and 'memory' in state:
            self._memory.load_state_dict(state['memory'])
        current = self._policy.state_dict()
        if state['policy'] or 'snapshot' in current:  # what it lacks stays; a collect snapshot, from the model
            current.pop('snapshot', None)
            self._policy.load_state_dict({**current, **state['policy']})

    def close(self) -> None:
        if self._env is not None:
            self._env.close()


@SERIAL_COLLECTOR_REGISTRY.register('sample')
class SampleSerialCollector(BaseSerialCollector):
    """Returns at least ``n_sample`` training samples per ``collect`` (every env steps together)."""

    config = dict(type='sample')     # the registered collector name

    def collect(self, n_sample: int | None = None, train_iter: int = 0,
                policy_kwargs: dict | None = None) -> list[Any]:
        """At least ``n_sample`` training samples (DI-engine's list of transition dicts). Where the envs step as
        columns (``collect_batch``'s fast path) the dicts are cut from those columns: the same samples, each field
        of the type the per-transition path gives (observations as arrays, policy outputs as tensors, rewards and
        dones as Python scalars)."""
        keys = self._columnar_keys()
        if keys is None:
            return self._collect_transitions(n_sample, train_iter, policy_kwargs)
        columns = collect_batches([self], n_sample, train_iter, policy_kwargs, as_arrays=True)[0]
        return columns if isinstance(columns, list) else transition_rows(columns, keys)

    def round_keys(self) -> list[str] | None:
        """The policy-output fields of a transition where this collector steps as columns in ``collect_batches``'
        rounds (its class's own ``collect``, a plain policy and a manager with batch steps), else None."""
        return self._columnar_keys() if type(self).collect is SampleSerialCollector.collect else None

    def collect_alone(self, n_sample: int | None, train_iter: int = 0, policy_kwargs: dict | None = None) -> list[Any]:
        """Its samples one transition at a time: its own ``collect`` where a subclass wrote one."""
        own = type(self).collect is not SampleSerialCollector.collect
        return (self.collect if own else self._collect_transitions)(n_sample, train_iter, policy_kwargs)

    def _collect_transitions(self, n_sample: int | None = None, train_iter: int = 0,
                             policy_kwargs: dict | None = None) -> list[Any]:
        """``collect`` one transition dict at a time (any policy, env manager or observation)."""
        if n_sample is None or n_sample <= 0:
            raise ValueError(f"collect needs a positive n_sample, got {n_sample!r}")
        samples: list[Any] = []
        start = time.perf_counter()
        while len(samples) < n_sample:
            for env_id, transition, ended in self._step(policy_kwargs):
                traj = self._traj[env_id]
                if transition is not None:
                    traj.append(transition)
                if traj and (ended or len(traj) >= self._unroll_len):
                    samples.extend(self._policy.get_train_sample(traj))
                    self._traj[env_id] = []
        self.collect_time = time.perf_counter() - start
        self._maybe_log(train_iter)
        return samples

    def collect_batch(self, n_sample: int | None = None, train_iter: int = 0,
                      policy_kwargs: dict | None = None) -> dict[str, Any]:
        """``collect``'s samples as one batch (a tensor per field, leading dim = samples), what
        ``ReplayBuffer.push`` takes. Where the policy's transitions are plain and the env manager has ``step_batch``,
        each env step is handled as columns, with no per-transition dicts; the samples are the same either way."""
        return collect_batches([self], n_sample, train_iter, policy_kwargs)[0]


def create_serial_collector(cfg: dict, **kwargs: Any) -> BaseSerialCollector:
    """Build the registered collector ``cfg.type`` (``'sample'`` or ``'episode'``) after its ``import_names``."""
    import_names(cfg.get('import_names'))
    return SERIAL_COLLECTOR_REGISTRY.build(cfg.get('type') or 'sample', cfg, **kwargs)
