"""The steps every serial run takes, one seed or many: build and check its parts, warm up, evaluate, collect and
store a round."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from easydict import EasyDict
from torch import nn

from ding_lite.config import ConfigError
from ding_lite.utils.curriculum import Curriculum
from ding_lite.data import Batch, Draw, GraphSampler, ReplayBuffer, demo_buffer, mixed_sampler
from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils import set_deterministic, set_pkg_seed
from ding_lite.worker import BaseLearner, InteractionSerialEvaluator, create_learner, create_serial_collector
from ding_lite.worker.finite_check import env_name
from ding_lite.worker.logger import build_logger, build_tb_logger
from ding_lite.worker.overlapped_collector import OverlappedCollector
from policy_zoo import Policy, get_policy_cls
from envs.from_gym import vec_env_setting
from envs.from_gym import adapted_env
from envs.goal import goal_layout
from .cpu_threads import overlap_collection
from .env_check import first_step, fit_model_to_env
from .life_cycle import PhaseTimer, RunProgress, closed_on_error, start_tracker
from .run_parts import build_envs, collect_batch, create_run_policy, random_collect, store



def build_serial(cfg: EasyDict, env_setting: list | None = None, model: nn.Module | None = None,
                 save_cfg: bool = True, overlap: str | bool | None = None, stop_rule: Any = None) -> SimpleNamespace:
    """Envs, policy, learner, collector, evaluator and replay buffer of a serial run, checked against each other
    (``fit_model_to_env``, which re-saves ``total_config.py`` with ``save_cfg``, and ``first_step``) and seeded.
    ``overlap``: how it collects while it learns, ``'process'`` or ``'stream'`` (None: ``overlap_collection(cfg)``;
    False: in order)."""
    env_setting = vec_env_setting(cfg.env, env_setting)
    collector_env, evaluator_env = build_envs(cfg, env_setting)
    with closed_on_error([collector_env, evaluator_env]) as closables:
        fit_model_to_env(cfg, collector_env, save=save_cfg)
        overlap = overlap_collection(cfg) if overlap is None else overlap
        run = _build_parts(cfg, collector_env, evaluator_env, model, overlap, stop_rule)
        closables[:] = run.closables
        first_step(cfg, env_setting, run.policy, [run.buffer])
        if getattr(run.buffer, 'binds_goals', False):
            run.closables.append(bind_goals(run.buffer, env_setting))
    return run


def bind_goals(buffer: ReplayBuffer, env_setting: tuple) -> Any:
    """The goal layout and reward of the run's env bound to its hindsight replay buffer; returns the env whose
    ``compute_reward`` it calls (for the run to close)."""
    env_fn, collector_cfgs, _ = env_setting
    env = adapted_env(env_fn, cfg=collector_cfgs[0])
    try:
        buffer.bind_goals(*goal_layout(env, env_name(env)))
    except Exception:
        env.close()
        raise
    return env


def _build_parts(cfg: EasyDict, collector_env: Any, evaluator_env: Any, model: nn.Module | None,
                 overlap: str | bool | None, stop_rule: Any) -> SimpleNamespace:
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    if cfg.policy.deterministic:
        set_deterministic(True)
    policy = create_run_policy(cfg, model=model)
    tracker = start_tracker(cfg)
    tb_logger = build_tb_logger(cfg.exp_name, tracker=tracker)
    kwargs = dict(tb_logger=tb_logger, exp_name=cfg.exp_name)
    learner, buffer = build_learner(cfg, policy, tb_logger)
    on_nonfinite = cfg.policy.learn.learner.on_nonfinite
    collector = create_serial_collector(
        cfg.policy.collect.collector, env=collector_env, policy=policy.collect_mode, on_nonfinite=on_nonfinite,
        norm_reward=hasattr(policy.model, 'reward_norm'), episode_fields=getattr(buffer, 'episode_fields', False),
        scorer=_scorer(cfg, policy) if cfg.policy.collect.collector.get('report_collected') else None, **kwargs)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode,
                                           on_nonfinite=on_nonfinite, stop_rule=stop_rule, **kwargs)
    if overlap == 'process':  # the child takes the collector's settings along
        collector = OverlappedCollector(collector, policy, cfg.seed)
    elif overlap == 'stream':
        policy.act_from_snapshot()
    run = SimpleNamespace(policy=policy, tb_logger=tb_logger, collector_env=collector_env, collector=collector,
                          evaluator=evaluator, learner=learner, buffer=buffer, loop=RunLoop(cfg.seed),
                          closables=[collector, evaluator, tb_logger, *([tracker] if tracker else [])])
    for name, part in (('collector', collector), ('evaluator', evaluator), ('loop', run.loop)):
        learner.attach(name, part)
    return run


def _scorer(cfg: EasyDict, policy: Policy) -> Any:
    """``collector.report_collected``'s per-transition reports (the SAC family's ``score_transitions``), or a
    ``ConfigError`` for a policy without them; what the reports cannot meet is refused at compile time (the capability
    declarations) and by the first step's check (Dict observations)."""
    if not hasattr(policy, 'score_transitions'):
        raise ConfigError(f"policy.collect.collector.report_collected=True scores each collected transition with the "
                          f"critics' score_transitions, which {type(policy).__name__} does not have; leave it False")
    return policy.score_transitions


