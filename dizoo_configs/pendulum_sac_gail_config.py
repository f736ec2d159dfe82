"""SAC learning Pendulum from GAIL's reward alone (no env reward): a discriminator between the project's own expert
demonstrations and the policy's transitions (ML-Agents' reward signal ``gail``).

The demonstrations: train the SAC expert, then write 10k of its transitions:
``ding_lite -m serial -c dizoo_configs/pendulum_sac_config.py -s 0``, then ``ding_lite -m collect_demo -c
dizoo_configs/pendulum_sac_config.py -s 0 --load-path pendulum_sac_seed0/ckpt/ckpt_best.pth.tar
--expert-data-path pendulum_expert.pt --collect-count 10000`` (``demo_path`` below reads that file).

Expected: -250 (in the env's reward, which it never sees) at 29k / 26k / 27k env steps (seeds 0-2), against SAC's
32k / 34k / 30k with the env's reward; 22-34 s each on 2 CPU cores beside other runs
(``ding_lite -m serial -c dizoo_configs/pendulum_sac_gail_config.py -s N``, run beside ``pendulum_expert.pt``).
"""
from easydict import EasyDict

pendulum_sac_gail_config = dict(
    exp_name='pendulum_sac_gail_seed0',
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
        reward_signals=dict(
            gail=dict(strength=1.0, gamma=0.99, demo_path='pendulum_expert.pt', use_actions=True),
        ),
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
main_config = EasyDict(pendulum_sac_gail_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_sac_gail_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
