"""Observation spaces adapted for the SAC family's models, and gymnasium wrappers named in a config.

One place for both: ``GymnasiumEnv`` applies them inside its gymnasium env, and ``from_gym.adapted_env`` wraps any
other ``BaseEnv`` the same way, so every env manager and Ray actor sees the same spaces.
"""
from __future__ import annotations

import importlib
import logging
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from ding_lite.utils.default_config import ConfigError
from .base_env import BaseEnv, BaseEnvTimestep

logger = logging.getLogger(__name__)
_logged: set[str] = set()


def is_image(space: gym.Space) -> bool:
    if not (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8):
        return False
    return len(space.shape) in (3, 4) or (len(space.shape) == 2 and min(space.shape) > 4)  # 2-D: a grey frame


def _float_vector(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 1 and space.dtype == np.float32


def _channels(size: int) -> bool:
    return 1 <= size <= 4


_SUPPORTED = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary,
              gym.spaces.Dict, gym.spaces.Tuple)
_WHY = {'Text': 'text, which would be trained on as character codes',
        'MissionSpace': "text (MiniGrid's mission), which would be trained on as character codes",
        'Graph': 'a graph of varying size, which needs a graph network the SAC family does not have',
        'Sequence': 'a sequence of varying length, which no fixed-size model takes'}


def _unsupported(space: gym.Space, path: str = '') -> tuple[str, gym.Space] | None:
    """``(where, sub-space)`` of the first part of ``space`` the models cannot take (text, graphs, sequences)."""
    if isinstance(space, gym.spaces.Dict):
        parts = [(f"{path}[{key!r}]", sub) for key, sub in space.spaces.items()]
    elif isinstance(space, gym.spaces.Tuple):
        parts = [(f"{path}[{i}]", sub) for i, sub in enumerate(space.spaces)]
    else:
        return None if isinstance(space, _SUPPORTED) else (path, space)
    return next((found for found in (_unsupported(sub, where) for where, sub in parts) if found), None)


def _refuse_unsupported(space: gym.Space) -> None:
    found = _unsupported(space)
    if found is None:
        return
    where, sub = found
    kind = type(sub).__name__
    why = _WHY.get(kind, 'a space the models cannot take')
    if not where:
        raise ConfigError(f"the env's observation space is a {kind}: {why}; map it to a Box (numbers or an image) "
                          f"with an observation wrapper in env.wrappers")
    others = [k for k in space.spaces if f"[{k!r}]" != where] if isinstance(space, gym.spaces.Dict) else None
    cure = (f"drop it with a wrapper in env.wrappers: dict(type='FilterObservation', filter_keys={others})"
            + (", or for MiniGrid 'minigrid.wrappers.ImgObsWrapper' (the image alone)" if 'image' in others else '')
            if others else "map it to a Box with an observation wrapper in env.wrappers")
    raise ConfigError(f"observation{where} is a {kind}: {why}; {cure}")