def build_learner(cfg: EasyDict, policy: Policy, tb_logger: Any) -> tuple[BaseLearner, Any]:
    """The learner over ``policy``'s learn mode and the replay buffer it trains from, attached to its checkpoints."""
    kwargs = dict(tb_logger=tb_logger, exp_name=cfg.exp_name)
    learner = create_learner(cfg.policy.learn.learner, policy=policy.learn_mode, **kwargs)
    buffer = BUFFER_REGISTRY.build(cfg.policy.other.replay_buffer.type, cfg.policy.other.replay_buffer, **kwargs)
    learner.attach('replay_buffer', buffer, buffer=True)
    learner.save_replay_buffer = cfg.policy.other.replay_buffer.save_replay_buffer
    learner.priority_buffer = buffer if hasattr(buffer, 'update') else None
    return learner, buffer


class RunLoop:
    """Where the pipeline's loop stands: learn steps left of the current collect round (a resume point can fall
    inside one), the reward models' steps owed, the run's seed, and how it ended (``'stop_value'``, ``'budget'``;
    None while it runs or after an interrupt)."""

    def __init__(self, seed: int) -> None:
        self.seed, self.updates_left = seed, 0
        self.reward_credit = 0.0  # reward-model steps owed (reward_signal_steps_per_update), a fraction carried over
        self.ended: str | None = None

    def state_dict(self) -> dict[str, int | float | str | None]:
        return {'seed': self.seed, 'updates_left': self.updates_left, 'reward_credit': self.reward_credit,
                'ended': self.ended}

    def load_state_dict(self, state: dict[str, int | float | str | None]) -> None:
        self.updates_left = state['updates_left']
        self.reward_credit = state.get('reward_credit', 0.0)
        self.ended = state.get('ended')


NO_LIMIT = int(1e10)  # the pipelines' default budgets: none given


def already_finished(cfg: EasyDict, run: SimpleNamespace, envstep: int, max_env_step: int,
                     max_train_iter: int) -> bool:
    """True (said in the run's summary) where a resumed run had finished and stays so: it reached its stop value,
    or the budget it ended at was not raised past it (or this budget is spent already)."""
    learner, ended = run.learner, run.loop.ended
    if learner.resumed_from is None:
        return False
    if ended == 'stop_value':
        why = f"it reached its stop value {run.evaluator.stop_value}"
    elif ended == 'budget' and not (NO_LIMIT > max_env_step > envstep or
                                    NO_LIMIT > max_train_iter > learner.train_iter):
        why = "it used its budget; raise --max-env-step or --max-train-iter past where it ended to continue it"
    elif envstep >= max_env_step or learner.train_iter >= max_train_iter:
        why = "this budget is spent; raise --max-env-step or --max-train-iter to continue it"
    else:
        return False
    build_logger(cfg.exp_name, 'summary', console=True).info(
        f"{cfg.exp_name} had already finished at {envstep} env steps, {learner.train_iter} train iterations: {why}")
    return True


