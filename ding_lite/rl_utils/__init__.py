"""Pure RL math shared by policies."""
from __future__ import annotations

from .entropy import LearnedScalar, Temperature, tanh_gaussian_sample
from .optim import load_optimizer, make_adam, optimizer_step
from .exploration import epsilon_greedy, get_epsilon_greedy_fn
from .sample import get_train_sample, preprocess_learn_batch
from .td import TDTarget, q_v_1step_td_data, q_v_1step_td_error, v_1step_td_data, v_1step_td_error

__all__ = ['v_1step_td_data', 'v_1step_td_error', 'q_v_1step_td_data', 'q_v_1step_td_error', 'get_train_sample',
           'preprocess_learn_batch', 'LearnedScalar', 'Temperature', 'tanh_gaussian_sample', 'make_adam',
           'load_optimizer', 'optimizer_step', 'TDTarget', 'epsilon_greedy', 'get_epsilon_greedy_fn']