class ObsAdapter:
    """Maps an env's observations into what the models take: 1-D float vectors or ``[C, H, W]`` uint8 images.

    - 1-D Box: as it is;
    - uint8 ``[H, W, C]`` (1-4 channels last): transposed to ``[C, H, W]``; ``[C, H, W]`` as it is; ``[H, W]``
      as ``[1, H, W]``;
    - uint8 ``[K, H, W, C]`` / ``[K, C, H, W]`` (stacked frames): the frames' channels stacked, ``[K*C, H, W]``;
    - a Dict with image keys: a Dict of each image (as above, for the model's conv encoder per key) and each other
      key flattened to float32 (SB3's MultiInputPolicy);
    - any other Box, Dict, Tuple, Discrete (one-hot), MultiDiscrete, MultiBinary: flattened to float32.
    A Dict with an ``action_mask`` (DI-engine's masked observations) is left as it is.
    """

    def __init__(self, space: gym.Space) -> None:
        _refuse_unsupported(space)
        self.source, self.space, self.how = space, space, None  # how: None leaves observations as they are
        self._convert: Callable[[Any], Any] | None = None
        if isinstance(space, gym.spaces.Dict) and 'action_mask' in space.spaces:
            return
        if isinstance(space, gym.spaces.Box) and len(space.shape) <= 1:
            return
        if is_image(space):
            self._image(space)
        elif isinstance(space, gym.spaces.Dict) and any(is_image(sub) for sub in space.spaces.values()):
            self._multi(space)
        else:
            self._flat(space)

    def _multi(self, space: gym.spaces.Dict) -> None:
        if all(ObsAdapter(sub).identity if is_image(sub) else _float_vector(sub) for sub in space.spaces.values()):
            return  # adapted already
        self._parts = {key: ObsAdapter(sub) if is_image(sub) else ObsAdapter(gym.spaces.Tuple([sub]))
                       for key, sub in space.spaces.items()}  # (a Tuple: even a 1-D Box becomes float32)
        self.space = gym.spaces.Dict({key: part.space for key, part in self._parts.items()})
        self._convert = self._per_key
        images = [key for key, sub in space.spaces.items() if is_image(sub)]
        self.how = (f"Dict: images {images} as uint8 CHW for a conv encoder each, "
                    f"{[key for key in space.spaces if key not in images]} flattened to float32")

    def _per_key(self, obs: Any) -> dict[str, Any]:
        return {key: part(obs[key] if not isinstance(part.source, gym.spaces.Tuple) else (obs[key],))
                for key, part in self._parts.items()}

    def _image(self, space: gym.spaces.Box) -> None:
        shape = space.shape
        if len(shape) == 2:
            shape = (1,) + shape  # one grey channel
        frames, (a, b, c) = (shape[0], shape[1:]) if len(shape) == 4 else (None, shape)
        hwc = _channels(c) and not _channels(a)
        if frames is None and not hwc and shape == space.shape:  # [C, H, W] already
            return
        lead = (0,) if frames else ()
        perm = lead + tuple(i + len(lead) for i in ((2, 0, 1) if hwc else (0, 1, 2)))
        chw = (c, a, b) if hwc else (a, b, c)
        new = (chw[0] * (frames or 1),) + chw[1:]
        low, high = (np.transpose(bound.reshape(shape), perm).reshape(new) for bound in (space.low, space.high))
        self.space = gym.spaces.Box(low, high, new, np.uint8)
        self._shape, self._perm, self._new, self._convert = shape, perm, new, self._transpose
        layout = 'HW' if len(space.shape) == 2 else 'HWC' if hwc else 'CHW'
        self.how = f"uint8 {'frames' if frames else 'image'} {space.shape} ({layout}) as CHW {new}"

    def _flat(self, space: gym.Space) -> None:
        try:
            flat = gym.spaces.flatten_space(space)
        except NotImplementedError:
            raise ConfigError(f"observation space {space} cannot be flattened into a vector; give the env a Box, "
                              f"Dict, Tuple, Discrete, MultiDiscrete or MultiBinary observation space") from None
        self.space = gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32), flat.shape,
                                    np.float32)
        self._convert = self._flatten
        self.how = f"{type(space).__name__} {space} flattened to float32 {flat.shape}"

    def _transpose(self, obs: Any) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(np.asarray(obs).reshape(self._shape), self._perm)).reshape(self._new)

    def _flatten(self, obs: Any) -> np.ndarray:
        return gym.spaces.flatten(self.source, obs).astype(np.float32, copy=False)

    @property
    def identity(self) -> bool:
        return self.how is None

    def __call__(self, obs: Any) -> Any:
        return obs if self._convert is None else self._convert(obs)

    def log_once(self, name: str) -> None:
        """One log line per process saying how ``name``'s observations are adapted."""
        message = f"env {name}: observations {self.how}"
        if self.how is not None and message not in _logged:
            _logged.add(message)
            logger.warning(message)


