"""SQIL-SAC on Pendulum-v1: the SAC Pendulum config with policy ``sqil_sac``; learn batches are half agent
data (reward 0) and half demonstrations (reward 1) from a ``ding_lite -m collect_demo`` file (see docs/imitation.md).

Expected: -250 at 15k / 16k / 21k / 12k / 14k env steps (seeds 0-4) from 10k deterministic demonstrations of the
seed-0 SAC expert (``ding_lite -m serial_sqil -c dizoo_configs/pendulum_sqil_sac_config.py --expert-data-path F``).
"""
import copy

from dizoo_configs.pendulum_sac_config import create_config as sac_create_config
from dizoo_configs.pendulum_sac_config import main_config as sac_main_config

main_config = copy.deepcopy(sac_main_config)
main_config.exp_name = 'pendulum_sqil_sac_seed0'
main_config.policy.learn.monitor_cos = False  # True logs the cosine of the two halves' critic gradients

create_config = copy.deepcopy(sac_create_config)
create_config.policy.type = 'sqil_sac'

if __name__ == '__main__':
    # or: ding_lite -m serial_sqil -c dizoo_configs/pendulum_sqil_sac_config.py --expert-data-path DEMO_FILE
    import sys
    from entry import serial_pipeline_sqil
    serial_pipeline_sqil((main_config, create_config), seed=0, expert_data_path=sys.argv[1])
