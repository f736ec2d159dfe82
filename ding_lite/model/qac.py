"""Actor-critic models for SAC: continuous (tanh-Gaussian actor) and discrete (softmax actor)."""
from __future__ import annotations

from typing import Any

import torch
from easydict import EasyDict
from torch import Tensor, nn

from ..registry import MODEL_REGISTRY
from .recurrent import Memory, RecurrentCritic, recurrent_actor, recurrent_encoders
from .heads import ConvEncoder, FCEncoder, MultiInputEncoder, ReparameterizationHead, ensemble_mlp, mlp, \
    signature_config


def _flat_size(shape: int | tuple | list, name: str) -> int:
    if isinstance(shape, int) and shape > 0:
        return shape
    if isinstance(shape, (tuple, list)) and len(shape) == 1 and int(shape[0]) > 0:
        return int(shape[0])
    images = ' (or [C, H, W] for images)' if name == 'obs_shape' else ''
    raise ValueError(f"{name} must be a positive int or a 1-element list for vector inputs{images}, got {shape!r}")


def check_action_space(action_space: str, model: str) -> None:
    """DI-engine's ``action_space`` key: every continuous actor here is a tanh-squashed Gaussian
    (``'reparameterization'``)."""
    if action_space != 'reparameterization':
        raise ValueError(f"model {model!r} supports action_space='reparameterization' (a tanh-squashed Gaussian), "
                         f"got {action_space!r}")


class _QAC(nn.Module):
    """Shared ``forward(x, mode)`` dispatch in DI-engine's form."""

    mode = ('compute_actor', 'compute_critic')

    @classmethod
    def default_config(cls) -> EasyDict:
        return signature_config(cls)

    def forward(self, inputs: Any, mode: str) -> dict[str, Any]:
        if mode not in self.mode:
            raise ValueError(f"unknown forward mode {mode!r}; expected one of {self.mode}")
        return getattr(self, mode)(inputs)

    def _q_out(self, q: Tensor) -> Tensor:
        return q if self.n_critics > 1 else q[0]

    def _encoders(self, obs_shape: Any, sizes: list[int] | None, share: bool, activation: str,
                  conv: dict[str, Any]) -> tuple[int, nn.Module | None, nn.Module | None]:
        """``(feature size the heads take, actor encoder, critic encoder)``: images ``[C, H, W]`` always get conv
        encoders (DI-engine's ``[32, 64, 64, 128]`` when ``sizes`` is None; ``conv``: their kernel sizes and
        strides), vectors FC ones only with ``sizes``. ``share``: one encoder, the critics'; the actor reads its
        features without gradient."""
        image = isinstance(obs_shape, dict) or isinstance(obs_shape, (list, tuple)) and len(obs_shape) == 3
        layout = obs_shape if isinstance(obs_shape, dict) else [int(s) for s in obs_shape] if image else \
            _flat_size(obs_shape, 'obs_shape')
        sizes = list(sizes) if sizes else ([32, 64, 64, 128] if image else None)
        self.share_encoder = bool(share and sizes)
        if sizes is None:
            return layout, None, None
        if isinstance(obs_shape, dict):  # images beside vectors
            actor, critic = (None if self.share_encoder else MultiInputEncoder(layout, sizes, activation, **conv),
                             MultiInputEncoder(layout, sizes, activation, **conv))
            return critic.out_size, actor, critic
        make = (lambda: ConvEncoder(layout, sizes, activation, **conv)) if image else \
            (lambda: FCEncoder(layout, sizes, activation))
        return sizes[-1], None if self.share_encoder else make(), make()

    def _actor_input(self, obs: Tensor) -> Tensor:
        return self.critic.encoder(obs).detach() if self.share_encoder else obs

    def _memory_encoders(self, rnn: dict | None, obs_shape: Any, encoder_sizes: list | None, discrete: bool
                         ) -> tuple[nn.Module | None, nn.Module | None]:
        """With ``rnn`` (``dict(type='lstm'|'gru', hidden_size, num_layers, prev_action, prev_reward)``): the actor's
        and the critics' recurrent encoders over vector observations; ``memory``: what a collector keeps per env
        (``EnvMemory``'s spec), None without ``rnn``."""
        self.memory = None
        if rnn is None:
            return None, None
        if encoder_sizes:
            raise ValueError("model.rnn reads vector observations directly: leave encoder_hidden_size_list None")
        actor, critic = recurrent_encoders(rnn, _flat_size(obs_shape, 'obs_shape'), self.action_size, discrete)
        action = ((), 'int64') if discrete else ((self.action_size,), 'float32')
        self.memory = dict(state_size=actor.state_size + critic.state_size, prev_reward=actor.prev_reward,
                           prev_action=action if actor.prev_action else None)
        return actor, critic

    def _recurrent_actor(self, memory: Memory) -> tuple[Any, dict[str, Tensor]]:
        """The actor's head output on ``memory``, and ``{'state': ...}`` where acting."""
        out, state = recurrent_actor(self.actor, self.critic, memory)
        return out, {} if state is None else {'state': state}