def load_demo_buffer(cfg: EasyDict, buffer: ReplayBuffer, env: Any, path: str,
                     like: bool = False) -> ReplayBuffer:
    """The demonstrations of ``path`` on ``buffer``'s device, checked against this run's ``env`` and model; in a
    plain buffer, or ``like`` the run's own (its type and settings: prioritized where it is)."""
    discrete = get_policy_cls(cfg.policy).action_space_type == 'discrete'
    buffer_cls, buffer_cfg = (type(buffer), buffer_settings(cfg)) if like else (ReplayBuffer, None)
    return demo_buffer(path, buffer_cls, cfg.policy, getattr(env, 'env_id', None), discrete,
                       device=str(buffer.device), buffer_cfg=buffer_cfg)


def buffer_settings(cfg: EasyDict) -> dict[str, Any]:
    """The run's replay buffer settings, less what sizes and places it."""
    return {k: v for k, v in cfg.policy.other.replay_buffer.items() if k not in ('replay_buffer_size', 'device',
                                                                                  'type', 'her')}


def learn_sampler(cfg: EasyDict, buffer: ReplayBuffer, env: Any, policy: Policy | None = None
                  ) -> Callable[[int], Batch | Draw]:
    """``buffer.sample``, or with ``policy.other.offline_buffer.path`` set, a sampler mixing that file's
    transitions (real rewards) into every batch at ``ratio``; where ``policy``'s captured update can draw from
    ``buffer`` itself (``learn.graph_sample``), a ``GraphSampler``."""
    offline = cfg.policy.other.offline_buffer
    if not offline.path:
        return GraphSampler(buffer) if policy is not None and policy.draws_in_graph(buffer) else buffer.sample
    if not 0 < offline.ratio < 1:
        raise ConfigError(f"policy.other.offline_buffer.ratio must be in (0, 1), got {offline.ratio}")
    return mixed_sampler([(buffer, 1 - offline.ratio), (load_demo_buffer(cfg, buffer, env, offline.path),
                                                         offline.ratio)])


def check_budget(cfg: EasyDict, max_env_step: int) -> None:
    """``ConfigError`` where a lesson measured on progress (a fraction of the run's budget) has no budget: checked
    while the run starts, so that a refused new run leaves no folder."""
    needs = Curriculum(cfg.env.get('environment_parameters')).needs_budget()
    if needs and max_env_step >= NO_LIMIT:
        raise ConfigError(f"env.environment_parameters {needs}: a lesson measured on progress is a fraction of the "
                          f"run's budget; give one (--max-env-step N, or max_env_step=N)")


def begin_run(cfg: EasyDict, run: SimpleNamespace, max_train_iter: int, max_env_step: int = NO_LIMIT) -> int:
    """The learner's before-run hooks, the env-step count carried over by a resumed run, the run's phase timer,
    the curriculum's budget (``measure='progress'``); returns the iteration cap (``learner.train_iterations``,
    DI-engine's, caps it too)."""
    parameters = getattr(getattr(run, 'collector_env', None), 'parameters', None)
    if parameters is not None:
        check_budget(cfg, max_env_step)
        parameters.curriculum.budget = max_env_step
    run.learner.call_hook('before_run')
    run.collector.envstep = max(run.collector.envstep, run.learner.last_envstep)
    horizon = getattr(run.policy.learn_mode, 'set_horizon', None)  # a schedule over the run's learn steps
    if horizon is not None:
        learn = cfg.policy.learn
        budget = max(max_env_step - cfg.policy.random_collect_size, 0) * learn.update_per_collect // \
            max(cfg.policy.collect.n_sample, 1)
        horizon(min(max_train_iter, budget) if min(max_train_iter, max_env_step) < NO_LIMIT else None)
    run.timer = PhaseTimer(run.collector.envstep, run.learner.train_iter)
    return min(max_train_iter, cfg.policy.learn.learner.train_iterations)


