"""Deterministic evaluation over a fixed number of episodes; best checkpoint and evaluator.csv."""
from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import torch
from easydict import EasyDict
from torch import Tensor

from ..data.collate import to_float32, to_ndarray, to_reward, to_scalar, true_rows
from .finite_check import all_finite, env_label, nonfinite_error, nonfinite_fields, nonfinite_rows
from ..registry import SERIAL_EVALUATOR_REGISTRY
from ..utils.default_config import class_default_config, with_defaults
from ..utils.checkpoint import atomic_write_text
from .collect_round import Forward
from .episode_metrics import ReturnTally, episode_metrics, mean_metrics, pop_env_stats, return_metrics
from .manager_protocol import begin_step_batch, offers, policy_mode
from .logger import build_logger, format_scalars, write_scalars
from .memory import EnvMemory

MAX_BROKEN_PER_EPISODE = 3  # env restarts an evaluation tolerates, per requested episode
CSV_COLUMNS = ['train_iter', 'envstep', 'wall_time', 'return_mean', 'return_std', 'return_min', 'return_max']
CSV_HEADER = ','.join(CSV_COLUMNS) + '\n'  # then a column per info metric (success_rate, ...), as they appear
StopRule = Callable[[int, int, dict], 'str | None']  # (train_iter, envstep, info) -> why the run stops, or None


