"""SAC without memory on position-only Pendulum (cos θ, sin θ): the last 2 observations stacked into an MLP's input,
the comparison for ``pendulum_position_sac_lstm_config.py`` (the same settings, 256 transitions per update).

Expected: -400 at 35k / 29k / 36.5k env steps (seeds 0-2, budget 50k; -195 / -168 / -197 at 49.5k), against the
LSTM config's 26.5k / 30k / 26.5k; with one frame (``--set env.frame_stack=1 --set policy.model.obs_shape=2``) never
(``ding_lite -m serial -c dizoo_configs/pendulum_position_sac_stack_config.py -s N --max-env-step 50000 --set
env.stop_value=0``).
"""
from easydict import EasyDict

pendulum_position_sac_stack_config = dict(
    exp_name='pendulum_position_sac_stack_seed0',
    env=dict(
        collector_env_num=10,
        evaluator_env_num=5,
        act_scale=True,
        frame_stack=2,                 # observations [2, 2]: this step's and the last (the first repeated at reset)
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(
            obs_shape=4,
            action_shape=1,
            twin_critic=True,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=2,      # learn steps per 10 env steps (1 takes twice the env steps)
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=10),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_position_sac_stack_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum_position'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_position_sac_stack_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
