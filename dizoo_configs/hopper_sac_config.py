"""SAC on Hopper-v5 (the ``mujoco`` extra, or ``envpool``): the HalfCheetah config's DI-engine MuJoCo SAC
hyperparameters (one env, one learn step per env step, hidden 256) with Hopper's spaces.

Expected: best evaluation 2849 (at 90k env steps) at a budget of 100k env steps, seed 0 only (what 2 CPU cores allow:
10 minutes at one learn step per env step; MuJoCo SAC is usually quoted at 1-3M steps, so this is a check that
it learns, not a final score) (``python -m tests.benchmark.bench_zoo hopper_sac_config --env-steps 100000``, or
``ding_lite -m serial -c dizoo_configs/hopper_sac_config.py -s N``).
"""
import copy

from dizoo_configs.halfcheetah_sac_config import create_config as halfcheetah_create_config
from dizoo_configs.halfcheetah_sac_config import main_config as halfcheetah_main_config

main_config = copy.deepcopy(halfcheetah_main_config)
main_config.exp_name = 'hopper_sac_seed0'
main_config.env.update(env_id='Hopper-v5', stop_value=6000)
main_config.policy.model.update(obs_shape=11, action_shape=3)

create_config = copy.deepcopy(halfcheetah_create_config)

if __name__ == '__main__':
    # or: ding_lite -m serial -c dizoo_configs/hopper_sac_config.py -s 0
    from entry import serial_pipeline
    serial_pipeline((main_config, create_config), seed=0)
