"""SAC on Pendulum with its reward split into three dimensions (angle, speed and torque costs; ALF's multi-dimensional
reward): a critic head per dimension, the actor maximising ``reward_weights · Q``. Weights [1, 1, 1] are Pendulum's
own task; a larger torque weight trades swing-up speed for smaller torques (``--set
policy.reward_weights=[1,1,1000]``), and ``policy.set_reward_weights`` changes them mid-run.

Expected: -250 at 28k / 31k / 31k env steps (seeds 0-2; pendulum_sac_config.py's 33k / 34k / 30k measured beside
them) (``ding_lite -m serial -c dizoo_configs/pendulum_split_sac_config.py -s N``); otherwise pendulum_sac_config.py's
settings.
"""
from easydict import EasyDict

pendulum_split_sac_config = dict(
    exp_name='pendulum_split_sac_seed0',
    env=dict(
        collector_env_num=10,
        evaluator_env_num=5,
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,           # of the weighted return, weights · (each dimension's return)
    ),
    policy=dict(
        random_collect_size=1000,
        reward_weights=[1.0, 1.0, 1.0],   # angle, speed, torque
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            discount_factor=0.99,      # or one gamma per dimension: [0.99, 0.99, 0.99]
        ),
        collect=dict(n_sample=10),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_split_sac_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum_split'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_split_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
