"""Parameter resets in runs: logged with their env step, visible in the optimizers' state, exact across a resume on
either side of a reset, and refused where no env steps are taken."""
from __future__ import annotations

import pytest
import torch

from ding_lite.config import ConfigError
from entry import serial_pipeline
from tests.entry.pipeline.test_resume import _cfg, _crash_at, _returns, _same_params


def _resetting(exp_dir, resets=(60,)):
    main, create = _cfg(exp_dir)
    main.policy.learn.param_resets = list(resets)
    return main, create


def test_a_reset_is_logged_with_its_env_step_and_starts_the_optimizers_again(tmp_path):
    serial_pipeline(_resetting(tmp_path / 'run'), seed=0, max_train_iter=40)
    learner = (tmp_path / 'run' / 'log' / 'learner.txt').read_text()
    line = next(line for line in learner.splitlines() if 'parameter reset 1 at env step' in line)
    envstep = int(line.split('at env step ')[1].split(':')[0])
    assert 60 <= envstep < 70 and 'parameter reset' in (tmp_path / 'run' / 'log' / 'summary.txt').read_text()
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
    steps = {int(s['step']) for s in state['optimizer_q']['state'].values()}
    reset_iter = int(line.split('iter ')[1].split(' ')[0])
    assert steps == {40 - reset_iter} and state['param_resets_done'] == 1  # Adam's count since the reset


@pytest.mark.parametrize('crash', [10, 30])  # a kill before the reset (at iteration 8) and one after it
def test_a_resume_on_either_side_of_a_reset_matches_the_uninterrupted_run(tmp_path, monkeypatch, crash):
    straight = serial_pipeline(_resetting(tmp_path / 'straight'), seed=0, max_train_iter=40)
    with monkeypatch.context() as patch:
        _crash_at(patch, crash)
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(_resetting(tmp_path / 'crashed'), seed=0, max_train_iter=40)
    resumed = serial_pipeline(_resetting(tmp_path / 'crashed'), seed=0, max_train_iter=40, resume=True)
    assert _same_params(straight, resumed) and _returns(tmp_path / 'crashed') == _returns(tmp_path / 'straight')
    resumed_part = (tmp_path / 'crashed' / 'log' / 'learner.txt').read_text().split('resumed the run from')[-1]
    # from a resume point before the reset (iteration 7) the reset comes once more; after it (28), not again
    assert resumed_part.count('parameter reset 1 at env step') == (1 if crash == 10 else 0)
    assert resumed.learn_mode.state_dict()['param_resets_done'] == 1


def test_stacked_seeds_reset_inside_their_one_update_and_a_resume_past_the_reset_keeps_it(tmp_path, monkeypatch,
                                                                                          capsys):
    """Two seeds: every learn step, the reset's included, is one stacked update; each seed logs its reset once (not
    again after a resume from past it) and its Adam counts the steps since."""
    from entry.pipeline.seed_axis import SeedAxis
    stacked, forward = [], SeedAxis.forward
    monkeypatch.setattr(SeedAxis, 'forward', lambda self, batches: stacked.append(1) or forward(self, batches))
    with monkeypatch.context() as patch:
        _crash_at(patch, 30)
        with pytest.raises(KeyboardInterrupt):
            serial_pipeline(_resetting(tmp_path / 'run'), seed=[0, 1], max_train_iter=40)
    serial_pipeline(_resetting(tmp_path / 'run'), seed=[0, 1], max_train_iter=40, resume=True)
    assert 'one after another' not in capsys.readouterr().out
    for seed in (0, 1):
        learner = (tmp_path / f'run_seed{seed}' / 'log' / 'learner.txt').read_text()
        before, after = learner.split('resumed the run from')
        line = next(line for line in before.splitlines() if 'parameter reset 1 at env step' in line)
        assert 60 <= int(line.split('at env step ')[1].split(':')[0]) < 70 and 'parameter reset' not in after
        state = torch.load(tmp_path / f'run_seed{seed}' / 'ckpt' / 'ckpt_last.pth.tar', weights_only=True)
        reset_iter = int(line.split('iter ')[1].split(' ')[0])
        assert {int(s['step']) for s in state['optimizer_q']['state'].values()} == {40 - reset_iter}
        assert state['param_resets_done'] == 1
    resumed_at = int(after.split('iteration ')[1].split(',')[0])
    assert len(stacked) == 30 + 40 - resumed_at  # (the 30th raised inside its stacked update)


def test_the_overlapped_collectors_snapshot_acts_with_the_reset_weights(tmp_path, monkeypatch):
    """With collection overlapped, the child's copy is synced from the model's own tensors after the reset too (a
    reset loads in place: the weights the child acts with are the fresh ones)."""
    from ding_lite.worker import overlapped_collector
    synced, sync = [], overlapped_collector.OverlappedCollector._sync_weights

    def recorded(self):
        sync(self)
        live = overlapped_collector._synced_tensors(self._policy.model)
        synced.append((self._policy.resets.done, all(a.data_ptr() == b.data_ptr() and torch.equal(a, c)
                                                     for a, b, c in zip(live, self._live, self._shared))))
    monkeypatch.setattr(overlapped_collector.OverlappedCollector, '_sync_weights', recorded)
    main, create = _resetting(tmp_path / 'overlap')
    main.policy.collect.overlap = True
    serial_pipeline((main, create), seed=0, max_train_iter=40)
    assert {done for done, _ in synced} == {0, 1} and all(same for _, same in synced)


def test_offline_training_refuses_resets_by_env_step(tmp_path):
    from entry.pipeline.offline import serial_pipeline_offline
    main, create = _resetting(tmp_path / 'offline')
    main.policy.learn.data_path = str(tmp_path / 'none.pkl')
    with pytest.raises(ConfigError, match=r"param_resets.*offline training takes none"):
        serial_pipeline_offline((main, create), seed=0, max_train_iter=5)
