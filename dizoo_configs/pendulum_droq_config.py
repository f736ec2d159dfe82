"""DroQ on Pendulum-v1: two critics with dropout 0.01 and LayerNorm in each hidden block, G=5 critic steps per env
step and per actor step (the paper's MuJoCo setting is G=20; 5 keeps a CPU run short, and Pendulum needs no
more), one env.

Expected: -250 at 2.0k / 2.0k / 2.5k / 2.0k / 2.0k env steps (seeds 0-4, evaluations every 500 env steps, the first
after 1000 of learning), 33-43 s each on 2 CPU cores (``ding_lite -m serial -c
dizoo_configs/pendulum_droq_config.py -s N``).
"""
from easydict import EasyDict

pendulum_droq_config = dict(
    exp_name='pendulum_droq_seed0',
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
            dropout=0.01,
            layer_norm=True,
        ),
        learn=dict(
            update_per_collect=5,    # G learn steps per env step
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            policy_delay=5,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=2500)),  # train iterations (500 env steps)
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_droq_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='droq'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_droq_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