class EncodedCritic(nn.Module):
    """The critics behind one observation encoder: ``ensemble(encoder(obs) [+ action])`` -> ``[E, B, out]``."""

    def __init__(self, encoder: nn.Module, ensemble: nn.Module) -> None:
        super().__init__()
        self.encoder, self.ensemble = encoder, ensemble

    def forward(self, obs: Tensor, action: Tensor | None = None) -> Tensor:
        features = self.encoder(obs)
        return self.ensemble(features if action is None else torch.cat([features, action], dim=-1))


@MODEL_REGISTRY.register('continuous_qac')
class ContinuousQAC(_QAC):
    """Tanh-Gaussian actor ``obs -> (mu, sigma)`` and (twin) critics ``(obs, action) -> q``.

    ``compute_actor`` returns ``{'logit': [mu, sigma]}``; ``compute_critic`` takes ``{'obs', 'action'}`` and
    returns ``{'q_value'}`` of shape ``[E, B]`` for an ensemble (twin critics: E = 2, one batched module), else
    ``[B]``; with ``n_quantiles > 1`` each critic gives that many quantiles: ``[E, B, n_quantiles]``, and with
    ``reward_heads > 1`` one value per reward signal: ``[E, B, reward_heads]``.
    """

    action_space_type = 'continuous'  # the actions it acts on (a policy of other actions refuses it)

    def __init__(
            self,
            obs_shape: int | list | dict,         # observation size; [C, H, W] for images; {key: shape} for a Dict
            action_shape: int | list,             # action size
            twin_critic: bool = False,            # two critics, the target takes their minimum (clipped double Q)
            action_space: str = 'reparameterization',  # DI-engine's key; the only one: a tanh-squashed Gaussian
            actor_head_hidden_size: int = 64,     # width of the actor's hidden layers
            actor_head_layer_num: int = 1,        # the actor's hidden layers after its first
            critic_head_hidden_size: int = 64,    # width of the critics' hidden layers
            critic_head_layer_num: int = 1,       # the critics' hidden layers after their first
            activation: str = 'relu',             # relu, tanh, elu, gelu, silu or leaky_relu
            log_sigma_min: float = -20.0,         # lower clamp of the actor's log standard deviation
            log_sigma_max: float = 2.0,           # upper clamp of the actor's log standard deviation
            encoder_hidden_size_list: list | None = None,  # conv channels + features (images), FC widths (vectors)
            encoder_kernel_size: list | None = None,  # images: a kernel size per conv layer; None: 8, 4, 3 (DI-engine)
            encoder_stride: list | None = None,   # images: a stride per conv layer; None: 4, 2, 1 (DI-engine's)
            share_encoder: bool = False,          # one encoder, the critics'; the actor reads it without gradient
            n_critics: int | None = None,         # critics in the ensemble; None: 2 with twin_critic, else 1
            n_quantiles: int = 1,                 # outputs per critic: 1, its Q; more, quantiles of the return (TQC)
            value_network: bool = False,          # a state-value network V(s) too (SAC-v1), as compute_value
            dropout: float = 0.0,                 # dropout rate in the critics' hidden blocks (DroQ: 0.01)
            layer_norm: bool = False,             # LayerNorm in the critics' hidden blocks, after dropout (DroQ)
            batch_renorm: dict | None = None,     # BatchRenorm before every Linear of actor and critics (CrossQ):
                                                  # dict(momentum=0.01, warmup_steps=100000), as BatchRenorm's
            rnn: dict | None = None,              # dict(type='lstm'|'gru', hidden_size=64, num_layers=1,
                                                  # prev_action=False, prev_reward=False): recurrent encoders
            reward_heads: int = 1,                # values per critic: one per reward signal (policy.reward_signals)
    ) -> None:
        super().__init__()
        check_action_space(action_space, 'continuous_qac')
        self.action_size = _flat_size(action_shape, 'action_shape')
        self.twin_critic = twin_critic
        self.n_critics, self.n_quantiles = n_critics or (2 if twin_critic else 1), n_quantiles
        if reward_heads > 1 and n_quantiles > 1:
            raise ValueError("reward_heads > 1 (reward signals) and n_quantiles > 1 (TQC) cannot be combined")
        self.reward_heads = reward_heads
        actor_rnn, critic_rnn = self._memory_encoders(rnn, obs_shape, encoder_hidden_size_list, False)
        feature, actor_encoder, critic_encoder = self._encoders(
            obs_shape, encoder_hidden_size_list, share_encoder, activation,
            dict(kernel_size=encoder_kernel_size, stride=encoder_stride))
        actor_encoder, feature = (actor_rnn, actor_rnn.hidden_size) if actor_rnn else (actor_encoder, feature)
        self.actor = nn.Sequential(
            *([actor_encoder] if actor_encoder is not None else []),
            mlp(feature, actor_head_hidden_size, actor_head_layer_num, activation, batch_renorm),
            ReparameterizationHead(actor_head_hidden_size, self.action_size, log_sigma_min, log_sigma_max),
        )
        ensemble = ensemble_mlp(self.n_critics, feature + self.action_size, critic_head_hidden_size,
                                critic_head_layer_num, max(n_quantiles, reward_heads), activation, dropout, layer_norm,
                                batch_renorm)
        self.critic = RecurrentCritic(critic_rnn, ensemble, actor_rnn.state_size) if critic_rnn else \
            EncodedCritic(critic_encoder, ensemble) if critic_encoder is not None else ensemble
        if value_network:
            if critic_encoder is not None or rnn is not None:
                raise ValueError("value_network=True takes vector observations without encoder_hidden_size_list "
                                 "or rnn")
            self.value = nn.Sequential(mlp(feature, critic_head_hidden_size, critic_head_layer_num, activation),
                                       nn.Linear(critic_head_hidden_size, 1))
            self.mode = self.mode + ('compute_value',)

    def compute_actor(self, obs: Tensor | Memory) -> dict[str, Any]:
        if isinstance(obs, Memory):
            (mu, sigma), state = self._recurrent_actor(obs)
            return {'logit': [mu, sigma], **state}
        mu, sigma = self.actor(self._actor_input(obs))
        return {'logit': [mu, sigma]}

    def compute_value(self, obs: Tensor) -> dict[str, Tensor]:
        return {'value': self.value(obs).squeeze(-1)}  # [B]

    def compute_critic(self, inputs: dict[str, Tensor]) -> dict[str, Tensor]:
        obs, action = inputs['obs'], inputs['action']
        if action.dim() == 1:
            action = action.unsqueeze(-1)
        q = self.critic(obs, action) if isinstance(self.critic, (EncodedCritic, RecurrentCritic)) else \
            self.critic(torch.cat([obs, action], dim=-1))
        single = self.n_quantiles == 1 and self.reward_heads == 1
        return {'q_value': self._q_out(q.squeeze(-1) if single else q)}  # [E, B(, n_quantiles or reward_heads)]


