"""Soft Actor-Critic for continuous actions."""
from __future__ import annotations

import copy
import math
from typing import Any, ClassVar

import numpy as np
import torch
from easydict import EasyDict
from torch import Tensor, nn

from ding_lite.data import Batch, Draw
from ding_lite.model import model_wrap
from ding_lite.model.wrappers import frozen, set_training
from ding_lite.model.recurrent import Memory, row_mean
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.rl_utils import TDTarget, Temperature, load_optimizer, make_adam, \
    preprocess_learn_batch, tanh_gaussian_sample
from ding_lite.rl_utils.critic_term import CriticTerm
from ding_lite.rl_utils.reward_heads import RewardHeads, RewardVector
from ding_lite.rl_utils.sequence import sequence_batch, sequence_priority
from ding_lite.rl_utils.update_executor import UpdateExecutor
from .base_policy import Policy
from .sac_options import check_sac_config, cloning_and_signals, init_actor_output
from .param_resets import ParamResets
from .sac_reports import di_engine_extras, gaussian_entropy, learn_stats, transition_scores


@POLICY_REGISTRY.register('sac')
class SACPolicy(Policy):
    """Soft Actor-Critic for Box actions (arXiv:1812.05905): twin critics, tanh-Gaussian actor, auto alpha.

    Subclasses change the math through its hooks, each documented once, on its method, and listed in
    docs/sac-family.md. The update calls two strategies that are always there: ``self._heads`` (one reward, or a
    head per reward dimension or signal) and ``self._td_estimator`` (``TDTarget``, owning gamma); how it runs (amp,
    compile, the CUDA graph, the optimizer steps, a seed axis) is ``self.executor``'s (``UpdateExecutor``)."""

    # tanh-squashed: DI-engine's 'reparam_sample'/'deterministic_sample' return raw Gaussian actions
    collect_wrapper: ClassVar[str] = 'tanh_reparam_sample'
    eval_wrapper: ClassVar[str] = 'tanh_deterministic_sample'
    target_network: ClassVar[bool] = True  # a Polyak copy of the model for the TD target (CrossQ has none)
    value_network: ClassVar[bool] = False  # trains the model's state-value network (SAC-v1)
    critic_term: ClassVar[type[CriticTerm]] = CriticTerm  # an extra term of the critics' loss (CQL's), and its state
    # what its update is written for (ding_lite.capabilities; a subclass declares its own)
    capabilities: ClassVar[frozenset[str]] = frozenset({'recurrent', 'reward_signals', 'reward_vector', 'cloning'})
    # what policy.multi_agent=True runs, and what runs on hybrid actions (this class's own: not inherited)
    multi_agent_type: ClassVar[str] = 'masac'
    hybrid_type: ClassVar[str] = 'hybrid_sac'
    rate_schedule: ClassVar[bool] = False  # its update sets the learning rates (stacked rows must then share them)
    config = dict(
        type='sac',                           # the registered policy name
        random_collect_size=10000,            # env steps of uniformly random actions before learning
        burnin_step=0,                        # steps before each sequence that only advance the state (model.rnn)
        save_prev_state=True,                 # sequences start from the state stored at their first step; False: zero
        memory=None,                          # ML-Agents' network_settings.memory: dict(memory_size, sequence_length)
        reward_weights=None,                  # ALF's: the env's reward is a vector of this many dimensions, a critic
                                              # head each (a gamma each: discount_factor a list); the actor maximises
                                              # weights · Q (set_reward_weights changes them)
        reward_signals=None,                  # ML-Agents': dict(extrinsic=dict(strength, gamma), rnd=dict(...)), each
                                              # signal a critic head; None: the env's reward alone
        behavioral_cloning=None,              # ML-Agents': dict(demo_path, strength, steps, batch_size): the actor's
                                              # loss gains a cloning term whose weight falls to 0 over steps (learn)
        model=dict(
            twin_critic=True,                 # two critics, the target takes their minimum (clipped double Q)
            init='default',                   # weights of the Linear layers: 'default' (PyTorch's), 'xavier' or
                                              # 'orthogonal' (biases zero)
        ),
        learn=dict(
            batch_size=256,                   # transitions per learn step
            learning_rate_q=3e-4,             # Adam's learning rate for the critics
            learning_rate_policy=3e-4,        # Adam's learning rate for the actor
            learning_rate_alpha=3e-4,         # Adam's learning rate for the temperature
            adam_betas=(0.9, 0.999),          # Adam's (beta1, beta2) for the actor and the critics (CrossQ: 0.5)
            weight_decay_q=0.0,               # L2 weight decay of the critics (Adam's, added to the gradient)
            weight_decay_policy=0.0,          # L2 weight decay of the actor
            decoupled_weight_decay=False,     # True: AdamW's decay (the weights shrink), not L2 in the gradient
            discount_factor=0.99,             # gamma of the TD target
            target_theta=0.005,               # Polyak rate of the target critics
            target_update_freq=1,             # learn steps per Polyak update of the target critics
            policy_delay=1,                   # critic steps per actor (and alpha) step: REDQ's G, CrossQ's 3
            alpha=0.2,                        # initial value, or the fixed one if not auto_alpha
            auto_alpha=True,                  # learn alpha towards the target entropy
            log_space=True,                   # learn log(alpha): always positive, better scaled
            target_entropy=None,              # the entropy alpha steers towards; None: the policy's default
            reward_scale=1.0,                 # rewards times this in the learn step (returns stay the env's own)
            reward_signal_steps_per_update=None,  # ML-Agents': env steps per reward-model step, each on a mini-batch
                                              # of its own; None: one step per learn step, on its batch
            init_w=None,                      # uniform init bound of the actor's output layers (DI-engine 3e-3)
            compile=False,                    # torch.compile the losses (forward and backward); slower on a CPU
            cuda_graph=False,                 # replay each update from a captured CUDA graph (CUDA only)
            graph_sample=True,                # cuda_graph, one seed: the batch drawn inside the graph
            amp=None,                         # mixed precision of the update's forward passes: 'bf16' or 'fp16'
                                              # (with a gradient scaler); None: float32
            param_resets=None,                # env steps at which the networks, their targets, the temperature and
                                              # the optimizers start again, the buffer kept (the primacy bias): a
                                              # list (sbx's) or a period (BRO's); None: never
            param_resets_keep_obs_norm=True,  # a reset keeps the model's observation normaliser (SimBa's RSNorm,
                                              # env.norm_obs's): its statistics are the data's, not learned
        ),
        collect=dict(
            n_sample=1,                       # transitions per collect call
            unroll_len=1,                     # steps per sampled sequence (model.rnn; batch_size counts sequences)
        ),
        eval=dict(),
        other=dict(
            replay_buffer=dict(
                replay_buffer_size=int(1e6),  # transitions kept
            ),
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return 'continuous_qac'

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        super().check_config(cfg)
        check_sac_config(cls, cfg)

    @classmethod
    def init_model(cls, model: nn.Module, cfg: dict) -> nn.Module:
        """``model.init``'s scheme, then ``learn.init_w`` (DI-engine's) on the actor's output layers."""
        return init_actor_output(super().init_model(model, cfg), (cfg.get('learn') or {}).get('init_w'))

    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._policy_delay = learn.policy_delay              # critic steps per actor step
        self.learn_steps = 0                                  # critic steps so far: whose turn the actor's is
        self.horizon: int | None = None                       # the run's budget in learn steps (set_horizon)
        self._actor_stats: dict[str, Tensor] | None = None    # the last actor step's, logged again until the next
        self._n_critics = getattr(self._model, 'n_critics', 2 if self._model.twin_critic else 1)
        self._target_update_freq = learn.target_update_freq
        self._optimizer_q = make_adam(self._model.critic.parameters(), learn.learning_rate_q, learn.adam_betas,
                                      learn.weight_decay_q, learn.decoupled_weight_decay)
        self._optimizer_policy = make_adam(self._model.actor.parameters(), learn.learning_rate_policy,
                                           learn.adam_betas, learn.weight_decay_policy, learn.decoupled_weight_decay)
        target_entropy = learn.target_entropy if learn.target_entropy is not None else self._default_target_entropy()
        self._alpha = Temperature(learn.alpha, target_entropy if learn.auto_alpha else None,
                                  learn.learning_rate_alpha, learn.log_space).to(self._device)
        self.executor = UpdateExecutor(learn, self._device, type(self).__name__)
        self.resets = ParamResets(learn.param_resets, learn.param_resets_keep_obs_norm)
        self._learn_model = self.executor.model(model_wrap(self._model, 'base'))
        self._bc, self._heads = cloning_and_signals(self._cfg, self.action_space_type == 'discrete',
                                                      self._model.action_size, self._device)
        if isinstance(self._heads, RewardVector):
            self._heads.mirror = self.reward_weights  # the collector's and evaluator's, changed with the heads'
        heads = isinstance(self._heads, RewardHeads)  # the TD target owns gamma: one, or one per head
        self._td_estimator = TDTarget(self._heads.gamma, self._heads.use_done) if heads else \
            TDTarget(learn.discount_factor, device=self._device)
        self._signal_stats: dict[str, Tensor] = {}  # the reward models' last own step's losses
        self._critic_term = self.critic_term(self).to(self._device)
        self._target_model = self.executor.model(model_wrap(
            copy.deepcopy(self._model), 'target', update_type='momentum',
            update_kwargs={'theta': learn.target_theta})) if self.target_network else None
        # live views of the online critic: the target follows only what it is used for
        self._critic_params = dict(self._model.critic.named_parameters(prefix='critic'))
        self._actor_frozen = list(self._model.critic.parameters())  # constants in the actor's loss
        if self.executor.compiles:
            self._critic_loss, self._actor_loss = map(self.executor.compiled, (self._critic_loss, self._actor_loss))
        self._learn_drawn = self.executor.drawn(self._update, self._learn_batch)  # a graph of its own with cuda_graph
        if self.executor.graphs:  # after compile: a graph may hold compiled kernels
            self._update = self.executor.graphed(self._update)

    # the learning seams a run of many seeds (entry's SeedAxis) stacks (and learn_steps, which it sets)
    def preprocess_learn(self, data: list[dict] | Batch) -> Batch:
        return self._preprocess_learn(data)

    def update(self, batch: Batch) -> dict[str, Tensor]:
        return self._update(batch)

    def set_horizon(self, learn_steps: int | None) -> None:
        """The run's budget in learn steps (``horizon``, which a schedule over the run reads): the pipelines tell it."""
        self.horizon = learn_steps

    def row_settings(self) -> tuple[dict[str, torch.optim.Optimizer | None], Any, Temperature]:
        """What a stacked row may set apart: the optimizers by their rate's key, the target wrapper, the temperature."""
        return ({'learning_rate_q': self._optimizer_q, 'learning_rate_policy': self._optimizer_policy,
                 'learning_rate_alpha': self._alpha.optimizer}, self._target_model, self._alpha)

    def set_reward_weights(self, weights: list[float]) -> None:
        """ALF's: the trade-off between the reward dimensions (``policy.reward_weights``) from the next learn step on;
        the collector's and evaluator's returns weigh the dimensions alike from then on."""
        if not isinstance(self._heads, RewardVector):
            raise ValueError("set_reward_weights: this policy learns no multi-dimensional reward; set "
                             "policy.reward_weights (one weight per dimension of the env's reward)")
        self._heads.set_weights(weights)

    def _default_target_entropy(self) -> float:
        """The temperature's target entropy where ``learn.target_entropy`` is None: ``-dim(A)``."""
        shape = self._cfg.model.get('action_shape') or self._model.action_size
        return -float(math.prod(shape) if isinstance(shape, (list, tuple)) else shape)  # -dim(A), SAC's heuristic

    # 1-line adapters over the DI-engine style model interface
    def _actor(self, obs: Tensor) -> Any:
        return self._learn_model.forward(obs, mode='compute_actor')['logit']

    def _critic(self, obs: Tensor, action: Tensor | None = None, *, target: bool = False) -> Tensor:
        model = self._target_model if target else self._learn_model
        inputs = {'obs': obs} if action is None else {'obs': obs, 'action': action}
        q = model.forward(inputs, mode='compute_critic')['q_value']
        q = q if self._n_critics > 1 else q.unsqueeze(0)  # [E, B(, A or quantiles)]
        return self._heads.critic_output(q)

    def _preprocess_learn(self, data: list[dict] | Batch) -> Batch:
        """A sampled batch (or transition list) on the device: ``weight`` added, observations and rewards
        normalised and scaled as configured (recurrent sequences as ``Memory``)."""
        for model in (self._learn_model, self._target_model):  # as DI-engine: Dropout / BatchNorm in training mode
            if model is not None and not model.training:
                set_training(model, True)
        if 'mask' in data:  # a recurrent model's sequences: obs and next_obs are Memory
            batch = sequence_batch(data, self._device, self._cfg.get('burnin_step', 0), self._normalize_obs,
                                   self._model.memory['state_size'], ignore_done=self._cfg.learn.ignore_done,
                                   use_priority_IS_weight=self._cfg.priority_IS_weight)
        else:
            batch = preprocess_learn_batch(data, self._device, ignore_done=self._cfg.learn.ignore_done,
                                           use_priority_IS_weight=self._cfg.priority_IS_weight,
                                           reward_dims=len(self.reward_weights) if self.reward_weights is not None
                                           else None)
            if self._obs_norm is not None:  # the buffer keeps raw observations: normalised with today's statistics
                batch.obs, batch.next_obs = self._normalize_obs(batch.obs), self._normalize_obs(batch.next_obs)
        if self._reward_norm is not None:  # and raw rewards (SB3's rule)
            batch.reward = self._reward_norm(batch.reward)
        if self._cfg.learn.reward_scale != 1.0:
            batch.reward = batch.reward * self._cfg.learn.reward_scale
        return batch

    def draws_in_graph(self, buffer: Any) -> bool:
        """Whether a learn step can take a ``Draw`` of ``buffer``: nothing but SAC's update reads the batch."""
        return self.executor.draws_in_graph(self._cfg.learn, buffer) and not self._heads.trains and \
            (type(self)._forward_learn, type(self).update) == (SACPolicy._forward_learn, SACPolicy.update)

    def _forward_learn(self, data: list[dict] | Batch | Draw) -> dict[str, Tensor]:
        """One learn step: preprocess, the reward heads' rewards, ``update`` (a ``Draw``: all in one graph); its
        statistics (a run of many seeds calls ``preprocess_learn`` and ``update``, not this: override the hooks)."""
        if isinstance(data, Draw):
            return self._learn_drawn(data)
        batch = self._learn_batch(data)
        own_batches = self._cfg.learn.get('reward_signal_steps_per_update')
        signal_stats = self._signal_stats if own_batches else self._heads.train_step(batch)
        stats = self.update(batch) | signal_stats
        if isinstance(batch.obs, Memory):  # one priority per sequence
            stats['priority'] = sequence_priority(stats['priority'], batch.obs.weight, len(batch.obs.state))
        return stats

    def _learn_batch(self, data: list[dict] | Batch) -> Batch:
        """``data`` preprocessed (collated once, on the device, ``weight`` added), its rewards the heads' ``[B, K]``."""
        batch = self._preprocess_learn(data)
        batch.reward = self._heads.rewards(batch)
        return batch

    def _train_reward_models(self, data: list[dict] | Batch) -> None:
        """One step of every reward model on ``data``, a mini-batch of their own (``reward_signal_steps_per_update``);
        its losses are logged with the next learn step."""
        self._signal_stats = self._heads.train_step(self._preprocess_learn(data))

    def _update(self, batch: Batch) -> dict[str, Tensor]:
        """One SAC update on a preprocessed batch: critics, actor, alpha, target critics.

        What one seed computes goes through ``executor.seedwise`` and each optimizer step through ``executor.step``:
        a run of many seeds (``SeedAxis``) maps them over its leading seed axis; a single run calls them as they are.
        """
        critic_loss, td, q, target_q = self.executor.seedwise(self._critic_loss, batch)  # [E, B], [E, B], [B]
        grad_norm_critic = self.executor.step(self._optimizer_q, critic_loss)
        extras = self._critic_term.step()  # what else the critics' loss gave gradients to (CQL's weight)
        # else the last actor step's statistics are logged again (a load without them: the actor steps now)
        if self.learn_steps % self._policy_delay == 0 or self._actor_stats is None:
            self._actor_stats = self._actor_step(batch.obs)
        self.learn_steps += 1
        sequences = (batch.obs,) if isinstance(batch.obs, Memory) else ()  # their means are the loss steps'
        stats = self._heads.head_stats(batch.reward, q.detach())   # with heads: [E, B, K] reported per head
        td, q, target_q = self._heads.summary(td, q, target_q)
        stats |= self.executor.seedwise(learn_stats, critic_loss, td, q, target_q, *sequences)
        stats |= {'grad_norm_critic': grad_norm_critic, **self._actor_stats, **extras}
        if self._target_model is not None and self.learn_steps % self._target_update_freq == 0:
            self._target_model.update(self._critic_params)
        stats['alpha'] = self._alpha.value
        return {k: v.detach() for k, v in stats.items()}      # tensors; the learner syncs when it logs

    def _actor_step(self, obs: Tensor) -> dict[str, Tensor]:
        """One step of the actor, then of alpha; their statistics."""
        with frozen(self._actor_frozen):  # the actor's loss needs no critic weight gradients
            policy_loss, entropy, *actor_stats = self.executor.seedwise(self._actor_loss, obs)
        if isinstance(obs, Memory):  # a sequence's rows weigh as its loss steps do (its means are theirs)
            entropy = entropy * obs.weight
        cloning = {}
        if self._bc is not None:  # ML-Agents' cloning term, on its own batch of demonstrations
            weighted, cloning['bc_loss'] = self._bc.loss(lambda o: self._actor(self._normalize_obs(o)),
                                                         self.learn_steps)
            policy_loss = policy_loss + weighted
        stats = {'policy_loss': policy_loss, 'entropy': entropy.mean(-1),  # [B] ([S, B] with a seed axis)
                 'grad_norm_actor': self.executor.step(self._optimizer_policy, policy_loss),
                 **(actor_stats[0] if actor_stats else {}), **cloning}
        if self._alpha.learned:
            stats['alpha_loss'] = self._alpha.update(entropy)
        return stats

    def _critic_loss(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(loss, td [E, B], q [E, B], target_q [B])``: the importance-weighted squared ``_critic_td``."""
        td, q, target_q = self._critic_td(batch)
        squared = self._heads.loss_mean(td.pow(2), target_q)
        return self._critic_term.add((batch.weight * squared).mean(-1).sum(), batch, q), td, q, target_q

    def _critic_td(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
        """``(td, q, target_q)``: soft Bellman error of every critic against the clipped double-Q target."""
        target_q = self._td_target(batch)
        q = self._q_pred(batch)
        return q - target_q, q, target_q

    @torch.no_grad()
    def _td_target(self, batch: Batch) -> Tensor:
        """The TD target from ``_soft_target_v(s')``."""
        return self._bootstrap(batch, self._soft_target_v(batch.next_obs))

    def _bootstrap(self, batch: Batch, v: Tensor) -> Tensor:
        """``r + gamma (1 - done) v`` from the soft value ``v`` ``[B]`` (``[B, K]``: atoms or heads)."""
        return self._td_estimator(batch.reward, batch.done, v)

    def _q_pred(self, batch: Batch) -> Tensor:
        """Every critic's Q of the batch's actions, ``[E, B]``."""
        return self._critic(batch.obs, batch.action)

    def _soft_target_v(self, next_obs: Tensor) -> Tensor:
        """The soft value of ``next_obs`` from the target critics: ``min Q(s', a') - alpha log pi(a'|s')``."""
        action, log_prob = tanh_gaussian_sample(*self._actor(next_obs))
        return self._heads.soft_value(self._critic(next_obs, action, target=True), self._target_bonus(log_prob))

    def _target_bonus(self, log_prob: Tensor) -> Tensor:
        """What the TD target's soft value subtracts: ``alpha log pi`` (the critic term's: CQL may drop it)."""
        return self._critic_term.target_bonus(self._alpha.value * log_prob)

    def _actor_loss(self, obs: Tensor) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """``(loss, entropy [B], stats)``: ``alpha log pi(a|s) - _actor_q(s, a)`` over reparameterised actions."""
        mu, sigma = self._actor(obs)
        action, log_prob = tanh_gaussian_sample(mu, sigma)
        stats = {'mu': mu.detach().mean(), 'log_sigma': sigma.detach().log().mean()}  # before the tanh
        return row_mean(self._alpha.value * log_prob - self._actor_q(obs, action), obs), -log_prob.detach(), stats

    def _actor_q(self, obs: Tensor, action: Tensor) -> Tensor:
        """The Q the actor climbs, ``[B]``: the critics' min (one per head, combined)."""
        # reward heads: weights · Q (ALF's multi-dimensional reward; the mean of the signals' values, ML-Agents')
        return self._heads.combine(self._heads.reduce(self._critic(obs, action)))

    def _collect_entropy(self, output: dict[str, Tensor], kwargs: dict[str, Any]) -> Tensor:
        return gaussian_entropy(output['logit'])

    def _monitor_vars_learn(self) -> list[str]:
        critics = [f'q_value_{i + 1}' for i in range(self._n_critics)]
        twin = ['twin_critic_loss'] if self._n_critics > 1 else []
        names = ['critic_loss', *twin, 'policy_loss', 'entropy', 'q_value', *critics, 'target_q_value', 'td_error',
                 'grad_norm_critic', 'grad_norm_actor', *self._actor_stat_names, 'alpha']
        heads = self._heads.stat_names() + (['bc_loss'] if self._bc is not None else [])
        heads += self._critic_term.stat_names()
        return names + (['alpha_loss'] if self._alpha.learned else []) + heads

    def score_transitions(self, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """ML-Agents' reports on collected transitions (``collector.report_collected``): ``transition_scores``."""
        set_training(self._learn_model, False)  # (the next learn step sets training mode again)
        return transition_scores(columns, self._q_pred, self._heads, self._normalize_obs, self._device)

    def _log_extras_learn(self, averaged: dict[str, float]) -> dict[str, float]:
        return di_engine_extras(averaged, self._optimizer_q, self._optimizer_policy)

    _actor_stat_names: ClassVar[tuple[str, ...]] = ('mu', 'log_sigma')  # what _actor_loss's stats hold

    def _state_dict_learn(self) -> dict[str, Any]:
        target = {'target_model': self._target_model.state_dict()} if self._target_model is not None else {}
        return {'model': self._model.state_dict(), **target,
                # copies: Optimizer.load_state_dict keeps same-device tensors, so a live state would be shared
                'optimizer_q': copy.deepcopy(self._optimizer_q.state_dict()),
                'optimizer_policy': copy.deepcopy(self._optimizer_policy.state_dict()),
                'alpha': self._alpha.state_dict(), 'learn_steps': self.learn_steps,
                'param_resets_done': self.resets.done,
                **self._heads.learn_state(), **self._critic_term.learn_state(),
                'actor_stats': {k: v.detach().clone() for k, v in (self._actor_stats or {}).items()}}

    def param_reset(self, envstep: int) -> str | None:
        """At a reset point of ``learn.param_resets``: the networks, targets, temperature and optimizers as a newly
        built policy's (the model's data statistics kept); what was done, for the log, or None."""
        if not self.resets.due(envstep):
            return None
        fresh = type(self)(self._cfg, enable_field=['learn'])._state_dict_learn()
        self._load_state_dict_learn(self.resets.fresh_state(self._state_dict_learn(), fresh, self._heads.learn_state()))
        return self.resets.made(envstep)

    def _load_state_dict_learn(self, state: dict[str, Any]) -> None:
        self._model.load_state_dict(state['model'])
        if self._target_model is not None:
            self._target_model.load_state_dict(state['target_model'])
        load_optimizer(self._optimizer_q, state['optimizer_q'])
        load_optimizer(self._optimizer_policy, state['optimizer_policy'])
        self._alpha.load_state_dict(state['alpha'])
        self._heads.load_learn_state(state)
        self._critic_term.load_learn_state(state)
        self.learn_steps = int(state.get('learn_steps', 0))
        self.resets.done = int(state.get('param_resets_done', 0))
        stats = state.get('actor_stats')
        self._actor_stats = {k: v.to(self._device, copy=True) for k, v in stats.items()} if stats else None
        self.executor.restart()  # a captured update still points at the replaced optimizer state