@SERIAL_EVALUATOR_REGISTRY.register('interaction')
class InteractionSerialEvaluator:
    """Runs ``n_episode`` episodes spread over the evaluator envs with the policy's eval mode."""

    config = dict(
        type='interaction',          # the registered evaluator name
        eval_freq=1000,              # train iterations between evaluations
        n_episode=None,              # None: env.n_evaluator_episode (filled by compile_config)
        stop_value=None,             # None: env.stop_value; stop once the mean return reaches it
        stop_on=None,                # None: the episode's return (many agents: their sum); an agent's id or a team's
                                     # name ('adversary' of adversary_0, ...): its mean return, for the stop value and
                                     # ckpt_best
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return class_default_config(cls)

    def __init__(self, cfg: dict | None, env: Any, policy: SimpleNamespace | None, tb_logger: Any = None,
                 exp_name: str | None = 'default_experiment', instance_name: str = 'evaluator', *,
                 on_nonfinite: str = 'stop', stop_rule: StopRule | None = None) -> None:
        """``env`` and ``policy`` None: only ``record`` results that an evaluator elsewhere (a Ray actor) ran;
        ``exp_name`` None: only ``run_episodes``, writing no files. ``on_nonfinite``: a NaN/inf from an env stops the
        run (``'stop'``: ``NonFiniteEnvError``) or skips that episode (``'skip'``); ``stop_rule(train_iter, envstep,
        info)``: another reason to stop, asked after each evaluation (a search's pruner), or None."""
        self._cfg = with_defaults(type(self), cfg)
        policy = policy_mode(policy)
        self._env, self._policy, self._tb_logger = env, policy, tb_logger
        self._tally = ReturnTally(policy) if policy is not None else None  # returns' weights, the metrics' gamma
        spec = policy.memory if policy is not None else None
        self._memory = EnvMemory(spec, env.env_num) if spec else None  # a recurrent policy's state per env
        self._offers = offers(env) if env is not None else None
        self.logger = build_logger(exp_name, instance_name)
        self.csv_path = os.path.join(exp_name, 'log', 'evaluator.csv') if exp_name is not None else None
        self.n_episode = self._cfg.n_episode or (env.env_num if env is not None else 1)
        self.stop_value = float('inf') if self._cfg.stop_value is None else self._cfg.stop_value
        self.best_return = -float('inf')
        self.last_info: dict[str, float] = {}
        self.episode_metrics: list[dict[str, float]] = []  # those of the last run_episodes, one dict per episode
        self.info_stats: dict[str, float] = {}  # the envs' env.info_stats over the last run_episodes
        self._last_eval_iter = -1
        self._start_time = time.time()
        self._csv_recorded_iter = -1
        self.on_nonfinite, self._stop_rule = on_nonfinite, stop_rule
        self._tainted: set[int] = set()  # envs whose current episode had a NaN/inf (skipped)

    @property
    def last_eval_iter(self) -> int:
        """The iteration of the last evaluation ``should_eval`` granted."""
        return self._last_eval_iter

    def should_eval(self, train_iter: int, at_end: bool = False) -> bool:
        """True at iteration 0 and whenever ``eval_freq`` iterations have passed since the last evaluation (``at_end``:
        the run's last weights, whenever they were not evaluated yet); the evaluation granted is noted."""
        if train_iter == self._last_eval_iter:
            return False
        if not at_end and train_iter != 0 and train_iter - self._last_eval_iter < self._cfg.eval_freq:
            return False
        self._last_eval_iter = train_iter
        return True

    def _episode_quota(self) -> dict[int, int]:
        """Episodes left per env; a multi-agent env's slots share their env's (its episode is the team's)."""
        episodes = self._offers.episodes
        base, extra = divmod(self.n_episode, episodes.groups)
        return {i: base + (1 if episodes.group_of(i) < extra else 0) for i in range(self._env.env_num)}

    def run_episodes(self) -> list[float]:
        """Returns of ``n_episode`` deterministic episodes (each env runs its share); their info metrics are in
        ``episode_metrics``."""
        return run_episodes_together([self])[0]

    def _begin_episodes(self) -> None:
        self._offers = offers(self._env)
        self._env.reset()
        self._policy.reset()
        if self._memory is not None:
            self._memory.reset()
        self._quota, self._returns, self._broken, self._tainted = self._episode_quota(), [], 0, set()
        self._all_ids = list(range(self._env.env_num))
        # how the envs act and step this run: one forward on stacked observations; a step as columns (step_batch of
        # a manager that returns the envs it was given)
        self._stacks = self._policy.forward_batch is not None and self._offers.stacks_obs
        self._steps_as_columns = self._offers.steps_columns and not self._offers.asynchronous
        self.episode_metrics, self.info_stats = [], {}
        pop_env_stats(self._env)  # what other steps of these envs reported does not count
        self._discounted, self._length = np.zeros(self._env.env_num), np.zeros(self._env.env_num, dtype=np.int64)

    def _ready_rows(self) -> tuple[list[int], np.ndarray] | None:
        """The ready envs with episodes still to run and their observations stacked, where the policy and the env
        manager offer a batch forward (else None: ``_per_env_actions``)."""
        ready = self._env.ready_obs_batch() if self._stacks else None
        if ready is None:
            return None
        ids, obs = ready
        if min(self._quota.values()) <= 0:  # envs that ran their share of the episodes do not act
            rows = [k for k, i in enumerate(ids) if self._quota[i] > 0]
            if not rows:
                raise RuntimeError('evaluator envs stopped before the requested episodes finished')
            ids, obs = [ids[k] for k in rows], obs[rows]
        return ids, to_float32(obs)

    def _forward_rows(self, ids: list[int], obs: Tensor) -> dict[str, Tensor]:
        """The policy's batch forward for the envs ``ids``; a recurrent policy's states advance."""
        if self._memory is None:
            return self._policy.forward_batch(obs)
        output = self._policy.forward_batch(obs, memory=self._memory.inputs(ids))
        self._memory.acted(ids, output['state'])
        return output

    def _per_env_actions(self) -> dict[int, Any]:
        obs = {i: o for i, o in self._env.ready_obs.items() if self._quota[i] > 0}
        if not obs:
            raise RuntimeError('evaluator envs stopped before the requested episodes finished')
        if self._memory is None:
            return {i: to_ndarray(out['action']) for i, out in self._policy.forward(obs).items()}
        ids = list(obs)
        output = self._policy.forward(obs, memory=self._memory.inputs(ids))
        self._memory.acted(ids, torch.stack([output[i]['state'] for i in ids]))
        return {i: to_ndarray(out['action']) for i, out in output.items()}

    def _reset_env(self, env_id: int) -> None:
        """``env_id``'s episode ended: the policy's and the memory's state for it start again."""
        self._policy.reset([env_id])
        self._discounted[env_id], self._length[env_id] = 0.0, 0
        if self._memory is not None:
            self._memory.reset(env_id)

    def _advance(self, actions: dict[int, Any]) -> None:
        """Step the envs with ``actions``; count the episodes that ended."""
        timesteps = self._env.step(actions)
        steps = timesteps.values()
        checked = all_finite([t.reward for t in steps]) and all_finite([t.obs for t in steps]) and \
            all_finite(list(actions.values()))  # one check per field for all envs; per env only on a failure
        for env_id, timestep in timesteps.items():
            values = {'reward': timestep.reward, 'next_obs': timestep.obs, 'action': actions[env_id]}
            if not checked and nonfinite_fields(values):
                if self.on_nonfinite != 'skip':
                    raise nonfinite_error(f"evaluator {env_label(self._env, env_id)}", 'in an evaluation', values)
                self._tainted.add(env_id)
            done = to_scalar(timestep.done, f"evaluator env {env_id}'s done")
            if self._memory is not None:
                self._memory.stepped([env_id], np.asarray(actions[env_id])[None], np.float32(timestep.reward))
            if timestep.info.get('abnormal') or done and env_id in self._tainted:  # that episode does not count
                self._broken_episode(env_id, timestep.info)
                continue
            reward = self._tally.reward(timestep.reward, f"evaluator env {env_id}'s reward")
            self._discounted[env_id] += self._tally.discounted(reward, self._length[env_id])
            self._length[env_id] += 1
            if done:
                self._episode_end(env_id, timestep.info)

    def _advance_columns(self, ids: list[int], actions: np.ndarray) -> None:
        """``_advance`` through the env manager's ``step_batch`` (row k of ``actions`` for env ``ids[k]``): the
        rewards tallied as columns, one ``isfinite`` per field, per env only where an episode ended."""
        self._begin_advance_columns(ids, actions)()

    def _begin_advance_columns(self, ids: list[int], actions: np.ndarray) -> Callable[[], None]:
        """``_advance_columns`` begun (the envs' step sent, where they step in processes of their own); the call
        returned finishes it."""
        finish = begin_step_batch(self._env, ids, actions)
        return lambda: self._advanced_columns(ids, actions, finish())

    def _advanced_columns(self, ids: list[int], actions: np.ndarray, step: Any) -> None:
        for env_id in step.restarted:
            self._broken_episode(env_id, {'error': 'its env was restarted'})
        rows = step.env_id
        if rows != ids:
            actions = actions[[ids.index(i) for i in rows]]
        self._tally.column(step.reward, rows)
        bad = nonfinite_rows({'reward': step.reward, 'next_obs': step.obs, 'action': actions}) if rows else None
        for k in [] if bad is None else np.flatnonzero(bad).tolist():
            values = {'reward': step.reward[k], 'next_obs': step.obs[k], 'action': actions[k]}
            if self.on_nonfinite != 'skip':
                raise nonfinite_error(f"evaluator {env_label(self._env, rows[k])}", 'in an evaluation', values)
            self._tainted.add(rows[k])
        if self._memory is not None:
            self._memory.stepped(rows, actions, step.reward.astype(np.float32))
        index = slice(None) if rows == self._all_ids else np.asarray(rows, dtype=np.int64)
        self._discounted[index] += self._tally.discounted(step.reward, self._length[index])
        self._length[index] += 1
        for k in true_rows(step.done):
            env_id, info = rows[k], (step.info or {}).get(rows[k], {})
            if env_id in self._tainted:
                self._broken_episode(env_id, info)
            else:
                self._episode_end(env_id, info)

    def _episode_end(self, env_id: int, info: dict) -> None:
        """An episode that counts: its finished-episode record (the manager's ``episodes``: the env's own return, in
        its units, and metrics; an agent slot's is its team's, counted once for all of its env's slots)."""
        episodes = self._offers.episodes
        record = episodes.record(env_id, info, lambda: self._own_record(env_id, info))
        self._reset_env(env_id)
        if record is None:
            return
        self._returns.append(float(record['return']))
        self.episode_metrics.append(record)
        group = episodes.group_of(env_id)
        for slot in [s for s in self._quota if episodes.group_of(s) == group]:
            self._quota[slot] -= 1

    def _own_record(self, env_id: int, info: dict) -> dict[str, float]:
        returns = _episode_return(info, env_id, self._tally.dim)
        total = float(self._tally.total(returns))
        return {'return': total, **return_metrics(total, self._discounted[env_id], self._length[env_id]),
                **self._tally.dim_metrics(returns), **episode_metrics(info, self._offers.info_metrics)}

    def _broken_episode(self, env_id: int, info: dict) -> None:
        """An episode that does not count (its env restarted, or a non-finite value in it, skipped)."""
        self._reset_env(env_id)
        self._tainted.discard(env_id)
        self._broken += 1
        if self._broken > MAX_BROKEN_PER_EPISODE * self.n_episode:
            raise RuntimeError(f"evaluation cannot finish: {self._broken} episodes broke off by env restarts or "
                               f"non-finite values (last error: {info.get('error')})")

    def eval(self, save_ckpt_fn: Callable[[str], Any] | None = None, train_iter: int = -1,
             envstep: int = -1, tb_step: int | None = None) -> tuple[bool, dict[str, float]]:
        """Evaluate, log a row to ``evaluator.csv``, save ``ckpt_best.pth.tar`` on a new best; ``(stop, info)``.
        Tensorboard files it under ``envstep``, or ``tb_step`` where given (an offline run: the iteration)."""
        returns = self.run_episodes()
        return self.record(returns, save_ckpt_fn, train_iter, envstep, self.episode_metrics, tb_step)

    def record(self, returns: list[float], save_ckpt_fn: Callable[[str], Any] | None = None, train_iter: int = -1,
               envstep: int = -1, metrics: list[dict[str, float]] | None = None,
               tb_step: int | None = None, info_stats: dict[str, float] | None = None) -> tuple[bool, dict[str, float]]:
        """Log the episode ``returns`` (and info ``metrics``, a dict per episode; ``info_stats``: the envs', where
        they ran elsewhere) of the weights of ``train_iter`` as ``eval`` does; ``(stop, info)``."""
        returns = np.asarray(returns)
        info = {'return_mean': float(returns.mean()), 'return_std': float(returns.std()),
                'return_min': float(returns.min()), 'return_max': float(returns.max()),
                **mean_metrics(metrics or []), **(self.info_stats if info_stats is None else info_stats)}
        self.info_stats = {}
        self._append_csv(train_iter, envstep, info)
        write_scalars(self._tb_logger, 'evaluator', info, envstep if tb_step is None else tb_step)
        score = self._score(info)
        if score > self.best_return:
            self.best_return = score
            if save_ckpt_fn is not None:
                save_ckpt_fn('ckpt_best.pth.tar')
        # an easier lesson's return does not stop a run: the stop value counts from the last lessons on
        hooks = self._offers.hooks if self._offers is not None else ()
        stop = score >= self.stop_value and all(hook.stop_allowed for hook in hooks)
        why = f"reached stop value {self.stop_value}" if stop else \
            self._stop_rule(train_iter, envstep, info) if self._stop_rule is not None else None
        self.logger.info(format_scalars(f"iter {train_iter} envstep {envstep}", info) + (f" | {why}" if why else ''))
        self.last_info = info
        return why is not None, info

    def _score(self, info: dict[str, float]) -> float:
        """What the stop value and the best checkpoint read: the mean return, or ``stop_on``'s (an agent's, a team's)."""
        name = self._cfg.stop_on
        if name is None:
            return info['return_mean']
        for key in (f'return_{name}', f'return_team_{name}'):
            if key in info:
                return info[key]
        raise ValueError(f"evaluator.stop_on={name!r}: the episodes report no return of that agent or team; they "
                         f"report {sorted(k[len('return_'):] for k in info if k.startswith('return_'))}")

    def _append_csv(self, train_iter: int, envstep: int, info: dict[str, float]) -> None:
        """A row of ``CSV_COLUMNS`` then the info metrics; a metric not yet in the header widens it (earlier rows
        get an empty cell)."""
        if train_iter <= self._csv_recorded_iter:  # a resumed run repeats evaluations already on record
            return
        os.makedirs(os.path.dirname(self.csv_path), exist_ok=True)
        columns = _csv_columns(self.csv_path)
        new = [key for key in info if key not in columns and key not in CSV_COLUMNS]
        if new:
            columns = _widen_csv(self.csv_path, columns, new)
        values = {'train_iter': train_iter, 'envstep': envstep, 'wall_time': f"{time.time() - self._start_time:.3f}",
                  **{key: f"{value:.6g}" for key, value in info.items()}}
        with open(self.csv_path, 'a') as f:
            f.write(','.join(str(values.get(column, '')) for column in columns) + '\n')

    def state_dict(self) -> dict[str, Any]:
        return {'best_return': self.best_return, 'last_eval_iter': self._last_eval_iter,
                'wall_time': time.time() - self._start_time, 'last_info': dict(self.last_info)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue a run: best return, evaluation clock and wall time; rows already in ``evaluator.csv`` stay
        as they are and are not written again."""
        self.best_return, self._last_eval_iter = state['best_return'], state['last_eval_iter']
        self._start_time = time.time() - state['wall_time']
        self.last_info = dict(state['last_info'])
        self._csv_recorded_iter = _last_recorded_iter(self.csv_path)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()


def run_episodes_together(evaluators: list[InteractionSerialEvaluator],
                          forward: Forward | None = None) -> list[list[float]]:
    """``run_episodes`` of each evaluator, stepped together: at each env step one ``forward`` call (default: each
    evaluator's own policy) acts for the ready envs of every evaluator with episodes left whose observations stack
    (the others act per env)."""
    for evaluator in evaluators:
        evaluator._begin_episodes()
    while running := [k for k, evaluator in enumerate(evaluators) if any(evaluator._quota.values())]:
        ready = {k: rows for k in running if (rows := evaluators[k]._ready_rows()) is not None}
        inputs = [torch.from_numpy(obs) for _, obs in ready.values()]
        outputs = forward(inputs, list(ready)) if forward is not None and ready else \
            [evaluators[k]._forward_rows(ids, o) for (k, (ids, _)), o in zip(ready.items(), inputs)]
        actions = {k: output['action'].numpy(force=True) for k, output in zip(ready, outputs)}
        finishes = []  # every evaluator's envs stepping at once (where they step in processes), then gathered
        for k in running:
            evaluator = evaluators[k]
            if k not in actions:
                evaluator._advance(evaluator._per_env_actions())
            elif evaluator._steps_as_columns:
                finishes.append(evaluator._begin_advance_columns(ready[k][0], actions[k]))
            else:
                evaluator._advance(dict(zip(ready[k][0], actions[k])))
        for finish in finishes:
            finish()
    for evaluator in evaluators:
        evaluator.info_stats = pop_env_stats(evaluator._env)
        for hook in evaluator._offers.hooks:
            hook.evaluated(evaluator._returns)
    return [evaluator._returns for evaluator in evaluators]


def _csv_columns(path: str) -> list[str]:
    """The columns of ``path``'s header (``CSV_COLUMNS`` for a file not written yet, which gets that header)."""
    if os.path.exists(path) and os.path.getsize(path):
        with open(path) as f:
            return f.readline().strip().split(',')
    with open(path, 'w') as f:
        f.write(CSV_HEADER)
    return list(CSV_COLUMNS)


def _widen_csv(path: str, columns: list[str], new: list[str]) -> list[str]:
    """Rewrite ``path`` (atomically) with ``new`` columns added to its header and an empty cell in each row."""
    with open(path) as f:
        lines = f.read().splitlines()
    columns = columns + new
    atomic_write_text(path, '\n'.join([','.join(columns)] + [line + ',' * len(new) for line in lines[1:]]) + '\n')
    return columns


def _last_recorded_iter(path: str) -> int:
    """The largest ``train_iter`` of a row in ``path`` (-1 without one); a row cut off by a kill is removed."""
    if not os.path.exists(path):
        return -1
    with open(path, 'rb+') as f:
        data = f.read()
        if data and not data.endswith(b'\n'):
            f.truncate(data.rfind(b'\n') + 1)
            data = data[:data.rfind(b'\n') + 1]
    heads = [line.split(b',', 1)[0] for line in data.splitlines()]
    return max((int(head) for head in heads if head.isdigit()), default=-1)


def _episode_return(info: dict, env_id: int, dim: int | None = None) -> float | np.ndarray:
    """The finished episode's return from ``info`` (DI-engine's ``eval_episode_return``, or its older name): a
    number, or ``dim`` of them for a multi-dimensional reward."""
    for key in ('eval_episode_return', 'final_eval_reward'):
        if key in info:
            return to_reward(info[key], dim, f"evaluator env {env_id}'s info[{key!r}]")
    raise ValueError(f"evaluator env {env_id} ended an episode without info['eval_episode_return'] (the episode's "
                     f"return, which every env must report when done is True); info had {sorted(info)}")
