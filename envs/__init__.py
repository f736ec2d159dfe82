"""Environments: BaseEnv, the gymnasium adapter and env managers."""
