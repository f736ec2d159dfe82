"""SAC on BipedalWalker-v3 (the ``box2d`` extra), with DI-engine's BipedalWalker SAC hyperparameters.

Expected: 300 reached at 70.7k / 96.0k / 55.5k env steps (seeds 0-2; budget 200k env steps, best
evaluations 311 / 307 / 310), 163-194 s for seeds 0 and 2 on 2 CPU cores
(``python -m tests.benchmark.bench_zoo bipedalwalker_sac_config --seeds 0 1 2 --env-steps 200000``, or
``ding_lite -m serial -c dizoo_configs/bipedalwalker_sac_config.py -s N``).
"""
from easydict import EasyDict

bipedalwalker_sac_config = dict(
    exp_name='bipedalwalker_sac_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=300,
        rew_clip=True,                 # the -100 fall penalty is learned as -10 (DI-engine's)
    ),
    policy=dict(
        random_collect_size=10000,
        model=dict(obs_shape=24, action_shape=4, twin_critic=True, actor_head_hidden_size=128,
                   critic_head_hidden_size=128),
        learn=dict(
            update_per_collect=64,     # one learn step per env step
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=64),
        eval=dict(evaluator=dict(eval_freq=5000)),  # train iterations (= env steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=300000)),
    ),
)
main_config = EasyDict(bipedalwalker_sac_config)

create_config = EasyDict(dict(
    env=dict(type='bipedalwalker'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/bipedalwalker_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
