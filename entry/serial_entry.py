"""The serial off-policy pipeline: collect, store, learn, evaluate, until the stop value or a limit."""
from __future__ import annotations

from typing import Any

from torch import nn

from ding_lite.registry import BUFFER_REGISTRY
from ding_lite.utils import set_pkg_seed
from ding_lite.worker import BaseLearner, InteractionSerialEvaluator, create_serial_collector
from ding_lite.worker.logger import build_logger, build_tb_logger
from policy_zoo import Policy, create_policy
from .utils import build_envs, check_spaces, compile_input, random_collect


def serial_pipeline(input_cfg: str | tuple | list, seed: int = 0, env_setting: list | None = None,
                    model: nn.Module | None = None, max_train_iter: int = int(1e10),
                    max_env_step: int = int(1e10)) -> Policy:
    """Train the config's policy serially; returns the trained policy (DI-engine's signature).

    ``input_cfg`` is a config file path or a ``(main_config, create_config)`` pair; ``env_setting`` an optional
    ``(env_fn, collector_env_cfgs, evaluator_env_cfgs)`` replacing the registered env.
    """
    cfg = compile_input(input_cfg, seed)
    collector_env, evaluator_env = build_envs(cfg, env_setting)
    check_spaces(collector_env, cfg.policy)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, model=model)
    tb_logger = build_tb_logger(cfg.exp_name)
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = create_serial_collector(cfg.policy.collect.collector, env=collector_env, policy=policy.collect_mode,
                                        tb_logger=tb_logger, exp_name=cfg.exp_name)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger,
                                           exp_name=cfg.exp_name)
    buffer = BUFFER_REGISTRY.build(cfg.policy.other.replay_buffer.type, cfg.policy.other.replay_buffer,
                                   tb_logger=tb_logger, exp_name=cfg.exp_name)
    learner.call_hook('before_run')
    if cfg.policy.random_collect_size > 0 and learner.train_iter == 0:
        random_collect(cfg.policy, collector, policy.collect_mode, buffer, collector_env.action_space, cfg.seed)
    with _progress(cfg, collector, evaluator, max_env_step) as bar:
        _train_loop(cfg, learner, collector, evaluator, buffer, max_train_iter, max_env_step, bar)
    learner.call_hook('after_run')
    _summarise(cfg, learner, collector, evaluator)
    for closable in (collector, evaluator, tb_logger):
        closable.close()
    return policy


def _train_loop(cfg: Any, learner: BaseLearner, collector: Any, evaluator: InteractionSerialEvaluator,
                buffer: Any, max_train_iter: int, max_env_step: int, bar: Any) -> None:
    learn = cfg.policy.learn
    while True:
        if evaluator.should_eval(learner.train_iter):
            stop, info = evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
            bar.set_postfix(eval_return=f"{info['return_mean']:.1f}", refresh=False)
            if stop:
                break
        new_data = collector.collect(cfg.policy.collect.n_sample, train_iter=learner.train_iter)
        buffer.push(new_data)
        bar.update(collector.envstep - bar.n)
        for _ in range(learn.update_per_collect):
            if buffer.count() < learn.batch_size:
                break
            learner.train(buffer.sample(learn.batch_size), collector.envstep)
            if learner.priority_info is not None:
                buffer.update(learner.priority_info)
        if collector.envstep >= max_env_step or learner.train_iter >= max_train_iter:
            break


class _NoBar:
    n = 0

    def update(self, n: int) -> None:
        self.n += n

    def set_postfix(self, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> '_NoBar':
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def _progress(cfg: Any, collector: Any, evaluator: Any, max_env_step: int) -> Any:
    """A tqdm bar of env steps (with the last eval return) on a terminal; a silent stand-in otherwise."""
    import sys
    if not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm
    total = max_env_step if max_env_step < int(1e10) else None
    return tqdm(total=total, initial=collector.envstep, unit='step', desc=cfg.exp_name, dynamic_ncols=True)


def _summarise(cfg: Any, learner: BaseLearner, collector: Any, evaluator: InteractionSerialEvaluator) -> None:
    logger = build_logger(cfg.exp_name, 'summary', console=True)
    last = evaluator.last_info.get('return_mean', float('nan'))
    logger.info(f"finished {cfg.exp_name}: {collector.envstep} env steps, {learner.train_iter} train iterations, "
                f"last eval return {last:.2f} (best {evaluator.best_return:.2f}, stop value {evaluator.stop_value})")
    logger.info(f"logs: {cfg.exp_name}/log/ (evaluator.csv, tensorboard: serial/)  checkpoints: {cfg.exp_name}/ckpt/")
