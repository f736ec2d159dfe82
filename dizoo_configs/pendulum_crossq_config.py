"""CrossQ on Pendulum-v1: BatchRenorm in actor and critics, no target network, one update per env step, one env.
Pendulum's runs end long before BatchRenorm's 100k-batch warm-up, so they learn in its plain batch-norm mode.

Expected: -250 at 4.0k / 2.5k / 3.0k / 3.5k / 3.5k env steps (seeds 0-4, evaluations every 500 env steps), 9-24 s
each on 2 CPU cores (``ding_lite -m serial -c dizoo_configs/pendulum_crossq_config.py -s N``). SAC with the same
settings (``--set create.policy.type=sac``, its target network and learning rates 1e-3): 4.0k / 4.0k / 4.5k / 5.0k /
4.5k.
"""
from easydict import EasyDict

pendulum_crossq_config = dict(
    exp_name='pendulum_crossq_seed0',
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
            critic_head_hidden_size=256,
        ),
        learn=dict(
            update_per_collect=1,    # one learn step per env step (CrossQ's UTD of 1)
            batch_size=128,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=500)),  # train iterations (500 env steps)
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_crossq_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='crossq'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_crossq_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
