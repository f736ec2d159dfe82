"""SAC-family learn-step throughput: ``learn_mode.forward`` against a bare PyTorch update of the same math.

Run: ``python -m tests.benchmark.bench_learn [--device cuda] [--no-compile] [--threads N] [--policy NAME]
[--amp bf16|fp16]``. ``--amp`` adds the eager step with ``learn.amp`` set (and on CUDA with bf16, the graphed one).
``--policy tqc`` (any continuous SAC-family variant; ``lstm``/``gru``: SAC with ``model.rnn`` on sequences;
``rnd``/``curiosity``/``gail``: SAC with that reward signal beside the env's; ``bc``: with behavioural cloning;
``simba``/``simba_v2``: at the papers' network sizes) times
that variant's step against SAC's instead, interleaved in the same process, at the MuJoCo and Pendulum sizes (its
cost in SAC steps); for ``tqc`` and ``crossq``, SB3-contrib's train step of the same variant at the same sizes
joins the rounds as the peer row, where ``sb3_contrib`` is installed (``pip install sb3-contrib``: a benchmark-only
dependency). Otherwise: same sizes, same process, interleaved rounds of the eager step, the ``learn.compile=True``
step and the bare update; reports updates/s and the framework/bare ratio (>= 1.0 means the framework adds
nothing). On CUDA the replay buffer lives on the GPU too, each timing window ends with a synchronize, the
``learn.cuda_graph=True`` step joins the rounds and the MuJoCo sizes run at batch 1024 as well. SQIL-SAC's update
is SAC's on a mixed batch (against the bare SAC update); discrete SAC runs at CartPole's sizes against a bare
discrete SAC update.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer, save_demo
from policy_zoo import SACPolicy, create_policy
from tests.benchmark.bare_sac import BareDiscreteSAC, BareSAC

CASES = {'mujoco-size (obs 17, act 6, hidden 256, batch 256)': ('sac', 17, 6, 256, 256),
         'pendulum (obs 3, act 1, hidden 128, batch 128)': ('sac', 3, 1, 128, 128),
         'sqil_sac, pendulum sizes': ('sqil_sac', 3, 1, 128, 128),
         'discrete_sac, cartpole (obs 4, 2 actions, hidden 64, batch 64)': ('discrete_sac', 4, 2, 64, 64)}
GPU_CASES = {'mujoco-size (obs 17, act 6, hidden 256, batch 1024)': ('sac', 17, 6, 256, 1024)}


RNN = dict(unroll=8, burnin=4, hidden=64)  # --policy lstm|gru: sequences of 8 after 4, batch / 8 of them
SIGNALS = ('rnd', 'curiosity', 'gail', 'bc')  # --policy NAME: SAC with that reward signal beside the env's (or BC)


def _policy(kind: str, obs: int, act: int, hidden: int, batch: int, device: str, rnn: str | None = None,
            extra: dict | None = None, **learn: bool) -> SACPolicy:
    model = dict(obs_shape=obs, action_shape=act, actor_head_hidden_size=hidden, critic_head_hidden_size=hidden)
    if kind in ('simba', 'simba_v2'):  # the papers' own sizes (actor 1 block of 128, critics 2 of 512)
        model = dict(obs_shape=obs, action_shape=act)
    memory = {}
    if rnn:
        model['rnn'] = dict(type=rnn, hidden_size=RNN['hidden'])
        memory = dict(burnin_step=RNN['burnin'], collect=dict(unroll_len=RNN['unroll']))
    main = dict(exp_name='bench_learn', policy=dict(device=device, model=model, **memory, **(extra or {}), learn=dict(
        batch_size=batch, learning_rate_q=1e-3, learning_rate_policy=1e-3, **learn)))
    cfg = compile_config(main, create_cfg=dict(policy=dict(type=kind)), save_cfg=False)
    return create_policy(cfg.policy, enable_field=['learn'])


def _rate(fn, seconds: float, device: str) -> float:
    sync = torch.cuda.synchronize if device.startswith('cuda') else (lambda: None)
    for _ in range(20):
        fn()
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    sync()
    return n / (time.perf_counter() - start)


def run(seconds: float = 1.0, rounds: int = 9, device: str = 'cpu', compile: bool = True,
        amp: str | None = None) -> dict[str, float]:
    """Per case, interleaved rounds of the eager step, the compiled step (``learn.compile``), on CUDA the graphed
    step (``learn.cuda_graph``), and the bare update; the median of each round's ratio to the bare update."""
    results = {}
    cuda = device.startswith('cuda')
    for name, (kind, *sizes) in (CASES | GPU_CASES if cuda else CASES).items():
        obs, act, hidden, batch = sizes
        discrete = kind == 'discrete_sac'
        buffer = ReplayBuffer({'replay_buffer_size': 10000, 'device': device})
        buffer.push({'obs': torch.randn(10000, obs), 'reward': torch.randn(10000), 'next_obs': torch.randn(10000, obs),
                     'action': torch.randint(act, (10000,)) if discrete else torch.rand(10000, act) * 2 - 1,
                     'done': torch.zeros(10000, dtype=torch.bool)})
        steps = {'eager': _policy(kind, *sizes, device).learn_mode.forward}
        if compile:
            steps['compiled'] = _policy(kind, *sizes, device, compile=True).learn_mode.forward
        if cuda:
            steps['cuda graph'] = _policy(kind, *sizes, device, cuda_graph=True).learn_mode.forward
        if amp:
            steps[f'{amp}'] = _policy(kind, *sizes, device, amp=amp).learn_mode.forward
            if cuda and amp == 'bf16':
                steps['cuda graph bf16'] = _policy(kind, *sizes, device, cuda_graph=True, amp=amp).learn_mode.forward
        bare = (BareDiscreteSAC if discrete else BareSAC)(obs, act, hidden, 1e-3, 1e-3, 3e-4, device=device)

        def bare_step() -> None:
            b = buffer.sample(batch)
            bare.update(b.obs, b.action, b.reward, b.next_obs, b.done.float())

        rates: dict[str, list[float]] = {key: [] for key in [*steps, 'bare']}
        for _ in range(rounds):
            for key, step in steps.items():
                rates[key].append(_rate(lambda: step(buffer.sample(batch)), seconds, device))
            rates['bare'].append(_rate(bare_step, seconds, device))
        line = f"{name}: bare {max(rates['bare']):.0f} updates/s"
        for key in steps:
            ratio = sorted(f / b for f, b in zip(rates[key], rates['bare']))[rounds // 2]
            line += f", {key} {max(rates[key]):.0f} updates/s (ratio {ratio:.2f})"
            results[f"{name}, {key}"] = ratio
        print(line, flush=True)
    return results


def run_variant(policy: str, seconds: float = 1.0, rounds: int = 9, device: str = 'cpu') -> dict[str, float]:
    """The eager step of ``policy`` against SAC's at the same sizes, interleaved; the median time ratio."""
    results = {}
    for name, (kind, *sizes) in CASES.items():
        if kind != 'sac':
            continue
        obs, act, hidden, batch = sizes
        buffer = ReplayBuffer({'replay_buffer_size': 10000, 'device': device})
        buffer.push({'obs': torch.randn(10000, obs), 'reward': torch.randn(10000), 'next_obs': torch.randn(10000, obs),
                     'action': torch.rand(10000, act) * 2 - 1, 'done': torch.zeros(10000, dtype=torch.bool)})
        steps = {key: (lambda step: lambda: step(buffer.sample(batch)))(_policy(key, *sizes, device).learn_mode.forward)
                 for key in ('sac', policy) if key not in ('lstm', 'gru', *SIGNALS)}
        if policy in ('lstm', 'gru'):
            steps[policy] = _recurrent_step(policy, obs, act, hidden, batch, device)
        if policy in SIGNALS:
            step = _policy('sac', *sizes, device, extra=_signal(policy, obs, act)).learn_mode.forward
            steps[policy] = lambda step=step: step(buffer.sample(batch))
        peer = _sb3_contrib_step(policy, obs, act, hidden, batch, device)
        if peer is not None:
            steps['sb3-contrib'] = peer
        rates: dict[str, list[float]] = {key: [] for key in steps}
        for _ in range(rounds):
            for key, step in steps.items():
                rates[key].append(_rate(step, seconds, device))
        costs = {key: sorted(s / v for s, v in zip(rates['sac'], rates[key]))[rounds // 2] for key in steps}
        line = f"{name}: sac {max(rates['sac']):.0f} updates/s, {policy} {max(rates[policy]):.0f} updates/s " \
               f"({policy} step = {costs[policy]:.2f} SAC steps)"
        if peer is not None:
            line += f", sb3-contrib {policy} {max(rates['sb3-contrib']):.0f} updates/s ({costs['sb3-contrib']:.2f} " \
                    f"SAC steps: ours is {costs['sb3-contrib'] / costs[policy]:.2f}x its speed)"
        print(line, flush=True)
        results[name] = costs[policy]
    return results


def _signal(name: str, obs: int, act: int) -> dict:
    """The policy config of SAC with reward signal ``name`` beside the env's (``bc``: behavioural cloning), on a
    synthetic demonstration file where it reads one."""
    path = os.path.join(tempfile.mkdtemp(), 'demo.pt')
    demo = {'obs': torch.randn(1000, obs), 'action': torch.rand(1000, act) * 2 - 1, 'reward': torch.zeros(1000),
            'next_obs': torch.randn(1000, obs), 'done': torch.zeros(1000, dtype=torch.bool)}
    save_demo(path, demo, env_id='bench')
    if name == 'bc':
        return dict(behavioral_cloning=dict(demo_path=path, strength=1.0, steps=10 ** 9))
    signal = dict(demo_path=path, use_actions=True) if name == 'gail' else {}
    return dict(reward_signals={'extrinsic': {}, name: signal})


def _recurrent_step(rnn: str, obs: int, act: int, hidden: int, batch: int, device: str):
    """SAC's step on a recurrent model: ``batch / unroll`` sequences (as many loss steps as SAC's batch) from a
    buffer of 10000 random transitions in episodes of 200 steps of 10 envs."""
    sequences = max(1, batch // RNN['unroll'])
    step = _policy('sac', obs, act, hidden, sequences, device, rnn=rnn).learn_mode.forward
    width = 2 * (2 if rnn == 'lstm' else 1) * RNN['hidden']
    buffer = ReplayBuffer({'replay_buffer_size': 10000, 'device': device, 'sequence_length': RNN['unroll'],
                           'burnin_step': RNN['burnin']})
    index = torch.arange(10000)
    buffer.push({'obs': torch.randn(10000, obs), 'reward': torch.randn(10000), 'next_obs': torch.randn(10000, obs),
                 'action': torch.rand(10000, act) * 2 - 1, 'done': torch.zeros(10000, dtype=torch.bool),
                 'state': torch.randn(10000, width) * 0.1, 'env_id': index % 10,
                 'episode_start': index // 10 % 200 == 0})
    return lambda: step(buffer.sample(sequences))


def _sb3_contrib_step(policy: str, obs: int, act: int, hidden: int, batch: int, device: str):
    """SB3-contrib's one-gradient-step ``train`` of ``policy`` ('tqc' or 'crossq') at ding_lite's sizes (two hidden
    layers of ``hidden``, 2 critics; TQC 25 quantiles, 2 dropped per critic; CrossQ its defaults but the critics'
    width) on a buffer of 10000 random transitions; None where the package or the variant is not there."""
    try:
        import gymnasium as gym
        import numpy as np
        import sb3_contrib
        from stable_baselines3.common.logger import configure
    except ImportError:
        return None
    algo = {'tqc': getattr(sb3_contrib, 'TQC', None), 'crossq': getattr(sb3_contrib, 'CrossQ', None)}.get(policy)
    if algo is None:
        return None

    class Spaces(gym.Env):
        observation_space = gym.spaces.Box(-np.inf, np.inf, (obs,), np.float32)
        action_space = gym.spaces.Box(-1.0, 1.0, (act,), np.float32)

    kwargs = dict(net_arch=[hidden, hidden], n_critics=2) | (dict(n_quantiles=25) if policy == 'tqc' else {})
    model = algo('MlpPolicy', Spaces(), batch_size=batch, learning_starts=0, learning_rate=1e-3, device=device,
                 policy_kwargs=kwargs, buffer_size=10000)
    model.set_logger(configure(None, []))
    rng = np.random.default_rng(0)
    for _ in range(10000):
        model.replay_buffer.add(rng.normal(size=(1, obs)), rng.normal(size=(1, obs)),
                                rng.uniform(-1, 1, (1, act)), rng.normal(size=1), np.zeros(1), [{}])
    return lambda: model.train(gradient_steps=1, batch_size=batch)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--no-compile', action='store_true', help='skip the compiled step (compiling takes a while)')
    parser.add_argument('--threads', type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument('--policy', default=None, help="a SAC-family variant to time against SAC's step (e.g. tqc; "
                        "lstm or gru: SAC on a recurrent model's sequences)")
    parser.add_argument('--amp', choices=['bf16', 'fp16'], default=None, help='also time the step with learn.amp')
    args = parser.parse_args()
    if args.device.startswith('cuda') and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: this machine has no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.policy:
        run_variant(args.policy, device=args.device)
    else:
        run(device=args.device, compile=not args.no_compile, amp=args.amp)