def needs_warm_up(cfg: EasyDict, run: SimpleNamespace) -> bool:
    """Whether ``run`` starts with ``random_collect_size`` random env steps: a new run that asks for them."""
    learner = run.learner
    return cfg.policy.random_collect_size > 0 and learner.train_iter == 0 and learner.last_resume_point is None


def warm_up(cfg: EasyDict, run: SimpleNamespace) -> None:
    """``random_collect_size`` env steps of uniformly random actions into the buffer, before a new run learns."""
    if needs_warm_up(cfg, run):
        with run.timer.phase('collect'):
            store(cfg, run, random_collect(run.collector, run.policy.collect_mode, cfg.policy.random_collect_size,
                                           run.collector_env, cfg.seed))


def collect_round(cfg: EasyDict, run: SimpleNamespace, after_collect: Callable[[], None] | None,
                  progress: RunProgress | None) -> bool:
    """Evaluate if due, then collect a round into the buffer and set the round's learn steps; True where the run
    reached its stop value (nothing collected then). ``progress``: the bar to show it on, if any."""
    learner, collector, timer = run.learner, run.collector, run.timer
    if run.evaluator.should_eval(learner.train_iter) and evaluate(run, progress):
        return True
    with timer.phase('collect'):
        batch = collect_batch(collector, cfg.policy.collect.n_sample, learner.train_iter)
    store_round(cfg, run, batch, after_collect, progress)
    run.policy.refresh_snapshot()  # (acting from one) the weights before this round's learn steps
    if isinstance(collector, OverlappedCollector):  # the next round, collected while this one's updates run
        collector.prefetch(cfg.policy.collect.n_sample, learner.train_iter)
    return False


def final_evaluation(run: SimpleNamespace, progress: RunProgress | None) -> str:
    """How a run that used its budget ends: its last weights evaluated (unless they just were), ``'stop_value'``
    where they reach it, else ``'budget'``."""
    if run.evaluator.should_eval(run.learner.train_iter, at_end=True) and evaluate(run, progress):
        return 'stop_value'
    return 'budget'


def evaluate(run: SimpleNamespace, progress: RunProgress | None) -> bool:
    """An evaluation of the run's policy now (shown on ``progress``); whether it reached the stop value."""
    learner = run.learner
    with run.timer.phase('eval'):
        stop, info = run.evaluator.eval(learner.save_checkpoint, learner.train_iter, run.collector.envstep)
        learner.evaluated()
    show_eval(progress, info)
    return stop


def show_eval(progress: RunProgress | None, info: dict[str, float]) -> None:
    if progress is not None:
        progress.set_postfix(eval_return=f"{info['return_mean']:.1f}")


def store_round(cfg: EasyDict, run: SimpleNamespace, batch: dict[str, Any], after_collect: Callable[[], None] | None,
                progress: RunProgress | None, pushed: bool = False) -> None:
    """A collected round's ``batch`` into the run (``store``, then ``after_collect``); set the round's learn
    steps. ``pushed``: the batch is in the replay buffer already."""
    with run.timer.phase('collect'):
        store(cfg, run, batch, pushed)
        if after_collect is not None:
            after_collect()
    if progress is not None:
        progress.update(run.collector.envstep - progress.n)
    run.loop.updates_left = cfg.policy.learn.update_per_collect


def train_reward_models(cfg: EasyDict, run: SimpleNamespace, sample: Callable[[int], Batch | None]) -> None:
    """ML-Agents' ``reward_signal_steps_per_update``: the reward models' steps this learn step owes, each on a
    mini-batch of its own (the env steps of a learn step over that rate, carried over in the loop's credit)."""
    rate = cfg.policy.learn.get('reward_signal_steps_per_update')
    if not rate:
        return
    run.loop.reward_credit += cfg.policy.collect.n_sample / cfg.policy.learn.update_per_collect / rate
    while run.loop.reward_credit >= 1:
        run.loop.reward_credit -= 1
        run.policy.learn_mode.train_reward_models(sample(cfg.policy.learn.batch_size))