class HybridActor(nn.Module):
    """An actor body and two heads on its features: a tanh-Gaussian's ``(mu, sigma)`` and a choice's logits."""

    def __init__(self, body: nn.Module, gaussian: nn.Module, choice: nn.Module) -> None:
        super().__init__()
        self.body, self.gaussian, self.choice = body, gaussian, choice

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        features = self.body(obs)
        mu, sigma = self.gaussian(features)
        return mu, sigma, self.choice(features)


@MODEL_REGISTRY.register('hybrid_qac')
class HybridQAC(ContinuousQAC):
    """Hybrid actions (Delalleau et al. 2019): one actor giving a choice's logits ``[B, K]`` and a tanh-Gaussian over
    the Box (shared by the choices), and critics ``(obs, box action) -> Q of every choice [E, B, K]``.

    ``compute_actor`` returns ``{'logit': [mu, sigma], 'choice_logit'}``; ``compute_critic`` takes ``{'obs',
    'action'}`` with the Box part of the action. ContinuousQAC's keys, plus ``choices`` (K); vector observations.
    """

    action_space_type = 'hybrid'  # the actions it acts on (a policy of other actions refuses it)

    @classmethod
    def default_config(cls) -> EasyDict:
        """ContinuousQAC's keys, ``choices`` and ``box_per_choice``."""
        return EasyDict({**ContinuousQAC.default_config(), 'choices': None, 'box_per_choice': False})

    def __init__(
            self,
            obs_shape: int | list,                # observation size
            action_shape: int | list,             # the Box part's size
            choices: int = 2,                     # the Discrete part's size (read from the env)
            box_per_choice: bool = False,         # a Gaussian over the Box per choice (mu, sigma [B, K, D]); False:
                                                  # one shared by the choices
            **kwargs: Any,                        # ContinuousQAC's keys
    ) -> None:
        unsupported = {key: kwargs[key] for key in ('n_quantiles', 'reward_heads', 'rnn', 'value_network',
                                                     'encoder_hidden_size_list', 'batch_renorm')
                       if kwargs.get(key) not in (None, False, 1)}
        if unsupported:
            raise ValueError(f"model 'hybrid_qac' (hybrid actions) takes none of {sorted(unsupported)} yet")
        if not (isinstance(choices, int) and choices >= 2):
            raise ValueError(f"model.choices (the Discrete part's size, which the pipelines read from the env) must be "
                             f"an int >= 2, got {choices!r}")
        super().__init__(obs_shape, action_shape, **{**kwargs, 'n_quantiles': choices})  # a value per choice
        self.choices, self.box_per_choice = choices, bool(box_per_choice)
        body, gaussian = self.actor[:-1], self.actor[-1]
        if self.box_per_choice:
            gaussian = ReparameterizationHead(gaussian.mu.in_features, self.action_size * choices,
                                              gaussian.log_sigma_min, gaussian.log_sigma_max)
        self.actor = HybridActor(body, gaussian, nn.Linear(gaussian.mu.in_features, choices))

    def compute_actor(self, obs: Tensor) -> dict[str, Any]:
        mu, sigma, choice_logit = self.actor(obs)
        if self.box_per_choice:  # [B, K, D]: row k the Gaussian of choice k
            mu, sigma = (x.reshape(*x.shape[:-1], self.choices, self.action_size) for x in (mu, sigma))
        return {'logit': [mu, sigma], 'choice_logit': choice_logit}


