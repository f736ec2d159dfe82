"""Many seeds in one run (issue 22): one stacked update, each seed still its own run."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config, read_config
from ding_lite.data import default_collate
from ding_lite.registry import ENV_REGISTRY, POLICY_REGISTRY
from ding_lite.worker import load_checkpoint
from entry import serial_pipeline
from entry.pipeline.seeds import parse_seeds
from envs import BaseEnv, BaseEnvTimestep
from policy_zoo import SACPolicy, create_policy
from entry.pipeline.seed_axis import Fields, SeedAxis
from tests.conftest import ROOT, TINY_CREATE, TINY_PENDULUM


def test_parse_seeds():
    assert parse_seeds('0-4') == [0, 1, 2, 3, 4]
    assert parse_seeds('0,3,7') == [0, 3, 7]
    assert parse_seeds('0-2,9') == [0, 1, 2, 9]
    for bad in ('4-1', 'a', '', '1,1', '-3'):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def _policy_cfg(policy_type: str, batch_size: int = 8) -> EasyDict:
    learn = dict(with_lagrange=True, lagrange_thresh=1.0) if policy_type == 'cql_lagrange' else {}
    widths = dict(actor_hidden_dim=8, critic_hidden_dim=8) if policy_type.startswith('simba') else \
        dict(actor_head_hidden_size=16, critic_head_hidden_size=16)
    if policy_type == 'simba_v2':
        widths['num_bins'] = 11
    main = dict(exp_name='unused', policy=dict(model=dict(obs_shape=3, action_shape=2, **widths),
                                               learn=dict(batch_size=batch_size, **learn)))
    create = dict(policy=dict(type=policy_type.split('_lagrange')[0]))
    return compile_config(main, create_cfg=create, save_cfg=False).policy


def _batch(discrete: bool, n: int = 8):
    action = torch.randint(0, 2, (n,)) if discrete else torch.rand(n, 2) * 2 - 1
    return default_collate([{'obs': torch.randn(3), 'action': action[i], 'reward': float(torch.randn(())),
                             'next_obs': torch.randn(3), 'done': i % 4 == 0} for i in range(n)])


def _learn_tensors(policy) -> dict[str, torch.Tensor]:
    state = policy._state_dict_learn()
    out = {f'model.{k}': v for k, v in state['model'].items()}
    out |= {f'target.{k}': v for k, v in state.get('target_model', {}).items()}  # CrossQ has none
    for name in ('optimizer_q', 'optimizer_policy'):
        for i, s in state[name]['state'].items():
            out |= {f'{name}.{i}.{k}': v for k, v in s.items()}
    return out | {'alpha': state['alpha']['raw'], **({'alpha_prime': state['alpha_prime']['raw']}
                                                     if 'alpha_prime' in state else {})}


@pytest.mark.parametrize('policy_type, updates', [('sac', 100), ('discrete_sac', 20), ('tqc', 20), ('sac_v1', 20),
                                                   ('redq', 20), ('droq', 20), ('crossq', 20), ('cql_lagrange', 20),
                                                   ('sac_n', 20), ('edac', 20), ('simba', 20), ('simba_v2', 20)])
def test_stacked_update_matches_single_runs_on_the_same_batches(policy_type, updates):
    """Seed k of a 2-seed update equals a single run of seed k over 100 updates (20 for the variants) from the
    same parameters and batches (the noise, REDQ's subsets and DroQ's dropout drawn alike: randomness='same'); its
    Adam moments, temperature and BatchRenorm statistics and counters (CrossQ) too, so nothing mixes the seeds.
    SimbaV2's rates fall over a horizon of 10 learn steps (set on the seeds only: the stacked update reads it), and
    its weights are projected per seed."""
    # CrossQ at 32: its batch normalisation divides by the batch's spread, near eps for a ReLU feature alive in one
    # of 8 samples, where the last bits of a vmapped reduction grow and Adam makes any sign an lr-sized step
    batch_size = 32 if policy_type == 'crossq' else 8
    singles, seeds = [], []
    for k in range(2):
        torch.manual_seed(k)
        singles.append(create_policy(_policy_cfg(policy_type, batch_size)))
        seeds.append(create_policy(_policy_cfg(policy_type, batch_size), model=copy.deepcopy(singles[-1].model)))
        seeds[-1]._load_state_dict_learn(singles[-1]._state_dict_learn())  # (a given model is initialised again)
        singles[-1].set_horizon(10)
        seeds[-1].set_horizon(10)
    axis = SeedAxis(seeds, randomness='same')
    discrete = policy_type == 'discrete_sac'
    for step in range(updates):
        batches = [_batch(discrete, batch_size) for _ in range(2)]
        torch.manual_seed(1000 + step)
        stacked = axis.forward(batches)
        outputs = [{key: value[k] for key, value in stacked.items()} for k in range(2)]
        for k in range(2):
            torch.manual_seed(1000 + step)
            expected = singles[k]._forward_learn(batches[k])
            if step in (0, updates - 1):
                assert expected.keys() == outputs[k].keys()
                torch.testing.assert_close(outputs[k], expected, rtol=1e-4, atol=1e-5)
    for k in range(2):
        single, stacked = _learn_tensors(singles[k]), _learn_tensors(seeds[k])
        assert single.keys() == stacked.keys() and seeds[k].learn_steps == singles[k].learn_steps == updates
        for name in single:
            torch.testing.assert_close(stacked[name], single[name], rtol=1e-4, atol=1e-5, msg=name)
    if policy_type == 'simba_v2':  # fallen to learning_rate_end, as the single runs' have
        assert axis.lead._optimizer_q.param_groups[0]['lr'] == singles[0]._optimizer_q.param_groups[0]['lr'] == 5e-5
    first, second = _learn_tensors(seeds[0]), _learn_tensors(seeds[1])
    weight = next(name for name in first if name.startswith('model.') and name.endswith('weight'))
    assert not torch.equal(first[weight], second[weight])  # the seeds are distinct runs


class SeedRewardEnv(BaseEnv):
    """10-step episodes with reward 0, except on envs seeded 500 or more, which pay 1 a step from their third
    episode on: a seed 500 run reaches its stop value (5) at its second evaluation, seeds below never."""

    config = dict(collector_env_num=1, evaluator_env_num=1)

    def __init__(self, cfg: dict) -> None:
        self._seed, self._t, self._episodes = 0, 0, 0

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed = seed

    def reset(self) -> np.ndarray:
        self._t, self._episodes = 0, self._episodes + 1
        return np.random.default_rng(self._seed).normal(size=3).astype(np.float32)

    def step(self, action: np.ndarray) -> BaseEnvTimestep:
        self._t += 1
        reward = float(self._seed >= 500 and self._episodes >= 3)
        done = self._t == 10
        info = {'TimeLimit.truncated': done, **({'eval_episode_return': 10 * reward} if done else {})}
        return BaseEnvTimestep(np.full(3, self._t / 10, np.float32), reward, done, info)

    def close(self) -> None:
        pass

    observation_space = property(lambda self: gym.spaces.Box(-np.inf, np.inf, (3,), np.float32))
    action_space = property(lambda self: gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
    reward_space = property(lambda self: gym.spaces.Box(-np.inf, np.inf, (1,), np.float32))


def _seed_reward_config(tmp_path, registered) -> tuple[EasyDict, EasyDict]:
    registered(ENV_REGISTRY, 'seed_reward', SeedRewardEnv)
    main = copy.deepcopy(TINY_PENDULUM)
    main.update(exp_name=str(tmp_path / 'run'), env=dict(n_evaluator_episode=1, stop_value=5))
    main['policy']['random_collect_size'] = 20
    main['policy']['learn']['batch_size'] = 8
    main['policy']['eval']['evaluator']['eval_freq'] = 5
    return EasyDict(main), EasyDict(TINY_CREATE, env=dict(type='seed_reward'))


def _params(policy) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in policy.model.state_dict().items()}


def test_each_seed_is_its_own_run_and_stops_on_its_own(tmp_path, registered):
    """Seeds 0, 1 and 500 in one run: seed 500 stops at its stop value and is final from then on (its last
    checkpoint is its best one, and nothing moved after it), while 0 and 1 train on, stacked, to the budget. Each
    folder holds a single run's files, its total_config.py naming its own seed."""
    policies = serial_pipeline(_seed_reward_config(tmp_path, registered), seed=[0, 1, 500], max_env_step=160)
    assert [p.model is not None for p in policies] == [True] * 3 and len({id(p) for p in policies}) == 3
    folders = {seed: tmp_path / f'run_seed{seed}' for seed in (0, 1, 500)}
    for seed, folder in folders.items():
        main, _ = read_config(str(folder / 'total_config.py'))
        assert main.seed == seed and main.exp_name == str(folder)
        assert (folder / 'log' / 'evaluator.csv').is_file() and (folder / 'ckpt' / 'ckpt_best.pth.tar').is_file()
    stopped = load_checkpoint(str(folders[500] / 'ckpt' / 'ckpt_last.pth.tar'))
    best = load_checkpoint(str(folders[500] / 'ckpt' / 'ckpt_best.pth.tar'))
    assert 0 < stopped['last_iter'] == best['last_iter']  # it learned, then stopped at the evaluation that hit 5
    for name, value in _params(policies[2]).items():
        assert torch.equal(value, best['model'][name]), name
    for seed in (0, 1):
        last = load_checkpoint(str(folders[seed] / 'ckpt' / 'ckpt_last.pth.tar'))
        assert last['last_envstep'] >= 160 and last['last_iter'] > stopped['last_iter']
        for name, value in _params(policies[seed]).items():
            assert torch.equal(value, last['model'][name]), name
    assert not torch.equal(*[_params(p)['actor.0.0.weight'] for p in policies[:2]])


