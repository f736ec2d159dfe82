"""Memory for the QAC models: an LSTM or GRU encoder in front of the actor and, separately, of the critics.

A recurrent model reads ``Memory`` in place of an observation: a sequence of inputs (time second), the state at its
first step, and which steps' features the heads read. Acting is a sequence of one step; learning runs the whole
sampled sequence once per encoder (pomdp-baselines: separate actor and critic encoders learn better than a shared
one), with a ``burnin`` prefix that only advances the state (R2D2).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

RNN_TYPES = {'lstm': nn.LSTM, 'gru': nn.GRU}


class Memory(NamedTuple):
    """A recurrent model's input: ``obs`` ``[B, T, *obs]``, ``state`` ``[B, S]`` before the first step (both
    encoders'), the previous action ``[B, T(, A)]`` and reward ``[B, T]`` where the model reads them. ``part``: the
    heads read every step ('all', acting), all but the last ('cur') or all but the first ('next'); ``weight``
    ``[B * T']``: each row's share of a mean (the loss steps', normalised to mean 1)."""
    obs: Tensor
    state: Tensor
    prev_action: Tensor | None = None
    prev_reward: Tensor | None = None
    burnin: int = 0
    part: str = 'all'
    weight: Tensor | None = None


def row_mean(x: Tensor, obs: object) -> Tensor:
    """The mean over the last axis (rows), weighted by ``obs.weight`` where ``obs`` is a ``Memory`` with one."""
    weight = obs.weight if isinstance(obs, Memory) else None
    return x.mean(-1) if weight is None else (x * weight).mean(-1)


class RecurrentEncoder(nn.Module):
    """One LSTM/GRU layer stack over ``[obs, prev_action (one-hot where discrete), prev_reward]``; its state is one
    flat row ``[B, state_size]`` (LSTM: h then c), so that buffers, collectors and checkpoints keep it as a tensor."""

    def __init__(self, obs_size: int, type: str = 'lstm', hidden_size: int = 64, num_layers: int = 1,
                 prev_action: int = 0, prev_reward: bool = False, discrete: bool = False) -> None:
        super().__init__()
        if type not in RNN_TYPES:
            raise ValueError(f"model.rnn.type must be one of {sorted(RNN_TYPES)}, got {type!r}")
        self.kind, self.hidden_size, self.num_layers = type, hidden_size, num_layers
        self.prev_action, self.prev_reward, self.discrete = prev_action, bool(prev_reward), discrete
        in_size = obs_size + prev_action + int(self.prev_reward)
        self.rnn = RNN_TYPES[type](in_size, hidden_size, num_layers, batch_first=True)
        self.state_size = (2 if type == 'lstm' else 1) * num_layers * hidden_size

    def forward(self, memory: Memory, state: Tensor) -> tuple[Tensor, Tensor]:
        """``(features [B, T, H], state after the last step [B, S])`` from ``state`` ``[B, S]``."""
        x = self._inputs(memory)
        burnin = memory.burnin
        if burnin:  # the prefix only advances the state: no gradient flows through it
            with torch.no_grad():
                head, state = self._run(x[:, :burnin], state)
            tail, state = self._run(x[:, burnin:], state)
            return torch.cat([head, tail], 1), state
        return self._run(x, state)

    def _inputs(self, memory: Memory) -> Tensor:
        obs = memory.obs.flatten(2).float()
        parts = [obs]
        if self.prev_action:
            action = memory.prev_action
            action = F.one_hot(action.long(), self.prev_action).float() if self.discrete else \
                action.reshape(*obs.shape[:2], -1).float()
            parts.append(action)
        if self.prev_reward:
            parts.append(memory.prev_reward.reshape(*obs.shape[:2], 1).float())
        return torch.cat(parts, -1) if len(parts) > 1 else obs

    def _run(self, x: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        with torch.autocast(x.device.type, enabled=False):  # learn.amp: oneDNN's LSTM has no bf16/fp16 kernels
            return self._run_float32(x.float(), state.float())

    def _run_float32(self, x: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        layers = state.reshape(state.shape[0], -1, self.num_layers, self.hidden_size).permute(1, 2, 0, 3).contiguous()
        if self.kind == 'lstm':  # [2 (h, c), layers, B, H] from the state row's [B, 2 * layers * H]
            features, (h, c) = self.rnn(x, (layers[0], layers[1]))
            out = torch.stack([h, c])
        else:
            features, h = self.rnn(x, layers[0])
            out = h.unsqueeze(0)
        return features, out.permute(2, 0, 1, 3).reshape(state.shape[0], -1)

    def read(self, memory: Memory, state: Tensor) -> tuple[Tensor, Tensor]:
        """``(features of the steps the heads read, flat [B * T', H], state after the last step)``."""
        features, state = self(memory, state)
        if memory.part == 'cur':
            features = features[:, :-1]
        elif memory.part == 'next':
            features = features[:, 1:]
        return features.reshape(-1, features.shape[-1]), state


class RecurrentCritic(nn.Module):
    """The critics behind their own recurrent encoder: ``ensemble(features [+ action])`` -> ``[E, B * T', out]``;
    ``state_offset``: where the critics' part of a ``Memory`` state row starts (after the actor's)."""

    def __init__(self, encoder: RecurrentEncoder, ensemble: nn.Module, state_offset: int) -> None:
        super().__init__()
        self.encoder, self.ensemble, self.state_offset = encoder, ensemble, state_offset

    def forward(self, memory: Memory, action: Tensor | None = None) -> Tensor:
        features = self.encoder.read(memory, memory.state[:, self.state_offset:])[0]
        return self.ensemble(features if action is None else torch.cat([features, action], dim=-1))


def recurrent_encoders(rnn: dict, obs_size: int, action_size: int, discrete: bool
                       ) -> tuple[RecurrentEncoder, RecurrentEncoder]:
    """The actor's and the critics' encoders for a model's ``rnn`` setting."""
    rnn = dict(rnn)
    action = action_size if rnn.pop('prev_action', False) else 0
    return tuple(RecurrentEncoder(obs_size, prev_action=action, discrete=discrete, **rnn) for _ in range(2))


def recurrent_actor(actor: nn.Sequential, critic: RecurrentCritic, memory: Memory) -> tuple[Tensor, Tensor | None]:
    """The actor's head input from ``memory``; where acting (``part='all'``), the new state of both encoders too
    (the critics' advances beside the actor's, so that one stored state serves both)."""
    encoder = actor[0]
    features, state = encoder.read(memory, memory.state[:, :encoder.state_size])
    if memory.part != 'all':
        return actor[1:](features), None
    _, critic_state = critic.encoder(memory, memory.state[:, critic.state_offset:])
    return actor[1:](features), torch.cat([state, critic_state], -1)
