"""Hybrid SAC on ``PointModes-v0`` (the project's own hybrid task, ``envs/hybrid.py``): a point reaches a goal by
picking a mode (walk, or a costly jump) and a push each step; its action space is ``Tuple(Discrete(2), Box(2))``.

``policy.type='sac'`` runs as ``'hybrid_sac'`` on it (a categorical choice and a tanh-Gaussian push, a temperature
each, critics giving a Q per choice): nothing in this config is for hybrid actions. ``--set env.env_kwargs.relaxed=True``
gives plain SAC the same task with the mode as a third Box dimension (a jump where it is positive).

Expected: -5.2 / -7.5 / -4.9 at 3000 env steps and -2.9 / -2.2 / -2.0 at 8000 (seeds 0-2; random pushes: -46 to
-78), where plain SAC on the relaxed task has -12.3 / -11.5 / -9.9 and -3.0 / -2.4 / -2.7 (2-core Intel Xeon;
``ding_lite -m serial -c dizoo_configs/point_modes_hybrid_sac_config.py -s N --max-env-step 8000``; BENCHMARKS.md,
"Hybrid actions").
"""
from easydict import EasyDict

point_modes_hybrid_sac_config = dict(
    exp_name='point_modes_hybrid_sac_seed0',
    env=dict(
        env_id='PointModes-v0',
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=8,
        stop_value=-5,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(actor_head_hidden_size=64, critic_head_hidden_size=64),
        learn=dict(batch_size=128, learning_rate_q=1e-3, learning_rate_policy=1e-3),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=250)),
    ),
)
main_config = EasyDict(point_modes_hybrid_sac_config)

create_config = EasyDict(dict(
    env=dict(type='gymnasium'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/point_modes_hybrid_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