def test_one_seed_in_a_list_is_the_single_run(tmp_path):
    """``seed=[3]`` takes the single run's path: the same parameters, bitwise, in ``<exp_name>_seed3``."""
    main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
    main.exp_name = str(tmp_path / 'single')
    single = serial_pipeline((main, create), seed=3, max_env_step=80)
    main.exp_name = str(tmp_path / 'listed')
    [listed] = serial_pipeline((copy.deepcopy(main), create), seed=[3], max_env_step=80)
    assert (tmp_path / 'listed_seed3' / 'ckpt' / 'ckpt_last.pth.tar').is_file()
    for name, value in _params(single).items():
        assert torch.equal(value, _params(listed)[name]), name


class OwnUpdateSAC(SACPolicy):
    """A user's policy with its own update: its seeds cannot share one."""

    def _update(self, batch):
        return super()._update(batch)


@pytest.fixture
def registered():
    """Register a test's classes for the test alone (``ding_lite list`` lists what is registered)."""
    names = []

    def register(registry, name, cls):
        registry.register(name, cls, force_overwrite=True)
        names.append((registry, name))
    yield register
    for registry, name in names:
        registry._table.pop(name, None)


def test_a_policy_with_its_own_update_runs_its_seeds_in_turn(tmp_path, registered):
    registered(POLICY_REGISTRY, 'own_update_sac', OwnUpdateSAC)
    main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
    main.exp_name = str(tmp_path / 'own')
    create.policy.type = 'own_update_sac'
    policies = serial_pipeline((main, create), seed=[0, 1], max_env_step=60)
    assert len(policies) == 2 and all(isinstance(p, OwnUpdateSAC) for p in policies)
    summary = (tmp_path / 'own_seed0' / 'log' / 'summary.txt').read_text()
    assert 'seeds [0, 1] run one after another' in summary and 'defines its own _update' in summary
    assert all((tmp_path / f'own_seed{seed}' / 'ckpt' / 'ckpt_last.pth.tar').is_file() for seed in (0, 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['own_seed0', 'own_seed1']  # each seed in its own folder


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'entry.cli', *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, 'PYTHONPATH': ROOT}, timeout=300)


