"""SAC on Pendulum with ML-Agents' behavioural cloning beside the env's reward: the actor's loss gains the squared
error of its action against the project's own expert demonstrations, the weight falling to 0 over 5000 learn steps
(50k env steps here).

The demonstrations as for ``pendulum_sac_gail_config.py`` (``pendulum_expert.pt``, 10k transitions of the seed-0 SAC
expert).

Expected: -250 at 4k / 5k / 5k env steps (seeds 0-2), against SAC's 32k / 34k / 30k without the demonstrations,
2-6 s each on 2 CPU cores (``ding_lite -m serial -c dizoo_configs/pendulum_sac_bc_config.py -s N``, run beside
``pendulum_expert.pt``).
"""
from easydict import EasyDict

pendulum_sac_bc_config = dict(
    exp_name='pendulum_sac_bc_seed0',
    env=dict(
        collector_env_num=10,
        evaluator_env_num=5,
        act_scale=True,            # actions in [-1, 1] are scaled to the torque bounds
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        priority=False,
        random_collect_size=1000,  # env steps of uniform random actions before learning
        # the term adds to the actor's loss, which is in Q's units (hundreds on Pendulum): 1 barely moves it, 30 halves
        # the env steps to -250, 300 takes them from 32k to 4k (seed 0)
        behavioral_cloning=dict(demo_path='pendulum_expert.pt', strength=300.0, steps=5000),
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            ignore_done=False,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
        ),
        collect=dict(n_sample=10),
        eval=dict(evaluator=dict(eval_freq=100)),  # train iterations
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_sac_bc_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_sac_bc_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
