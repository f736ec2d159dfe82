"""SAC with an RND reward signal on MountainCarContinuous-v0 (+100 at the flag, -0.1 a^2 a step, 999-step
episodes): the env's reward alone rarely reaches the flag, RND's novelty bonus drives the car up the hill.

The comparison without RND: ``--set policy.reward_signals=None`` (the same settings, the env's reward alone).

Expected: the flag (an evaluation of 90) at 9k / 8k / 8k env steps (seeds 0-2, 67-86 s each on 2 CPU cores beside other runs); the
env's reward alone never within 20k (best evaluations about 0: the car learns to stand still)
(``ding_lite -m serial -c dizoo_configs/mountaincar_continuous_sac_rnd_config.py -s N --max-env-step 20000``, the
comparison with ``--set policy.reward_signals=None``).
"""
from easydict import EasyDict

mountaincar_continuous_sac_rnd_config = dict(
    exp_name='mountaincar_continuous_sac_rnd_seed0',
    env=dict(
        env_id='MountainCarContinuous-v0',
        collector_env_num=1,
        evaluator_env_num=2,
        act_scale=True,
        n_evaluator_episode=2,
        stop_value=90,
    ),
    policy=dict(
        random_collect_size=1000,
        reward_signals=dict(
            extrinsic=dict(strength=1.0, gamma=0.99),
            rnd=dict(strength=0.1, gamma=0.99, learning_rate=1e-4, encoding_size=64),
        ),
        model=dict(
            obs_shape=2,
            action_shape=1,
            twin_critic=True,
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=1000)),  # train iterations (= env steps here)
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(mountaincar_continuous_sac_rnd_config)

create_config = EasyDict(dict(
    env=dict(type='gymnasium'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/mountaincar_continuous_sac_rnd_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
