"""Evaluate a trained policy from a checkpoint."""
from __future__ import annotations


from torch import nn

from ding_lite.utils import set_pkg_seed
from ding_lite.worker import InteractionSerialEvaluator, load_checkpoint
from policy_zoo import create_policy
from .utils import build_envs, check_spaces, compile_input


def eval(input_cfg: str | tuple | list, seed: int = 0, env_setting: list | None = None,  # noqa: A001 (DI-engine name)
         model: nn.Module | None = None, state_dict: dict | None = None, load_path: str | None = None) -> float:
    """Run the config's evaluation episodes with weights from ``state_dict`` or the checkpoint ``load_path``.

    Returns the mean episode return (also logged and appended to ``evaluator.csv``).
    """
    cfg = compile_input(input_cfg, seed, save_cfg=False)
    _, evaluator_env = build_envs(cfg, env_setting, collect=False)
    check_spaces(evaluator_env, cfg.policy)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, model=model, enable_field=['eval'])
    if state_dict is None and load_path is not None:
        state_dict = load_checkpoint(load_path)
    if state_dict is not None:
        try:
            policy.eval_mode.load_state_dict(state_dict)
        except (KeyError, RuntimeError) as error:
            raise ValueError(f"checkpoint {load_path or 'state_dict'} does not fit policy {cfg.policy.type!r} "
                             f"with model {dict(cfg.policy.model)}: {error}") from error
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode,
                                           exp_name=cfg.exp_name, instance_name='eval')
    _, info = evaluator.eval()
    evaluator.close()
    print(f"eval over {evaluator.n_episode} episodes: return mean {info['return_mean']:.2f} "
          f"std {info['return_std']:.2f} (min {info['return_min']:.2f}, max {info['return_max']:.2f})")
    return info['return_mean']


