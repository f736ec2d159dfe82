"""SAC-v1 on Pendulum-v1: V_psi and its Polyak target, two Q networks without targets, a fixed temperature
(alpha 0.2), at SAC's Pendulum sizes (hidden 128, batch 128) with one env and one learn step per env step.

Expected: -250 at 5.0k / 4.0k / 4.5k / 4.5k / 4.0k env steps (seeds 0-4, evaluations every 500), about 25 s each
on 2 CPU cores (``ding_lite -m serial -c dizoo_configs/pendulum_sac_v1_config.py -s N``).
"""
from easydict import EasyDict

pendulum_sac_v1_config = dict(
    exp_name='pendulum_sac_v1_seed0',
    env=dict(
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        random_collect_size=1000,  # env steps of uniform random actions before learning
        model=dict(
            obs_shape=3,
            action_shape=1,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
            twin_critic=True,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            alpha=0.2,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=500)),  # train iterations (= env steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_sac_v1_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='sac_v1'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_sac_v1_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
