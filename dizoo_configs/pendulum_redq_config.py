"""REDQ on Pendulum-v1: 10 critics, the min of a random 2 in each target, G=5 critic steps per env step and per
actor step (the papers' MuJoCo setting is G=20; 5 keeps a CPU run short, and Pendulum needs no more), one env.

Expected: -250 at 2.0k / 2.0k / 2.0k / 2.0k / 2.0k env steps (seeds 0-4, evaluations every 500 env steps, the first
after 1000 of learning), 30-34 s each on 2 CPU cores (``ding_lite -m serial -c
dizoo_configs/pendulum_redq_config.py -s N``).
"""
from easydict import EasyDict

pendulum_redq_config = dict(
    exp_name='pendulum_redq_seed0',
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
            n_critics=10,
        ),
        learn=dict(
            update_per_collect=5,    # G learn steps per env step
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            subset_size=2,
            policy_delay=5,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=2500)),  # train iterations (500 env steps)
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_redq_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='redq'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_redq_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
