"""The stacked seeds' learn statistics, summed for every seed in one pass (issue 71: each seed's bookkeeping in one
vectorised pass): each seed's logs are still the means of its own steps' outputs."""
from __future__ import annotations

import pytest
import torch

from ding_lite.worker import BaseLearner
from ding_lite.worker.step_sums import StackedSums, StepSums
from entry import serial_pipeline
from entry.pipeline.seed_group import SeedGroup
from tests.entry.pipeline.test_seeds import _seed_reward_config, registered  # noqa: F401 (a fixture)


def _sums(count: int, **values: float) -> StepSums:
    sums = StepSums()
    for _ in range(count):
        sums.add({key: torch.tensor(value) for key, value in values.items()})
    return sums


def test_stacked_sums_add_every_row_at_once_and_carry_each_seeds_sums_in_and_out():
    """Seeds with 2 steps summed each are stacked; one stacked add reaches every row (``priority`` left out, as a
    learner leaves it out); a row's take is its seed's sums and count, and its row starts again; release gives each
    seed its sums and count back."""
    own = [_sums(2, critic_loss=1.0, alpha=0.5), _sums(2, critic_loss=3.0, alpha=0.25)]
    stacked = StackedSums(own)
    stacked.add({'critic_loss': torch.tensor([10.0, 20.0]), 'alpha': torch.tensor([1.0, 2.0]),
                 'priority': torch.ones(2, 8)})
    for row in stacked.rows:
        row.add({'ignored': torch.tensor(1e9)})  # the learner's own add: counts the step, sums nothing
    assert [row.count for row in stacked.rows] == [3, 3]
    sums, count = stacked.rows[1].take()
    assert count == 3 and {k: float(v) for k, v in sums.items()} == {'critic_loss': 26.0, 'alpha': 2.5}
    assert stacked.rows[1].count == 0 and float(stacked.rows[1].sums['critic_loss']) == 0.0
    stacked.add({'critic_loss': torch.tensor([1.0, 2.0]), 'alpha': torch.tensor([0.0, 1.0])})
    for row in stacked.rows:
        row.add({})
    first, second = stacked.release()
    assert (first.count, {k: float(v) for k, v in first.sums.items()}) == (4, {'critic_loss': 13.0, 'alpha': 2.0})
    assert (second.count, {k: float(v) for k, v in second.sums.items()}) == (1, {'critic_loss': 2.0, 'alpha': 1.0})
    stacked.add({'critic_loss': torch.tensor([5.0, 5.0]), 'alpha': torch.tensor([5.0, 5.0])})
    assert float(first.sums['critic_loss']) == 13.0  # released: the seed's own tensors, no longer the rows


@pytest.mark.parametrize('log_every', [3, 7])
def test_each_stacked_seeds_logs_are_the_means_of_its_own_steps(tmp_path, registered, monkeypatch, log_every):
    """Seeds 0, 1 and 500 in one run, logging every ``log_every`` learn steps; seed 500 stops at its stop value
    (the others' sums leave the stacked rows then, mid-interval where 7 does not divide its last step). Every log
    line of every seed is the mean of the outputs its learner's steps returned since its previous log."""
    steps: dict[str, list[dict]] = {}
    logged: list[tuple[str, int, dict, list[dict]]] = []
    stacked_adds = []
    train, log, update = BaseLearner.train, BaseLearner.log, SeedGroup.update

    def spy_train(self, data, envstep=-1):  # each step's output as the learner gets it (its log hook runs after)
        forward = self._policy.forward

        def recorded(batch):
            output = forward(batch)
            steps.setdefault(self.exp_name, []).append({k: v.clone() for k, v in output.items() if k != 'priority'})
            return output
        self._policy.forward = recorded
        try:
            return train(self, data, envstep)
        finally:
            self._policy.forward = forward

    def spy_log(self):
        pending = steps.pop(self.exp_name, [])
        result = log(self)
        if pending:
            logged.append((self.exp_name, self.train_iter, dict(result), pending))
        return result

    def spy_update(self, runs, batches):
        stacked_adds.append(len(runs))
        return update(self, runs, batches)
    monkeypatch.setattr(BaseLearner, 'train', spy_train)
    monkeypatch.setattr(BaseLearner, 'log', spy_log)
    monkeypatch.setattr(SeedGroup, 'update', spy_update)
    main, create = _seed_reward_config(tmp_path, registered)
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=log_every))
    serial_pipeline((main, create), seed=[0, 1, 500], max_env_step=160)
    assert 3 in stacked_adds and 2 in stacked_adds  # stacked with three seeds, then with two
    assert {name for name, *_ in logged} == {str(tmp_path / f'run_seed{seed}') for seed in (0, 1, 500)}
    for name, train_iter, result, pending in logged:
        keys = list(pending[0])
        expected = torch.stack([torch.stack([step[k].float() for k in keys]) for step in pending]).sum(0)
        expected = dict(zip(keys, expected.div(len(pending)).tolist()))
        assert {k: result[k] for k in keys} == pytest.approx(expected, rel=1e-6, abs=1e-7), (name, train_iter)