class AdaptObservation(gym.ObservationWrapper):
    """``ObsAdapter`` as a gymnasium wrapper (inside ``GymnasiumEnv``)."""

    def __init__(self, env: gym.Env, adapter: ObsAdapter) -> None:
        super().__init__(env)
        self.adapter, self.observation_space = adapter, adapter.space

    def observation(self, observation: Any) -> Any:
        return self.adapter(observation)


class AdaptedEnv(BaseEnv):
    """A user's ``BaseEnv`` whose observations ``ObsAdapter`` changes; everything else passes through."""

    def __init__(self, env: BaseEnv, adapter: ObsAdapter) -> None:
        self.env, self.obs_adapter = env, adapter

    def reset(self) -> Any:
        return self.obs_adapter(self.env.reset())

    def step(self, action: Any) -> BaseEnvTimestep:
        timestep = self.env.step(action)
        return timestep._replace(obs=self.obs_adapter(timestep.obs))

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self.env.seed(seed, dynamic_seed)

    def close(self) -> None:
        self.env.close()

    def state_dict(self) -> dict:
        return self.env.state_dict() if hasattr(self.env, 'state_dict') else {}

    def load_state_dict(self, state: dict) -> None:
        if hasattr(self.env, 'load_state_dict'):
            self.env.load_state_dict(state)

    def set_parameters(self, values: dict[str, Any], via: str = 'make') -> None:
        self.env.set_parameters(values, via)

    def __getattr__(self, name: str) -> Any:  # env_id, enable_save_replay, a user's own methods
        if name == 'env':
            raise AttributeError(name)
        return getattr(self.env, name)

    observation_space = property(lambda self: self.obs_adapter.space)
    action_space = property(lambda self: self.env.action_space)
    reward_space = property(lambda self: self.env.reward_space)


# ---- gymnasium wrappers from a config ----
def _import(path: str, home: str) -> Any:
    module, _, name = path.rpartition('.')
    if not module:  # a short name: one of ``home``'s wrappers (gymnasium's, or SuperSuit's for PettingZoo)
        module, name = home, path
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        try:
            found = importlib.import_module(home)
            known = ', '.join(n for n in dir(found) if not n.startswith('_') and callable(getattr(found, n)))
        except ImportError:
            known = f"none: {home} is not installed (pip install {home.split('.')[0]})"
        raise ConfigError(f"env.wrappers: cannot import wrapper {path!r} ({error}); give an import path "
                          f"('my_module.MyWrapper') or one of {home}'s: {known}") from None


def wrapper_spec(entry: Any) -> tuple[str, dict]:
    """``(import path or short name, kwargs)`` of one ``env.wrappers`` entry: a path or ``dict(type=path, **kwargs)``
    (plain values, so that ``total_config.py`` records them)."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, dict) and isinstance(entry.get('type'), str):
        return entry['type'], {k: v for k, v in entry.items() if k != 'type'}
    raise ConfigError(f"env.wrappers entries must be import paths ('ClipAction', 'my_module.MyWrapper') or "
                      f"dict(type=path, **kwargs), got {entry!r}")


def apply_wrappers(env: Any, wrappers: list | None, home: str = 'gymnasium.wrappers') -> Any:
    """``env`` inside each of ``wrappers`` in order (the first innermost): each called as ``wrapper(env, **kwargs)``;
    a short name is one of ``home``'s."""
    for entry in wrappers or []:
        path, kwargs = wrapper_spec(entry)
        wrapper = _import(path, home)
        try:
            env = wrapper(env, **kwargs)
        except Exception as error:  # a wrapper may reject the env or its kwargs for any reason
            raise ConfigError(f"env.wrappers: {path}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) failed "
                              f"on {env}: {type(error).__name__}: {error}") from error
    return env


__all__ = ['ObsAdapter', 'AdaptObservation', 'AdaptedEnv', 'apply_wrappers', 'wrapper_spec']
