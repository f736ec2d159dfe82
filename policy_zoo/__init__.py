"""Policies: the Policy base class and the registered SAC family (importing this registers them)."""
from __future__ import annotations

from .base_policy import Policy, create_policy, get_policy_cls
from .sac import SACPolicy
from .discrete_sac import DiscreteSACPolicy
from .sqil_sac import SQILSACPolicy
from .tqc import TQCPolicy
from .sac_v1 import SACv1Policy
from .redq import DroQPolicy, EDACPolicy, REDQPolicy, SACNPolicy
from .crossq import CrossQPolicy
from .masac import DiscreteMASACPolicy, MASACPolicy
from .cql import CQLPolicy, DiscreteCQLPolicy
from .hybrid_sac import HybridSACPolicy
from .simba import SimbaPolicy
from .simba_v2 import SimbaV2Policy

__all__ = ['Policy', 'SACPolicy', 'DiscreteSACPolicy', 'SQILSACPolicy', 'TQCPolicy', 'SACv1Policy', 'REDQPolicy',
           'DroQPolicy', 'SACNPolicy', 'EDACPolicy', 'CrossQPolicy', 'MASACPolicy', 'DiscreteMASACPolicy', 'CQLPolicy',
           'DiscreteCQLPolicy', 'HybridSACPolicy', 'SimbaPolicy', 'SimbaV2Policy', 'create_policy', 'get_policy_cls']
