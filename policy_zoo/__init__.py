"""Policies: the Policy base class and the registered SAC family (importing this registers them)."""
from __future__ import annotations

from .base_policy import Policy, create_policy, get_policy_cls
from .sac import SACPolicy
from .discrete_sac import DiscreteSACPolicy
from .sqil_sac import SQILSACPolicy

__all__ = ['Policy', 'SACPolicy', 'DiscreteSACPolicy', 'SQILSACPolicy', 'create_policy', 'get_policy_cls']
