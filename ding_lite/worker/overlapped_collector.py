"""Collection overlapped with learning: a serial collector stepping its envs in a forked child process while the
parent trains, at most one collect round of updates behind the learner (``policy.collect.overlap``)."""
from __future__ import annotations

import copy
import multiprocessing as mp
import pickle
import signal
from typing import Any

import numpy as np
import torch
from easydict import EasyDict
from torch import Tensor, nn

Result = dict[str, Any]  # one collected round: 'batch' (numpy columns), 'steps', 'logs', 'episodes', COUNTERS
COUNTERS = ('total_episode', 'env_restarts', 'nonfinite_dropped', 'collect_time')  # the child's, mirrored here


class OverlappedCollector:
    """A ``SampleSerialCollector`` whose rounds run in a child process, one round ahead of the learner.

    Until the first ``prefetch`` it is the collector itself, in this process (the random warm-up, a resume's
    ``load_state_dict``). ``prefetch`` forks the child once, then each time copies the collect forward's weights
    (the model's parameters and buffers, less the critic's) into the child's shared CPU copy and asks it for the
    next round, returning at once; ``collect_batch`` returns that round. So the round collected while the learner
    trains acts with the weights from before those updates. The child logs nothing itself: its log calls come back
    with the round and are written here. ``state_dict`` waits for a round in flight and keeps it as pending, so a
    checkpoint's buffer, counters and envs agree.
    """

    def __init__(self, collector: Any, policy: Any, seed: int) -> None:
        self._local, self._policy, self._seed = collector, policy, seed
        self.envstep = collector.envstep                  # env steps of the rounds delivered
        self._child: Any = None
        self._conn: Any = None
        self._in_flight = False
        self._pending: Result | None = None               # a round collected and not yet delivered
        self._child_rng: torch.Tensor | None = None       # the child's torch stream, from a resume point

    # ---- the collector, before the fork ----
    def __getattr__(self, name: str) -> Any:
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._local, name)  # counters, on_nonfinite, finished_episodes, ...

    def reset_policy(self, policy: Any) -> None:
        if self._child is not None:
            raise RuntimeError("an overlapped collector's policy is fixed once its process started")
        self._local.reset_policy(policy)

    # ---- rounds ----
    def collect_batch(self, n_sample: int | None = None, train_iter: int = 0) -> dict[str, Any]:
        """The round asked for by the last ``prefetch`` (or, with none in flight, one collected now)."""
        if self._child is None and self._pending is None:
            batch = self._local.collect_batch(n_sample, train_iter)
            self.envstep = self._local.envstep
            return batch
        if self._pending is None and not self._in_flight:
            self._request(n_sample, train_iter)
        result = self._take()
        for args in result['logs']:
            self._local.write_log(*args)
        self._local.finished_episodes.extend(result['episodes'])
        for key in COUNTERS:
            setattr(self._local, key, result[key])
        self.envstep += result['steps']
        return _tree(result['batch'], torch.as_tensor)  # arrays, or tensors from a checkpoint

    def prefetch(self, n_sample: int, train_iter: int) -> None:
        """Start the next round in the child with the policy's current weights; returns at once."""
        if self._pending is not None or self._in_flight:
            return
        if self._child is None:
            self._fork()
        self._sync_weights()
        self._request(n_sample, train_iter)

    def _request(self, n_sample: int | None, train_iter: int) -> None:
        """Ask the child for a round, with the reward weights its returns weigh by (``set_reward_weights`` changes
        them here)."""
        weights = getattr(self._policy, 'reward_weights', None)
        self._conn.send(('collect', n_sample, train_iter, None if weights is None else weights.copy()))
        self._in_flight = True

    def _take(self) -> Result:
        if self._pending is not None:
            result, self._pending = self._pending, None
            return result
        self._in_flight = False
        return self._reply()

    def _reply(self) -> Any:
        try:
            kind, value = self._conn.recv()
        except (EOFError, ConnectionResetError):
            code = self._child.exitcode if self._child is not None else None
            raise RuntimeError(f"the overlapped collector's process ended (exit code {code}); "
                               f"resume the run, or set policy.collect.overlap=False") from None
        if kind == 'error':
            raise value
        return value

    # ---- the child ----
    def _fork(self) -> None:
        cpu_model = copy.deepcopy(self._policy.model).cpu().share_memory()
        self._live, self._shared = _synced_tensors(self._policy.model), _synced_tensors(cpu_model)
        collect_policy = _cpu_collect_policy(self._policy, cpu_model)
        seed = int(np.random.SeedSequence([self._seed, 1]).generate_state(1)[0])  # not the parent's stream
        parent, child = mp.get_context('fork').Pipe()
        self._child = mp.get_context('fork').Process(
            target=_child_main, args=(child, self._local, collect_policy, seed, self._child_rng), daemon=True)
        self._child.start()
        child.close()
        self._conn = parent

    @torch.no_grad()
    def _sync_weights(self) -> None:
        """The learner's weights into the child's copy: one copy on the CPU; from a GPU, one flat read-back."""
        if self._live[0].device.type == 'cpu':
            torch._foreach_copy_(self._shared, self._live)
            return
        flat = torch.cat([t.reshape(-1).float() for t in self._live]).cpu()
        parts = flat.split([t.numel() for t in self._shared])
        torch._foreach_copy_(self._shared, [p.view(t.shape) for p, t in zip(parts, self._shared)])

    # ---- state ----
    def state_dict(self) -> dict[str, Any]:
        """The collector's state with the round in flight finished and kept as ``pending`` (the child's torch
        stream too): a resume delivers that round first."""
        if self._child is None:
            return {**self._local.state_dict(), 'overlap': {'pending': self._pending, 'rng': self._child_rng,
                                                             'envstep': self.envstep}}
        if self._in_flight:
            self._pending, self._in_flight = self._reply(), False
        self._conn.send(('state',))
        state, rng = self._reply()
        return {**state, 'overlap': {'pending': self._pending, 'rng': rng, 'envstep': self.envstep}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self._child is not None:
            raise RuntimeError("an overlapped collector loads its state before its process starts")
        extra = state.get('overlap') or {}
        self._local.load_state_dict({k: v for k, v in state.items() if k != 'overlap'})
        self._pending, self._child_rng = extra.get('pending'), extra.get('rng')
        self.envstep = extra.get('envstep', self._local.envstep)

    def close(self) -> None:
        if self._child is not None:
            try:
                self._conn.send(('close',))
            except (BrokenPipeError, OSError):
                pass
            self._child.join(timeout=10)
            if self._child.is_alive():
                self._child.kill()
            self._child = None
        self._local.close()


def _synced_tensors(model: nn.Module) -> list[torch.Tensor]:
    """What a collect forward reads of ``model``: its parameters and buffers, less its critic's (QAC models; a
    recurrent model's critic encoder is read: its state advances as the actor acts)."""
    critic = getattr(model, 'critic', None)
    critic = getattr(critic, 'ensemble', critic) if getattr(model, 'memory', None) else critic
    skip = {id(t) for t in critic.parameters()} | {id(t) for t in critic.buffers()} if isinstance(critic, nn.Module) \
        else set()
    return [t.detach() for t in (*model.parameters(), *model.buffers()) if id(t) not in skip]


def _cpu_collect_policy(policy: Any, model: nn.Module) -> Any:
    """A collect-only policy of ``policy``'s class over ``model`` (on the CPU), in ``policy``'s collect state."""
    cfg = EasyDict(copy.deepcopy(dict(policy._cfg)))
    cfg.cuda, cfg.device = False, 'cpu'
    cpu = type(policy)(cfg, model=model, enable_field=['collect'])
    state = policy.collect_mode.state_dict()
    cpu.collect_mode.load_state_dict({**state, 'model': model.state_dict()})
    return cpu


def _picklable(error: Exception) -> Exception:
    """``error``, or where it does not survive pickling, a ``RuntimeError`` with its type and message."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def _child_main(conn: Any, collector: Any, policy: Any, seed: int, rng: torch.Tensor | None) -> None:
    """The child's loop: collect a round, report the collector's state, or close."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent handles it
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    if rng is not None:
        torch.set_rng_state(rng)
    logs: list[tuple] = []
    collector.write_log = lambda *args: logs.append(args)
    collector.reset_policy(policy.collect_mode)
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        try:
            if message[0] == 'close':
                break
            if message[0] == 'state':
                conn.send(('ok', (collector.state_dict(), torch.get_rng_state())))
                continue
            if message[3] is not None:  # the learner's reward weights, as its own collector would weigh by
                policy.reward_weights[:] = message[3]
            before = collector.envstep
            batch = collector.collect_batch(message[1], message[2])
            result = {'batch': _tree(batch, Tensor.numpy), 'steps': collector.envstep - before,
                      'logs': logs[:], 'episodes': collector.finished_episodes[:],
                      **{k: getattr(collector, k) for k in COUNTERS}}
            logs.clear()
            collector.finished_episodes.clear()
            conn.send(('ok', result))
        except Exception as error:  # the parent raises it
            conn.send(('error', _picklable(error)))
    collector.close()
    conn.close()


def _tree(batch: dict[str, Any], leaf: Any) -> dict[str, Any]:
    """``leaf`` of every value of a batch, nested dicts (dict observations) kept as dicts."""
    return {k: _tree(v, leaf) if isinstance(v, dict) else leaf(v) for k, v in batch.items()}
