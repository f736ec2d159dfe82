"""ML-Agents' environment parameters: lessons that move on the run's progress or its returns (the env made with
the new value from each env's next episode), samplers drawn per episode, resume points that keep the lesson."""
from __future__ import annotations

import copy
import csv
import subprocess

import gymnasium as gym
import pytest

from ding_lite.config import ConfigError, compile_config
from entry import serial_pipeline
from tests.conftest import TINY_CREATE, TINY_PENDULUM
from tests.tb_events import read_scalars

EPISODES: list[tuple[str, float]] = []  # (which manager's env, its g) at each episode's start, in this process


class RecordGravity(gym.Wrapper):
    """Records the gravity each episode starts with, and reports it in ``info['g']``."""

    def reset(self, **kwargs):
        EPISODES.append((self.spec.kwargs.get('tag', ''), float(self.unwrapped.g)))
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, dict(info, g=float(self.unwrapped.g))


def _lessons(*values, measure='progress', threshold=0.5, **criteria):
    criteria = dict(measure=measure, threshold=threshold, **criteria)
    return {'curriculum': [{'name': f'L{k}', 'value': v, **({'completion_criteria': criteria} if k < len(values) - 1
                                                             else {})} for k, v in enumerate(values)]}


def _cfg(tmp_path, g, **env):
    main = copy.deepcopy(dict(TINY_PENDULUM, exp_name=str(tmp_path / 'run')))
    main['env'].update(environment_parameters={'g': g}, info_metrics=['g'],
                       wrappers=[f'{__name__}.RecordGravity'], **env)
    main['policy']['collect']['collector'] = dict(collect_print_freq=1)
    return main, copy.deepcopy(TINY_CREATE)


def test_a_progress_lesson_moves_at_its_threshold_and_the_envs_are_made_with_its_value_from_then_on(tmp_path):
    EPISODES.clear()
    main, create = _cfg(tmp_path, _lessons(2.0, 9.0, threshold=0.5))
    serial_pipeline((main, create), seed=0, max_env_step=200)
    scalars = read_scalars(f"{main['exp_name']}/log/serial")
    moved = [step for step, lesson in scalars['curriculum/g/lesson'] if lesson == 1]
    assert moved and 100 < moved[0] <= 108  # the first check past half the budget (2 envs x 4 samples a round)
    assert [v for _, v in scalars['curriculum/g/lesson']] == sorted(v for _, v in scalars['curriculum/g/lesson'])
    gs = [g for _, g in EPISODES]
    first = gs.index(9.0)
    assert set(gs[:first]) == {2.0} and set(gs[first:]) == {9.0}  # no episode of the old value after the new
    ended = dict(scalars['collector/g'])
    assert ended[max(ended)] == 9.0 and ended[min(ended)] == 2.0
    log = open(f"{main['exp_name']}/log/collector.txt").read()
    assert "curriculum: g moves to lesson 1 'L1' (9.0)" in log


def test_a_sampler_gives_each_episode_its_own_value_and_each_evaluation_the_same(tmp_path):
    EPISODES.clear()
    sampler = dict(sampler_type='uniform', sampler_parameters=dict(min_value=4.0, max_value=12.0))
    main, create = _cfg(tmp_path, sampler, env_kwargs=dict(max_episode_steps=20))
    main['env']['evaluator_env_num'] = 1
    serial_pipeline((main, create), seed=0, max_train_iter=25)
    gs = [g for _, g in EPISODES]
    assert len(gs) >= 8 and all(4.0 <= g <= 12.0 for g in gs) and len(set(gs)) > len(gs) // 2
    rows = [float(row['g']) for row in csv.DictReader(open(f"{main['exp_name']}/log/evaluator.csv"))]
    assert len(rows) >= 2 and len(set(rows)) == 1  # evaluations draw the same values each time


