"""Discrete SAC on MiniGrid-Empty-5x5-v0 (the ``minigrid`` extra): the agent's 7x7 view to the green goal.

MiniGrid's image observation is symbolic (an object, colour and state index per cell, 0-10), not pixels: as uint8
the conv encoder would scale it by 1/255 to almost nothing, so ``DtypeObservation`` makes it float32 and it is
flattened (147 numbers) for the MLP; ``ImgObsWrapper`` drops the ``mission`` text. The reward is sparse (one at
the goal, less the time taken), which the auto-tuned temperature drowns: its entropy bonus outweighs a rare success
and the policy stays uniform (the issue's 20k env steps of nothing), so ``alpha`` is fixed at 0.02.

Expected: 0.9 (stop value; 0.955 is the shortest path) at 3.6k / 1.5k / 3.0k / 3.0k / 2.0k env steps (seeds 0-4),
at most 4 s each on 2 CPU cores (``ding_lite -m serial -c dizoo_configs/minigrid_empty_discrete_sac_config.py -s N``).
The same with the auto-tuned temperature (target entropy ratio 0.3) or the uint8 image through a conv encoder:
0 after 20k env steps.
"""
from easydict import EasyDict

minigrid_empty_discrete_sac_config = dict(
    exp_name='minigrid_empty_discrete_sac_seed0',
    env=dict(
        env_id='MiniGrid-Empty-5x5-v0',
        wrappers=['minigrid.wrappers.ImgObsWrapper', dict(type='DtypeObservation', dtype='float32')],
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=8,
        stop_value=0.9,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(actor_head_hidden_size=64, critic_head_hidden_size=64),  # shapes read from the env
        learn=dict(
            update_per_collect=8,
            batch_size=64,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            discount_factor=0.95,
            auto_alpha=False,
            alpha=0.02,
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=256)),  # train iterations
        other=dict(
            eps=dict(type='exp', start=0.0, end=0.0, decay=1),  # the policy's own sampling explores
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
)
main_config = EasyDict(minigrid_empty_discrete_sac_config)

create_config = EasyDict(dict(
    env=dict(type='gymnasium', import_names=['minigrid']),
    env_manager=dict(type='base'),
    policy=dict(type='discrete_sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/minigrid_empty_discrete_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0, max_env_step=20_000)