def test_cli_seeds_train_each_folder_and_its_checkpoint_evaluates_alone(tmp_path):
    config = tmp_path / 'tiny_config.py'
    config.write_text(f"from easydict import EasyDict\nmain_config = EasyDict({TINY_PENDULUM!r})\n"
                      f"create_config = EasyDict({TINY_CREATE!r})\n")
    done = _cli('-m', 'serial', '-c', str(config), '--seeds', '0,2', '--max-env-step', '60', cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    for seed in (0, 2):
        assert (tmp_path / f'tiny_seed{seed}' / 'ckpt' / 'ckpt_best.pth.tar').is_file()
    evaluated = _cli('-m', 'eval', '-c', str(tmp_path / 'tiny_seed2' / 'total_config.py'), '--load-path',
                     str(tmp_path / 'tiny_seed2' / 'ckpt' / 'ckpt_best.pth.tar'), cwd=tmp_path)
    assert evaluated.returncode == 0 and 'return mean' in evaluated.stdout, evaluated.stderr[-2000:]
    refused = _cli('-m', 'parallel', '-c', str(config), '--seeds', '0-4', cwd=tmp_path)
    assert refused.returncode == 2 and 'the parallel pipeline is single-seed' in refused.stderr


def test_resume_continues_every_seed_and_a_stopped_seed_stays_final(tmp_path, registered):
    """``resume=True`` continues each seed's folder from its resume point; seed 500, which had stopped at its stop
    value, is left as it was."""
    serial_pipeline(_seed_reward_config(tmp_path, registered), seed=[0, 1, 500], max_env_step=60)
    folders = {seed: tmp_path / f'run_seed{seed}' for seed in (0, 1, 500)}
    before = {seed: load_checkpoint(str(folder / 'ckpt' / 'ckpt_last.pth.tar')) for seed, folder in folders.items()}
    policies = serial_pipeline(_seed_reward_config(tmp_path, registered), seed=[0, 1, 500], max_env_step=100,
                               resume=True)
    assert not list(tmp_path.glob('run_seed*_*'))  # no new folders: each seed continued its own
    for seed in (0, 1):
        after = load_checkpoint(str(folders[seed] / 'ckpt' / 'ckpt_last.pth.tar'))
        assert after['last_envstep'] >= 100 and after['last_iter'] > before[seed]['last_iter']
    after = load_checkpoint(str(folders[500] / 'ckpt' / 'ckpt_last.pth.tar'))
    assert after['last_iter'] == before[500]['last_iter']
    for name, value in _params(policies[2]).items():
        assert torch.equal(value, before[500]['model'][name]), name


def test_sqil_and_demonstration_batches_stack_their_seeds(tmp_path):
    """serial_pipeline_sqil takes a list of seeds as serial_pipeline does, and so does the hybrid offline buffer:
    both train their seeds as one run (no 'one after another'), each seed's batches half demonstrations."""
    from entry import serial_pipeline_sqil
    from tests.conftest import synthetic_demo
    demo = synthetic_demo(tmp_path / 'demo.pt')
    main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
    main.exp_name, create.policy.type = str(tmp_path / 'sqil'), 'sqil_sac'
    policies = serial_pipeline_sqil((main, create), seed=[0, 1], expert_data_path=demo, max_env_step=60)
    assert len(policies) == 2
    main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
    main.exp_name = str(tmp_path / 'hybrid')
    main.policy.other.offline_buffer = dict(path=demo, ratio=0.5)
    assert len(serial_pipeline((main, create), seed=[0, 1], max_env_step=60)) == 2
    for run in ('sqil', 'hybrid'):
        for seed in (0, 1):
            assert 'critic_loss' in (tmp_path / f'{run}_seed{seed}' / 'log' / 'learner.txt').read_text()
        assert 'one after another' not in (tmp_path / f'{run}_seed0' / 'log' / 'summary.txt').read_text()
    assert 'expert_td_error' in (tmp_path / 'sqil_seed1' / 'log' / 'learner.txt').read_text()


def test_one_forward_acts_for_every_seed_as_its_own_forward_would():
    """``SeedAxis.act``: seed k's eval outputs and collect distribution are its own forward's, whatever the other
    seeds' row counts (a seed with nothing to act on is padded, and its exploration clock stays); each acting seed
    records its collect outputs for its entropy log."""
    torch.manual_seed(0)
    policies = [create_policy(_policy_cfg('sac')) for _ in range(3)]
    axis = SeedAxis(policies)
    obs = [torch.randn(2, 3), None, torch.randn(4, 3)]
    evaluated, collected = axis.act('eval', obs), axis.act('collect', obs)
    assert evaluated[1] is None and collected[1] is None
    for k in (0, 2):
        own = policies[k]._forward_eval_batch(obs[k])
        assert evaluated[k]['action'].shape == (len(obs[k]), 2)
        torch.testing.assert_close(evaluated[k]['action'], own['action'])
        logit = policies[k]._collect_act(obs[k])['logit']  # [mu, sigma]; the seeds' forward stacks them
        torch.testing.assert_close(collected[k]['logit'], torch.stack(list(logit), 1))
        assert collected[k]['action'].abs().max() <= 1 and len(policies[k]._entropy_log.recent) == 1
    assert not policies[1]._entropy_log.recent
    discrete = [create_policy(_policy_cfg('discrete_sac')) for _ in range(2)]
    SeedAxis(discrete).act('collect', [torch.randn(3, 3), None])
    assert [p._collect_envstep for p in discrete] == [3, 0]  # each seed's eps schedule on its own env steps


def test_seed_buffers_share_one_tensor_and_draw_each_seed_by_its_own_rule():
    """The seeds' buffers become rows of one tensor (a push into a seed's buffer lands there) and one gather
    reads each seed's own slots: a seed with 3 transitions is never read past them; a prioritized seed's weights
    and slots come back per seed."""
    from ding_lite.data import PrioritizedReplayBuffer, ReplayBuffer
    from ding_lite.data.seed_buffers import SeedBuffers

    def filled(cls, seed: int, n: int):
        buffer = cls(dict(replay_buffer_size=8))
        obs = torch.stack([torch.full((n,), float(seed)), torch.arange(n, dtype=torch.float32)], 1)  # (seed, slot)
        buffer.push({'obs': obs, 'reward': torch.zeros(n)})
        return buffer

    buffers = [filled(ReplayBuffer, seed, n) for seed, n in ((0, 8), (1, 3), (2, 8))]
    shared = SeedBuffers(buffers)
    buffers[1].push({'obs': torch.tensor([[1.0, 7.0]]), 'reward': torch.zeros(1)})  # slot 3, now count 4
    batch = shared.sample([1, 2], 64)
    assert batch['obs'].shape == (2, 64, 2) and shared.intact()
    assert batch['obs'][0, :, 0].eq(1).all() and batch['obs'][1, :, 0].eq(2).all()
    assert set(batch['obs'][0, :, 1].tolist()) == {0.0, 1.0, 2.0, 7.0}  # seed 1's four slots, none beyond
    torch.manual_seed(3)  # seeds of one count: one draw for all, the draws each buffer makes in turn
    batch = shared.sample([0, 2], 16)
    torch.manual_seed(3)
    slots = [buffers[k].draw(16)[0] for k in (0, 2)]
    assert batch['obs'][0, :, 0].eq(0).all() and batch['obs'][1, :, 0].eq(2).all()
    assert [batch['obs'][k, :, 1].long().tolist() for k in (0, 1)] == [s.tolist() for s in slots]
    prioritized = [filled(PrioritizedReplayBuffer, seed, 8) for seed in (0, 1)]
    prioritized[1].update({'priority': torch.tensor([100.0] + [1e-6] * 7), 'replay_buffer_idx': torch.arange(8)})
    batch = SeedBuffers(prioritized).sample([0, 1], 32)
    assert batch['priority_IS'].shape == batch['replay_buffer_idx'].shape == (2, 32)
    assert batch['replay_buffer_idx'][1].eq(0).all() and batch['obs'][1, :, 1].eq(0).all()
    assert batch['replay_buffer_idx'][0].unique().numel() > 1


def test_a_shared_buffer_batch_updates_as_the_seeds_own_batches():
    """A ``SeedBuffers`` sample (every seed's fields stacked, preprocessed for all seeds at once) gives the update
    that the same transitions as per-seed batches give."""
    torch.manual_seed(0)
    seeds = [create_policy(_policy_cfg('sac')) for _ in range(2)]
    twins = [create_policy(_policy_cfg('sac'), model=copy.deepcopy(p.model)) for p in seeds]
    stacked, per_seed = SeedAxis(seeds, randomness='same'), SeedAxis(twins, randomness='same')
    for step in range(3):
        batches = [_batch(False) for _ in range(2)]
        fields = Fields({key: torch.stack([b[key] for b in batches]) for key in batches[0].keys()})
        torch.manual_seed(step)
        outputs = stacked.forward(fields)
        torch.manual_seed(step)
        torch.testing.assert_close(outputs, per_seed.forward(batches))
    for k in range(2):
        torch.testing.assert_close(_learn_tensors(seeds[k]), _learn_tensors(twins[k]))


@pytest.mark.parametrize('case', ['priority', 'subprocess', 'discrete', 'envpool', 'norm_obs'])
def test_every_seed_acts_and_samples_through_the_shared_paths(tmp_path, monkeypatch, case):
    """Prioritized replay, the subprocess and EnvPool managers, discrete SAC and observation normalisation: two seeds
    collect and evaluate through one forward per env step (never their own forwards once training starts) and learn
    from one gather; a prioritized seed's priorities move in its own buffer, a seed's normaliser counts its own
    observations."""
    if case == 'envpool':
        pytest.importorskip('envpool')
    main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
    main.exp_name = str(tmp_path / case)
    if case == 'priority':
        main.policy.update(priority=True, priority_IS_weight=True)
        create.replay_buffer = dict(type='priority')
    if case in ('subprocess', 'envpool'):
        create.env_manager.type = case
    if case == 'norm_obs':
        main.env.norm_obs = dict(use_norm=True)
    if case == 'discrete':
        del main.policy.model['obs_shape'], main.policy.model['action_shape']
        create.env.type, create.policy.type = 'cartpole', 'discrete_sac'
    calls = {'act': 0, 'gather': 0, 'own': 0, 'inside': False}
    from ding_lite.data.seed_buffers import SeedBuffers
    from policy_zoo.base_policy import Policy
    for cls, name, key in ((SeedAxis, 'act', 'act'), (SeedBuffers, 'sample', 'gather'),
                           (Policy, '_forward_eval_batch', 'own'), (Policy, '_collect_act', 'own')):
        def counted(*args, _original=getattr(cls, name), _key=key, **kwargs):
            if _key != 'own' or (calls['act'] and not calls['inside']):  # a seed's own forward once training began
                calls[_key] += 1
            calls['inside'] = calls['inside'] or _key == 'act'
            try:
                return _original(*args, **kwargs)
            finally:
                calls['inside'] = calls['inside'] and _key != 'act'
        monkeypatch.setattr(cls, name, counted)
    policies = serial_pipeline((main, create), seed=[0, 1], max_env_step=120)
    assert calls['act'] > 0 and calls['gather'] > 0 and calls['own'] == 0
    if case == 'priority':  # each seed's priorities, set by its own TD errors, in its own buffer file
        from ding_lite.utils.checkpoint import load_file
        priorities = []
        for seed in (0, 1):
            ckpt = tmp_path / f'priority_seed{seed}' / 'ckpt'
            buffer = load_file(str(ckpt / load_checkpoint(str(ckpt / 'ckpt_last.pth.tar'))['buffer_file']), 'buffer')
            priorities.append(buffer['replay_buffer']['extra']['priority'])
            assert (priorities[-1] != 1).any()  # moved from the initial priority
        assert not torch.equal(*priorities)
    if case == 'discrete':
        assert all(p._collect_envstep > 0 for p in policies)
    if case == 'norm_obs':  # every collected observation, warm-up included, of the seed's own envs
        norms = [p.model.obs_norm for p in policies]
        assert [int(n.count) for n in norms] == [120, 120] and not torch.equal(norms[0].mean, norms[1].mean)


def test_the_stacked_update_goes_through_a_captured_step_as_the_seeds_batch(monkeypatch):
    """``learn.cuda_graph`` with many seeds: the lead's update is captured once for all seeds; the captured step
    gets the seeds' ``Fields`` (vmapped over the seed axis) and gives what the eager stacked update gives (a stand-in
    graph on the CPU; the real capture is in tests/test_cuda.py)."""
    from tests.ding_lite.test_cuda_graph import _Recorded
    monkeypatch.setattr('policy_zoo.sac.tanh_gaussian_sample', lambda mu, sigma: (torch.tanh(mu + 0.5 * sigma),
                                                                                   (-sigma.log() - 0.125).sum(-1)))
    torch.manual_seed(0)
    seeds = [create_policy(_policy_cfg('sac')) for _ in range(2)]
    twins = [create_policy(_policy_cfg('sac'), model=copy.deepcopy(p.model)) for p in seeds]
    graphed, eager = SeedAxis(seeds), SeedAxis(twins)
    graphed.lead._update = _Recorded(graphed.lead._update, torch.device('cpu'), 'the update', warmup=0)
    for step in range(4):  # the capture, then replays
        batches = [_batch(False) for _ in range(2)]
        torch.testing.assert_close(graphed.forward(batches), eager.forward(batches))
    assert len(graphed.lead._update._graphs) == 1
    for k in range(2):
        torch.testing.assert_close(_learn_tensors(seeds[k]), _learn_tensors(twins[k]))


@pytest.mark.parametrize('processes', ['subprocess', 'shared_memory'])
def test_seeds_in_env_processes_step_at_once_and_collect_what_in_process_envs_collect(tmp_path, monkeypatch,
                                                                                      processes):
    """Two seeds with envs in processes (one per env, or workers of a batch each): at each env step (warm-up,
    collection, evaluation) every seed's envs get their actions before any seed's step is gathered, so the seeds'
    env processes step at once; the run is the run with envs in the learner's process (buffers and evaluations
    alike)."""
    from ding_lite.registry import ENV_MANAGER_REGISTRY
    manager_cls = ENV_MANAGER_REGISTRY.get(processes)
    events, begin = [], manager_cls.step_batch_begin

    def logged(self, env_ids, actions):
        events.append(('begin', id(self)))
        finish = begin(self, env_ids, actions)
        return lambda: events.append(('end', id(self))) or finish()
    monkeypatch.setattr(manager_cls, 'step_batch_begin', logged)
    results = []
    for manager in (processes, 'base'):
        main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
        main.exp_name, create.env_manager.type = str(tmp_path / manager), manager
        policies = serial_pipeline((main, create), seed=[0, 1], max_env_step=80)
        results.append(([open(tmp_path / f'{manager}_seed{k}' / 'log' / 'evaluator.csv').read().splitlines()
                         for k in (0, 1)], [p.model.state_dict() for p in policies]))
    managers = {m for _, m in events}
    assert len(managers) == 4  # each seed's collector and evaluator
    pairs = [(a, b) for a, b in zip(events, events[1:]) if a[0] == b[0] == 'begin']
    assert all(a[1] != b[1] for a, b in pairs)
    collectors = {events[0][1], events[1][1]}  # the warm-up's: the first to step
    assert len(collectors) == 2 and len([p for p in pairs if p[0][1] in collectors]) == 80 // 2  # every step
    assert len(pairs) > 80 // 2  # and the evaluations'
    (csv_sub, models_sub), (csv_base, models_base) = results
    assert [[r.split(',')[:2] + r.split(',')[3:] for r in c] for c in csv_sub] == \
        [[r.split(',')[:2] + r.split(',')[3:] for r in c] for c in csv_base]  # all but the wall time
    for a, b in zip(models_sub, models_base):
        for key in a:
            assert torch.equal(a[key], b[key]), key


def test_the_seeds_batches_go_into_their_buffers_in_one_push_as_their_own_pushes_would(tmp_path, monkeypatch):
    """Two seeds sharing buffer tensors: each round's batches go in with one push for both seeds (a copy per field, not
    per seed and field), and the run is the run of one push per seed (evaluations, weights bit for bit)."""
    from ding_lite.data.seed_buffers import SeedBuffers
    calls, push_all = [], SeedBuffers.push_all
    monkeypatch.setattr(SeedBuffers, 'push_all', lambda self, batches: calls.append(push_all(self, batches)) or
                        calls[-1])
    results = []
    for joint in (True, False):
        if not joint:
            monkeypatch.setattr(SeedBuffers, 'push_all', lambda self, batches: False)  # each seed pushes its own
        main, create = EasyDict(copy.deepcopy(TINY_PENDULUM)), EasyDict(copy.deepcopy(TINY_CREATE))
        main.exp_name = str(tmp_path / ('joint' if joint else 'apart'))
        policies = serial_pipeline((main, create), seed=[0, 1], max_env_step=120)
        csvs = [open(f'{main.exp_name}_seed{k}/log/evaluator.csv').read().splitlines() for k in (0, 1)]
        results.append(([[r.split(',')[:2] + r.split(',')[3:] for r in c] for c in csvs],  # all but the wall
                        [p.model.state_dict() for p in policies]))
    assert calls and all(calls)
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        assert all(torch.equal(a[key], b[key]) for key in a)


def test_the_seeds_forwards_go_through_a_captured_step_each_as_the_eager_ones(monkeypatch):
    """``learn.cuda_graph`` with many seeds: the collect and eval forwards of the axis are captured once each (a
    stand-in graph on the CPU; the real capture is in tests/test_cuda.py) and give the eager forwards' results."""
    import functools
    from tests.ding_lite.test_cuda_graph import _Recorded
    monkeypatch.setattr('entry.pipeline.seed_axis.CudaGraphStep', functools.partial(_Recorded, warmup=0))
    torch.manual_seed(0)
    seeds = [create_policy(_policy_cfg('sac')) for _ in range(2)]
    twins = [create_policy(_policy_cfg('sac'), model=copy.deepcopy(p.model)) for p in seeds]
    graphed, eager = SeedAxis(seeds), SeedAxis(twins)
    graphed._graphs = {}  # as on a GPU with learn.cuda_graph
    for step in range(3):  # the capture, then replays
        obs = [torch.randn(2, 3), torch.randn(2, 3)]
        for mode, key in (('eval', 'action'), ('collect', 'logit')):
            torch.testing.assert_close([o[key] for o in graphed.act(mode, obs)], [o[key] for o in eager.act(mode, obs)])
    assert set(graphed._graphs) == {'eval', 'collect'} and all(len(s._graphs) == 1 for s in graphed._graphs.values())


def test_a_config_file_is_read_once_and_each_seed_compiled_once(tmp_path, monkeypatch):
    """A config file is code: a run of many seeds runs it once (its side effects once), each seed its own copy,
    compiled once (the first seed's compile for the stacking check is its run's)."""
    from entry.kit import config_input
    compiles, compile_config = [], config_input.compile_config
    monkeypatch.setattr(config_input, 'compile_config', lambda *a, **k: compiles.append(k['seed']) or
                        compile_config(*a, **k))
    counter = tmp_path / 'reads.txt'
    main = dict(copy.deepcopy(TINY_PENDULUM), exp_name=str(tmp_path / 'once'))
    (tmp_path / 'once_config.py').write_text(
        f"open({str(counter)!r}, 'a').write('read\\n')\nmain_config = {main!r}\ncreate_config = {TINY_CREATE!r}\n")
    policies = serial_pipeline(str(tmp_path / 'once_config.py'), seed=[0, 1], max_env_step=40)
    assert len(policies) == 2 and counter.read_text() == 'read\n' and sorted(compiles) == [0, 1]
    assert all((tmp_path / f'once_seed{seed}' / 'ckpt' / 'ckpt_last.pth.tar').is_file() for seed in (0, 1))


def test_seeds_whose_optimizers_stand_apart_train_one_after_another(capsys):
    """Rows whose parameters were reset at different env steps (their Adam counts differ) cannot share an update:
    the group says so once and each seed learns through its own forward, not a crash."""
    from types import SimpleNamespace
    from entry.pipeline.seed_group import SeedGroup
    policies = [create_policy(_policy_cfg('sac')) for _ in range(2)]
    policies[0]._forward_learn(_batch(False))  # one step: Adam's count 1 against the other's 0
    policies[0].learn_steps = 0
    runs = [SimpleNamespace(policy=p, learner=SimpleNamespace(policy=SimpleNamespace(forward=p._forward_learn)))
            for p in policies]
    group = SeedGroup(runs)
    assert group.update(runs, [_batch(False), _batch(False)]) == [None, None]
    assert all(run.learner.policy.forward == run.own_forward for run in runs)
    group.unstack()
    group.update(runs, [_batch(False), _batch(False)])
    assert capsys.readouterr().out.count('the seeds now train one after another') == 1
