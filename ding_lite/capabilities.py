"""What works with what: the features a config can turn on, the pairs of them that cannot meet, and one check that
reads the declarations of a pipeline and a policy class and refuses an unsupported combination at compile time.

A policy class declares the features its update is written for in ``capabilities`` (on the class itself: a subclass
supports nothing it did not declare); a pipeline declares its own in a ``Pipeline`` (``entry/kit/
capabilities.py``). ``table()`` draws the docs' table of what works with what from the same declarations.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .registry import ENV_REGISTRY
from .utils.default_config import ConfigError


@dataclass(frozen=True)
class Feature:
    """A feature a config turns on: the key a user sets, what it is, and how to tell it is on."""

    key: str
    label: str
    enabled: Callable[[Any], bool]


def _policy(*path: str) -> Callable[[Any], Any]:
    def get(cfg: Any) -> Any:
        node = cfg.policy
        for key in path:
            node = (node or {}).get(key)
        return node
    return get


def _env_flag(key: str) -> Callable[[Any], bool]:
    return lambda cfg: bool((cfg.env.get(key) or {}).get('use_norm'))


def _many_agents(cfg: Any) -> bool:
    env_type = cfg.env.get('type')
    return env_type in ENV_REGISTRY and bool(getattr(ENV_REGISTRY.get(env_type), 'agent_slots', False))


def _has_lessons(cfg: Any) -> bool:
    spec = cfg.env.get('environment_parameters') or {}
    return isinstance(spec, dict) and any(isinstance(v, dict) and 'curriculum' in v for v in spec.values())


FEATURES: dict[str, Feature] = {
    'norm_obs': Feature('env.norm_obs.use_norm', 'observation normalisation', _env_flag('norm_obs')),
    'norm_reward': Feature('env.norm_reward.use_norm', "reward normalisation (or a model's own: SimbaV2's)",
                           lambda cfg: _env_flag('norm_reward')(cfg) or bool(_policy('model', 'reward_norm')(cfg))),
    'reward_clip': Feature('env.reward_clip', 'reward clipping', lambda cfg: cfg.env.get('reward_clip') is not None),
    'reward_signals': Feature('policy.reward_signals', 'reward signals (RND, curiosity, GAIL)',
                              lambda cfg: bool(_policy('reward_signals')(cfg))),
    'gail': Feature('policy.reward_signals.gail', 'GAIL (a discriminator against demonstrations)',
                    lambda cfg: 'gail' in (_policy('reward_signals')(cfg) or {})),
    'reward_model_schedule': Feature('policy.learn.reward_signal_steps_per_update',
                                     'reward models on their own schedule',
                                     lambda cfg: bool(_policy('learn', 'reward_signal_steps_per_update')(cfg))),
    'cloning': Feature('policy.behavioral_cloning', 'behavioural cloning', lambda cfg: bool(
        _policy('behavioral_cloning')(cfg))),
    'her': Feature('policy.other.replay_buffer.her', 'hindsight experience replay',
                   lambda cfg: bool(_policy('other', 'replay_buffer', 'her')(cfg))),
    'recurrent': Feature('policy.model.rnn', 'a recurrent model (memory)', lambda cfg: bool(
        _policy('model', 'rnn')(cfg))),
    'reward_vector': Feature('policy.reward_weights', 'a reward vector', lambda cfg: bool(
        _policy('reward_weights')(cfg))),
    'priority': Feature('policy.priority', 'prioritized replay', lambda cfg: bool(_policy('priority')(cfg))),
    'priority_IS_weight': Feature('policy.priority_IS_weight', 'importance-sampling weights',
                                  lambda cfg: bool(_policy('priority_IS_weight')(cfg))),
    'overlap': Feature('policy.collect.overlap', 'overlapped collection (overlap=True)',
                       lambda cfg: _policy('collect', 'overlap')(cfg) in (True, 'process', 'stream')),
    'cuda_graph': Feature('policy.learn.cuda_graph', 'CUDA graphs', lambda cfg: bool(
        _policy('learn', 'cuda_graph')(cfg))),
    'amp': Feature('policy.learn.amp', "mixed precision (amp='bf16' or 'fp16')",
                   lambda cfg: bool(_policy('learn', 'amp')(cfg))),
    'amp_fp16': Feature('policy.learn.amp', "fp16 with a gradient scaler (amp='fp16')",
                        lambda cfg: _policy('learn', 'amp')(cfg) == 'fp16'),
    'load_before_run': Feature('policy.learn.learner.hook.load_ckpt_before_run', 'a load before the run (whole or '
                               "'actor@PATH')", lambda cfg: bool(_policy('learn', 'learner', 'hook',
                                                                         'load_ckpt_before_run')(cfg))),
    'offline_buffer': Feature('policy.other.offline_buffer.path', 'a file mixed into every batch',
                              lambda cfg: bool(_policy('other', 'offline_buffer', 'path')(cfg))),
    'data_path': Feature('policy.learn.data_path', 'a file as the only data', lambda cfg: bool(
        _policy('learn', 'data_path')(cfg))),
    'environment_parameters': Feature('env.environment_parameters', "environment parameters (constants, samplers)",
                                      lambda cfg: bool(cfg.env.get('environment_parameters'))),
    'curriculum': Feature('env.environment_parameters', 'a curriculum of lessons', _has_lessons),
    'agents': Feature('env.type', "many agents (a multi-agent env such as 'pettingzoo_agents': a slot per agent)",
                      _many_agents),
    'report_collected': Feature('policy.collect.collector.report_collected', "ML-Agents' reports on collected "
                                "transitions", lambda cfg: bool(_policy('collect', 'collector', 'report_collected')(cfg))),
    'param_resets': Feature('policy.learn.param_resets', 'parameter resets at env steps (the primacy bias)',
                            lambda cfg: bool(_policy('learn', 'param_resets')(cfg))),
}

# what a policy's update must be written for; the rest is the pipelines' and the data's
POLICY_FEATURES = ('recurrent', 'reward_signals', 'reward_vector', 'cloning')

# pairs refused whatever the pipeline and policy: why, and what to do instead
CONFLICTS: dict[frozenset[str], str] = {
    frozenset({'reward_vector', 'reward_signals'}): "both give the critics a head per reward; set one of them",
    frozenset({'recurrent', 'reward_signals'}): "the reward models read transitions, not a recurrent model's "
                                                "sequences; leave one of them unset",
    frozenset({'recurrent', 'reward_vector'}): "a recurrent model's sequence update learns one reward; leave one "
                                               "of them unset",
    frozenset({'recurrent', 'cloning'}): "the cloning term reads transitions, not sequences; leave one of them unset",
    frozenset({'recurrent', 'her'}): "hindsight replay relabels single transitions, not a recurrent model's "
                                     "sequences; leave one of them unset",
    frozenset({'recurrent', 'offline_buffer'}): "the file's transitions are mixed in one by one, not as sequences; "
                                                "leave other.offline_buffer.path None",
    frozenset({'recurrent', 'cuda_graph'}): "a recurrent model's sequence update runs eagerly; set cuda_graph=False",
    frozenset({'cloning', 'cuda_graph'}): "the cloning term's batches are drawn outside the captured update; set "
                                          "cuda_graph=False",
    frozenset({'amp_fp16', 'cuda_graph'}): "fp16's gradient scaler reads back to the host every step, which a "
                                           "CUDA graph cannot replay: use amp='bf16' (no scaler) or cuda_graph=False",
    frozenset({'curriculum', 'overlap'}): "an overlapped collector's envs step in a process of their own, whose lessons "
                                          "the evaluator would not see; set policy.collect.overlap=False",
    frozenset({'agents', 'environment_parameters'}): "a multi-agent env takes no environment parameters yet; leave "
                                                     "env.environment_parameters unset",
    frozenset({'gail', 'norm_obs'}): "the discriminator would compare normalised agent observations with raw "
                                     "demonstrations; set env.norm_obs.use_norm=False, or use another signal",
    frozenset({'her', 'reward_clip'}): "relabelled rewards come from the env's compute_reward after the clip; leave "
                                       "env.reward_clip None (goal rewards are bounded already)",
    frozenset({'reward_vector', 'norm_reward'}): "one running std cannot scale a reward vector; set "
                                                 "env.norm_reward.use_norm=False",
    frozenset({'gail', 'offline_buffer'}): "the mixed-in file's rows would count as the policy's for the "
                                           "discriminator; leave other.offline_buffer.path None",
    frozenset({'her', 'priority'}): "hindsight replay relabels goals in the uniform buffer; set policy.priority=False",
    frozenset({'her', 'reward_vector'}): "a relabelled goal's reward is the env's compute_reward, one number; leave "
                                         "policy.reward_weights None",
    frozenset({'report_collected', 'agents'}): "the reports are summed over one env slot's episode, and a "
                                                "multi-agent env's episodes are its team's; leave report_collected "
                                                "False",
    frozenset({'report_collected', 'recurrent'}): "the critics score single transitions, not a recurrent model's "
                                                  "sequences; leave report_collected False",
    frozenset({'report_collected', 'overlap'}): "an overlapped collector acts from a copy of the weights (in a "
                                                "process of its own on a CPU), without the critics that score; set "
                                                "policy.collect.overlap=False",
    frozenset({'agents', 'her'}): "hindsight replay relabels one agent's goals with the env's compute_reward, which "
                                  "a multi-agent env does not offer; leave her None",
    frozenset({'agents', 'reward_vector'}): "a multi-agent env's agents each get one reward; leave "
                                            "policy.reward_weights None",
    frozenset({'priority', 'offline_buffer'}): "the mixed-in file is sampled uniformly and takes no priorities; set "
                                               "policy.priority=False",
}


@dataclass(frozen=True)
class Pipeline:
    """A pipeline's declaration: ``supports`` works as in a plain run; ``one_after_another`` works, its seeds (or
    trials) running one after another, for the reason given; every other feature is refused (``refuses``: why,
    and what to do instead)."""

    name: str
    command: str
    supports: frozenset[str]
    one_after_another: dict[str, str] = field(default_factory=dict)
    refuses: dict[str, str] = field(default_factory=dict)
    learns: bool = True  # False: it only acts with a trained policy (eval, load_policy), and refuses nothing

    def cell(self, feature: str) -> tuple[str, str]:
        """``('yes' | 'one after another' | 'refused', reason)``."""
        if feature in self.supports:
            return 'yes', ''
        if feature in self.one_after_another:
            return 'one after another', self.one_after_another[feature]
        return 'refused', self.refuses.get(feature, f"{self.command} is not written for it")


def policy_capabilities(policy_cls: type) -> frozenset[str]:
    """The features ``policy_cls`` itself declares (not inherited: a subclass declares its own)."""
    return frozenset(vars(policy_cls).get('capabilities', ()))


def enabled(cfg: Any) -> list[str]:
    """The features a compiled config turns on, in ``FEATURES``' order."""
    return [name for name, feature in FEATURES.items() if feature.enabled(cfg)]


