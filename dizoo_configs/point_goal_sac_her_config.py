"""SAC with hindsight experience replay on PointGoal-v0 (a point in the plane moved onto a goal; reward 0 within 0.05
of it, else -1; 50 steps): the sparse reward rarely fires by chance, so plain SAC learns little where relabelled goals
(``policy.other.replay_buffer.her``, SB3's HerReplayBuffer) teach the task. ``--set
policy.other.replay_buffer.her=None`` runs plain SAC on the same settings.

Expected: -20 (success rate 0.95-1.0) at 10.5k / 8.5k / 10.5k env steps (seeds 0-2; plain SAC's success rate at
most 0.15 in 20k) (``ding_lite -m serial -c dizoo_configs/point_goal_sac_her_config.py -s N``).
"""
from easydict import EasyDict

point_goal_sac_her_config = dict(
    exp_name='point_goal_sac_her_seed0',
    env=dict(
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=20,
        stop_value=-20,            # the goal reached in under 20 steps on average (a trained policy: -19)
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(
            obs_shape=6,           # the Dict flattened: achieved_goal, desired_goal, observation
            action_shape=2,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            batch_size=256,
            update_per_collect=4,  # one learn step per env step
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            discount_factor=0.95,  # SB3's for HER on goal tasks
        ),
        collect=dict(n_sample=4),
        eval=dict(evaluator=dict(eval_freq=500)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,
            her=dict(n_sampled_goal=4, goal_selection_strategy='future'),
        )),
    ),
)
main_config = EasyDict(point_goal_sac_her_config)

create_config = EasyDict(dict(
    env=dict(type='point_goal'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/point_goal_sac_her_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
