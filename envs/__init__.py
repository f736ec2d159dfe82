"""Environments: BaseEnv, the gymnasium adapter and env managers."""
from __future__ import annotations

from .base_env import BaseEnv, BaseEnvBatchTimestep, BaseEnvTimestep
from .env_manager import BaseEnvManager, create_env_manager, get_vec_env_setting
from .subprocess_env_manager import SubprocessEnvManager
from .shared_memory_env_manager import SharedMemoryEnvManager
from .envpool_env_manager import EnvPoolEnvManager
from .gymnasium_env import GymnasiumEnv
from .di_engine_envs import BipedalWalkerEnv, CartPoleEnv, LunarLanderEnv, MujocoEnv, PendulumEnv
from .multi_reward import PendulumSplitEnv
from .goal import PointGoalEnv
from .hybrid import HybridSpace, PointModes  # (registers PointModes-v0)
from .pomdp import PendulumPositionEnv
from .pettingzoo_env import PettingZooEnv
from .agent_slots import AgentSlots
from .mpe_env import MPESpreadEnv

__all__ = ['BaseEnv', 'BaseEnvTimestep', 'BaseEnvBatchTimestep', 'GymnasiumEnv', 'PendulumEnv', 'PendulumPositionEnv',
           'PendulumSplitEnv', 'PointGoalEnv', 'CartPoleEnv', 'PettingZooEnv', 'AgentSlots', 'MPESpreadEnv',
           'LunarLanderEnv', 'BipedalWalkerEnv', 'MujocoEnv', 'BaseEnvManager', 'SubprocessEnvManager',
           'SharedMemoryEnvManager', 'EnvPoolEnvManager', 'HybridSpace', 'PointModes', 'create_env_manager',
           'get_vec_env_setting']
