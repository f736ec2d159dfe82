"""SAC on CarRacing-v3 from pixels, from the config alone: each 96x96 RGB frame turned grey by gymnasium's
GrayscaleObservation, the last 4 frames stacked (``frame_stack``), so the conv encoder sees ``[4, 96, 96]`` uint8
(an RGB env without the wrapper would be transposed from HWC to ``[12, 96, 96]``).

Memory: a transition keeps two observations, 2 x 36 KiB; the 50,000 below take 3.5 GiB, allocated at the first
push and checked against the memory available before anything is collected.

An example, not a measured benchmark: ``ding_lite -m serial -c docs/examples/carracing_sac_config.py``.
"""
main_config = dict(
    exp_name='carracing_sac_seed0',
    env=dict(
        env_id='CarRacing-v3',
        wrappers=['GrayscaleObservation'],
        frame_stack=4,
        collector_env_num=4,
        evaluator_env_num=2,
        n_evaluator_episode=2,
        stop_value=800,
    ),
    policy=dict(
        random_collect_size=5000,
        model=dict(encoder_hidden_size_list=[32, 64, 64, 256], share_encoder=True,  # DI-engine's conv layers
                   actor_head_hidden_size=256, critic_head_hidden_size=256),
        learn=dict(batch_size=128, update_per_collect=4),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=2000)),
        other=dict(replay_buffer=dict(replay_buffer_size=50000)),
    ),
)
create_config = dict(env=dict(type='gymnasium'), env_manager=dict(type='subprocess'), policy=dict(type='sac'))