@MODEL_REGISTRY.register('discrete_qac')
class DiscreteQAC(_QAC):
    """Softmax actor ``obs -> logit [B, A]`` and (twin) critics ``obs -> q [B, A]`` for every action.

    ``compute_critic`` takes ``{'obs'}`` (or the obs tensor) and returns ``{'q_value'}``: ``[2, B, A]`` with twin
    critics, else ``[B, A]``; with ``reward_heads > 1``, ``[..., A, reward_heads]``.
    """

    action_space_type = 'discrete'  # the actions it acts on (a policy of other actions refuses it)

    def __init__(
            self,
            obs_shape: int | list | None = None,         # observation size
            action_shape: int | list | None = None,      # number of actions
            twin_critic: bool = False,                   # two critics, the target takes their minimum
            actor_head_hidden_size: int = 64,            # width of the actor's hidden layers
            actor_head_layer_num: int = 1,               # the actor's hidden layers after its first
            critic_head_hidden_size: int = 64,           # width of the critics' hidden layers
            critic_head_layer_num: int = 1,              # the critics' hidden layers after their first
            activation: str = 'relu',                    # relu, tanh, elu, gelu, silu or leaky_relu
            agent_obs_shape: int | list | None = None,   # DI-engine's name of obs_shape (one agent)
            global_obs_shape: int | list | None = None,  # DI-engine's key; must equal obs_shape (one agent)
            encoder_hidden_size_list: list | None = None,  # conv channels + features (images), FC widths (vectors)
            encoder_kernel_size: list | None = None,     # images: a kernel size per conv layer; None: 8, 4, 3
            encoder_stride: list | None = None,          # images: a stride per conv layer; None: 4, 2, 1
            share_encoder: bool = False,                 # one encoder, the critics'; the actor reads it, no gradient
            rnn: dict | None = None,                     # recurrent encoders, as ContinuousQAC's
            reward_heads: int = 1,                       # values per action and critic: one per reward signal
    ) -> None:
        super().__init__()
        obs_shape = _single_agent_obs(obs_shape, agent_obs_shape, global_obs_shape)
        self.action_size = _flat_size(action_shape, 'action_shape')
        self.twin_critic, self.n_critics = twin_critic, 2 if twin_critic else 1
        actor_rnn, critic_rnn = self._memory_encoders(rnn, obs_shape, encoder_hidden_size_list, True)
        feature, actor_encoder, critic_encoder = self._encoders(
            obs_shape, encoder_hidden_size_list, share_encoder, activation,
            dict(kernel_size=encoder_kernel_size, stride=encoder_stride))
        actor_encoder, feature = (actor_rnn, actor_rnn.hidden_size) if actor_rnn else (actor_encoder, feature)
        self.actor = nn.Sequential(*([actor_encoder] if actor_encoder is not None else []),
                                   mlp(feature, actor_head_hidden_size, actor_head_layer_num, activation),
                                   nn.Linear(actor_head_hidden_size, self.action_size))
        self.reward_heads = reward_heads
        ensemble = ensemble_mlp(2 if twin_critic else 1, feature, critic_head_hidden_size, critic_head_layer_num,
                                self.action_size * reward_heads, activation)
        self.critic = RecurrentCritic(critic_rnn, ensemble, actor_rnn.state_size) if critic_rnn else \
            EncodedCritic(critic_encoder, ensemble) if critic_encoder is not None else ensemble

    def compute_actor(self, inputs: Any) -> dict[str, Tensor]:
        if isinstance(inputs, Memory):
            logit, state = self._recurrent_actor(inputs)
            return {'logit': logit, **state}
        obs, mask = unpack_obs(inputs)
        output = {'logit': self.actor(self._actor_input(obs))}
        if mask is not None:
            output['action_mask'] = mask
        return output

    def compute_critic(self, inputs: Any) -> dict[str, Tensor]:
        q = self.critic(unpack_obs(inputs)[0])
        q = q if self.reward_heads == 1 else q.unflatten(-1, (self.action_size, self.reward_heads))
        return {'q_value': self._q_out(q)}  # [E, B, A(, reward_heads)]


def unpack_obs(inputs: Any) -> tuple[Tensor, Tensor | None]:
    """``(obs, action_mask or None)`` from a tensor or nested ``{'obs': ..., 'action_mask': ...}``; a Dict of images
    and vectors (no ``'obs'`` key) is the observation itself."""
    mask = None
    while not isinstance(inputs, (Tensor, Memory)) and 'obs' in inputs:
        if 'action_mask' in inputs:
            mask = inputs['action_mask']
        inputs = inputs['obs']
    return inputs, mask


def _single_agent_obs(obs_shape: Any, agent_obs_shape: Any, global_obs_shape: Any) -> Any:
    """DI-engine's cartpole configs name the obs ``agent_obs_shape``/``global_obs_shape``; one agent: one size."""
    shapes = {repr(s) for s in (obs_shape, agent_obs_shape, global_obs_shape) if s is not None}
    if len(shapes) > 1:
        raise ValueError(f"obs_shape={obs_shape!r}, agent_obs_shape={agent_obs_shape!r} and "
                         f"global_obs_shape={global_obs_shape!r} differ: a separate global state needs a "
                         f"multi-agent model, which DiscreteQAC is not")
    return next((s for s in (obs_shape, agent_obs_shape, global_obs_shape) if s is not None), None)
