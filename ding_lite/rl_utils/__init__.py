"""Pure RL math shared by policies."""
from __future__ import annotations

from .entropy import Temperature, load_optimizer, make_adam, tanh_gaussian_sample
from .exploration import epsilon_greedy, get_epsilon_greedy_fn
from .sample import get_train_sample, preprocess_learn_batch
from .td import q_v_1step_td_data, q_v_1step_td_error, v_1step_td_data, v_1step_td_error

__all__ = ['v_1step_td_data', 'v_1step_td_error', 'q_v_1step_td_data', 'q_v_1step_td_error', 'get_train_sample',
           'preprocess_learn_batch', 'Temperature', 'tanh_gaussian_sample', 'make_adam', 'load_optimizer',
           'epsilon_greedy', 'get_epsilon_greedy_fn']