def check(cfg: Any, policy_cls: type, pipeline: Pipeline | None = None) -> None:
    """Refuse a combination the declarations do not support: a ``ConfigError`` naming both sides and what to do."""
    if pipeline is not None and not pipeline.learns:
        return
    on = enabled(cfg)
    present = set(on)
    name = f"policy {cfg.policy.type!r} ({policy_cls.__name__})"
    declared = policy_capabilities(policy_cls)
    for feature in (f for f in on if f in POLICY_FEATURES and f not in declared):
        listed = ', '.join(sorted(declared)) or 'none'
        raise ConfigError(f"{FEATURES[feature].key} ({FEATURES[feature].label}) with {name}: its update is not "
                          f"written for it (it declares: {listed}). Use a policy that declares {feature!r} ('sac', "
                          f"'discrete_sac'), or leave {FEATURES[feature].key} unset; a subclass of yours supports "
                          f"it once it declares it in its capabilities")
    for pair, why in CONFLICTS.items():
        if pair <= present:
            first, second = sorted(pair, key=list(FEATURES).index)
            raise ConfigError(f"{FEATURES[first].key} ({FEATURES[first].label}) with {FEATURES[second].key} "
                              f"({FEATURES[second].label}): refused: {why}")
    for feature in on if pipeline is not None else ():
        verdict, why = pipeline.cell(feature)
        if verdict == 'refused':
            raise ConfigError(f"{FEATURES[feature].key} ({FEATURES[feature].label}) with {pipeline.command}: "
                              f"refused: {why}")


