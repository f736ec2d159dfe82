"""Recurrent SAC on position-only Pendulum (cos θ, sin θ; the velocity is masked): LSTM encoders in front of the
actor and, separately, of the critics, trained on sequences of 8 steps after a 4-step burn-in from stored states.

``batch_size`` counts sequences (DI-engine's R2D2 convention): 32 x 8 = 256 loss steps per update. The comparison
without memory is ``pendulum_position_sac_stack_config.py`` (the last 2 observations stacked, an MLP).

Expected: -400 within 50k env steps on every one of seeds 0-4, on two float paths of one 2-core AMD EPYC: at
26.5k / 30k / 26.5k / 19.5k / 34k with its AVX-512 kernels and 28k / 28k / 32.5k / 18.5k / 29.5k with AVX2's
(``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2``, what an AVX2-only CPU runs); best
evaluations -151 to -184 and -152 to -172. A step count is one float path's: the same seed differs by up to 6k
between the two, so judge a machine by the range, and give a run the whole 50k (the earliest seed is at 18.5k, the
latest at 34k). About 300 s a seed at one torch thread beside another run. The frame-stack MLP 35k / 29k / 36.5k
(-195 / -168 / -197 at 49.5k) and an MLP on one observation never (best -974 / -1179 / -1136) (``ding_lite -m serial
-c dizoo_configs/pendulum_position_sac_lstm_config.py -s N --max-env-step 50000 --set env.stop_value=0``).
"""
from easydict import EasyDict

pendulum_position_sac_lstm_config = dict(
    exp_name='pendulum_position_sac_lstm_seed0',
    env=dict(
        collector_env_num=10,
        evaluator_env_num=5,
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        random_collect_size=1000,
        burnin_step=4,                 # steps before each sequence that only advance the stored state
        model=dict(
            obs_shape=2,
            action_shape=1,
            twin_critic=True,
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
            rnn=dict(type='lstm', hidden_size=64, prev_action=True),
        ),
        learn=dict(
            update_per_collect=2,      # learn steps per 10 env steps (1 takes twice the env steps)
            batch_size=32,             # sequences
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
        ),
        collect=dict(n_sample=10, unroll_len=8),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_position_sac_lstm_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum_position'),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_position_sac_lstm_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