def test_a_reward_lesson_and_its_resume_point_keep_the_new_value(tmp_path):
    main, create = _cfg(tmp_path, _lessons(2.0, 9.0, measure='reward', threshold=-1e9, min_lesson_length=2))
    serial_pipeline((copy.deepcopy(main), create), seed=0, max_env_step=120)
    serial_pipeline((main, create), seed=0, max_env_step=240, resume=True)
    moves = [line for line in open(f"{main['exp_name']}/log/collector.txt") if 'curriculum:' in line]
    assert len(moves) == 1 and int(moves[0].split()[-1]) <= 60  # after 2 episodes of 20 steps, and only then
    scalars = read_scalars(f"{main['exp_name']}/log/serial")
    assert {v for step, v in scalars['curriculum/g/lesson'] if step > 120} == {1.0}
    after = [g for step, g in scalars['collector/g'] if step > 140]
    assert after and set(after) == {9.0}


@pytest.mark.parametrize('spec, message', [
    ({'g': {'sampler_type': 'normal', 'sampler_parameters': {}}}, "sampler_type: one of"),
    ({'g': {'curriculum': [{'value': 1.0}, {'value': 2.0}]}}, "completion_criteria is needed"),
    ({'g': _lessons(1.0, 2.0, measure='time')}, "measure must be one of"),
    ({'g': _lessons(1.0, 2.0, require_reset=True)}, "require_reset=True"),
    ({'g': {'sampler_type': 'uniform', 'sampler_parameters': {'min_value': 1}}}, "missing \\['max_value'\\]"),
])
def test_a_bad_parameter_spec_is_refused_at_compile_time(tmp_path, spec, message):
    main, create = _cfg(tmp_path, 1.0)
    main['env']['environment_parameters'] = spec
    with pytest.raises(ConfigError, match=message):
        compile_config(main, create, save_cfg=False)


def test_a_progress_lesson_without_a_budget_is_refused_through_the_cli(tmp_path):
    main, create = _cfg(tmp_path, _lessons(2.0, 9.0))
    main['env'].pop('wrappers')
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {main!r}\ncreate_config = {create!r}\n")
    ran = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '-s', '0'], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode != 0 and 'lesson measured on progress' in ran.stderr and '--max-env-step' in ran.stderr
    assert not (tmp_path / 'run').exists()  # the refused run left no folder (the corrected run gets the name)


def test_a_keyword_the_env_does_not_take_is_named_before_anything_is_collected(tmp_path):
    main, create = _cfg(tmp_path, 1.0)
    main['env']['environment_parameters'] = {'gravity': 9.0}  # Pendulum's is g
    with pytest.raises(RuntimeError, match=r"environment_parameters \{'gravity': 9.0\}.*unexpected keyword"):
        serial_pipeline((main, create), seed=0, max_env_step=40)
    assert not (tmp_path / 'run' / 'ckpt').exists()


@pytest.mark.parametrize('name, refused', [('x_init', False), ('x_int', True)])
def test_a_reset_option_the_env_never_reads_is_named_before_anything_is_collected(tmp_path, name, refused):
    """Via 'reset' as via 'make': Pendulum's reset reads ``x_init``; a misspelt one is refused by name (it used to
    train without a word)."""
    main, create = _cfg(tmp_path, 1.0)
    main['env'].update(environment_parameters={name: 0.5}, environment_parameters_via='reset', info_metrics=[])
    if not refused:
        serial_pipeline((main, create), seed=0, max_env_step=40)
        return
    with pytest.raises(ConfigError, match=r"environment_parameters \['x_int'\] \(environment_parameters_via='reset'\)"
                                          r".*reset never read them"):
        serial_pipeline((main, create), seed=0, max_env_step=40)
    assert not (tmp_path / 'run' / 'ckpt').exists()


def test_an_evaluation_of_a_trained_run_acts_in_the_last_lesson(tmp_path):
    from entry import eval as evaluate
    EPISODES.clear()
    main, create = _cfg(tmp_path, _lessons(2.0, 9.0, measure='reward', threshold=1e9))
    serial_pipeline((copy.deepcopy(main), create), seed=0, max_env_step=80)  # never past its first lesson
    assert {g for _, g in EPISODES} == {2.0}
    EPISODES.clear()
    evaluate((main, create), seed=0, load_path=f"{main['exp_name']}/ckpt/ckpt_last.pth.tar")
    assert {g for _, g in EPISODES} == {9.0}