def table(pipelines: Iterable[Pipeline], policies: dict[str, type]) -> str:
    """The docs' tables of what works with what, in markdown, from the declarations: features by pipeline, the
    policies' own features, and the pairs refused everywhere."""
    pipelines = list(pipelines)
    notes: dict[str, int] = {}

    def cell(verdict: str, why: str) -> str:
        if not why:
            return verdict
        number = notes.setdefault(why, len(notes) + 1)
        return f"{verdict} [{number}]"
    lines = ['| feature | key | ' + ' | '.join(f"`{p.command}`" for p in pipelines) + ' |',
             '| --- | --- |' + ' --- |' * len(pipelines)]
    for name, feature in FEATURES.items():
        lines.append(f"| {feature.label} | `{feature.key}` | " +
                     ' | '.join(cell(*p.cell(name)) for p in pipelines) + ' |')
    lines += ['', *[f"{n}. {why}" for why, n in notes.items()], '',
              '| policy feature | ' + ' | '.join(f"`{name}`" for name in policies) + ' |',
              '| --- |' + ' --- |' * len(policies)]
    for name in POLICY_FEATURES:
        lines.append(f"| {FEATURES[name].label} (`{FEATURES[name].key}`) | " + ' | '.join(
            'yes' if name in policy_capabilities(cls) else 'refused' for cls in policies.values()) + ' |')
    lines += ['', 'Refused together, whatever the pipeline and policy:', '']
    for pair, why in CONFLICTS.items():
        first, second = sorted(pair, key=list(FEATURES).index)
        lines.append(f"- `{FEATURES[first].key}` with `{FEATURES[second].key}`: {why}")
    return '\n'.join(lines) + '\n'


__all__ = ['Feature', 'FEATURES', 'POLICY_FEATURES', 'CONFLICTS', 'Pipeline', 'policy_capabilities', 'enabled',
           'check', 'table']
