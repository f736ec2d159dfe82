"""SimbaV2 (arXiv:2502.15280) on Pendulum-v1 with the paper's learning values (Adam at 1e-4 falling to 5e-5 over
the run, two updates per env step, temperature 0.01, target entropy -|A|/2, 101 bins on [-5, 5], rewards over the
return's running std), its widths cut for a CPU: an actor of one block of 64 and critics of one block of 128 (the
paper's 128 / 512 with 1 / 2 blocks).

Expected: -250 at 3.0k / 3.0k / 3.0k env steps (seeds 0-2, budgets of 10k / 10k / 5k env steps, over which the rates
fall; best evaluations -142 / -226 (by 3k) / -143), about 17 env steps/s on one of 2 AMD EPYC cores beside another
run (``ding_lite -m serial -c dizoo_configs/pendulum_simba_v2_config.py -s N --max-env-step 5000 --set
env.stop_value=0``).
"""
from easydict import EasyDict

pendulum_simba_v2_config = dict(
    exp_name='pendulum_simba_v2_seed0',
    env=dict(
        collector_env_num=10,
        evaluator_env_num=5,
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        random_collect_size=1000,
        model=dict(
            actor_num_blocks=1,
            actor_hidden_dim=64,
            critic_num_blocks=1,
            critic_hidden_dim=128,
        ),
        learn=dict(
            update_per_collect=20,           # two updates per env step (10 transitions a round)
            clipped_double_q=False,          # Pendulum never terminates: the critics' mean (the paper's rule)
        ),
        collect=dict(n_sample=10),
        eval=dict(evaluator=dict(eval_freq=1000)),  # train iterations: every 500 env steps
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
main_config = EasyDict(pendulum_simba_v2_config)

create_config = EasyDict(dict(
    env=dict(type='pendulum'),
    env_manager=dict(type='base'),
    policy=dict(type='simba_v2'),
))

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/pendulum_simba_v2_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
