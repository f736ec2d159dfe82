"""SAC on a Dict observation, from the config alone: Pendulum-v1 inside gymnasium's TimeAwareObservation, which
makes each observation ``{'obs': [cos, sin, velocity], 'time': [t]}``.

ding_lite flattens the Dict to a float32 vector of 4 (one log line says so), reads ``obs_shape``/``action_shape``
from the env (``total_config.py`` records them), and normalises observations by running statistics of the
collected data (``norm_obs``; the time step runs to 200, the angles stay in [-1, 1]).

An example, not a measured benchmark: ``ding_lite -m serial -c docs/examples/pendulum_dict_obs_sac_config.py``.
"""
main_config = dict(
    exp_name='pendulum_dict_obs_sac_seed0',
    env=dict(
        env_id='Pendulum-v1',
        wrappers=[dict(type='TimeAwareObservation', flatten=False)],  # gymnasium's, by its short name
        norm_obs=dict(use_norm=True, clip=10.0),
        collector_env_num=10,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(actor_head_hidden_size=128, critic_head_hidden_size=128),  # shapes: read from the env
        learn=dict(batch_size=128, learning_rate_q=1e-3, learning_rate_policy=1e-3),
        collect=dict(n_sample=10),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
create_config = dict(env=dict(type='gymnasium'), env_manager=dict(type='base'), policy=dict(type='sac'))
