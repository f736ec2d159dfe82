"""SQIL with discrete SAC on CartPole-v1: the discrete SAC CartPole config; learn batches are half agent data
(reward 0) and half demonstrations (reward 1). SQIL is a data change, so the policy stays ``discrete_sac``.

Expected: not measured; it runs in the tests.
"""
import copy

from dizoo_configs.cartpole_discrete_sac_config import create_config as sac_create_config
from dizoo_configs.cartpole_discrete_sac_config import main_config as sac_main_config

main_config = copy.deepcopy(sac_main_config)
main_config.exp_name = 'cartpole_sqil_discrete_sac_seed0'

create_config = copy.deepcopy(sac_create_config)

if __name__ == '__main__':
    # or: ding_lite -m serial_sqil -c dizoo_configs/cartpole_sqil_discrete_sac_config.py --expert-data-path DEMO_FILE
    import sys
    from entry import serial_pipeline_sqil
    serial_pipeline_sqil((main_config, create_config), seed=0, expert_data_path=sys.argv[1])
