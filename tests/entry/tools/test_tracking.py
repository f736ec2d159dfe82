"""Experiment tracking: ``--track`` sends the evaluation returns (every scalar tensorboard gets) and the config to
Weights & Biases, offline here, and a resumed run continues the same W&B run."""
from __future__ import annotations

import csv
import glob
import json
import os
import pprint
import struct
import subprocess

import pytest

from tests.conftest import TINY_CREATE, TINY_PENDULUM

pytest.importorskip('wandb', reason="tracking needs wandb: pip install 'ding-lite[track]'")


def _records(path: str) -> list:
    """The protobuf records of an offline run's ``.wandb`` file (a LevelDB-style log of 32 KiB blocks)."""
    from wandb.proto import wandb_internal_pb2
    data, records, pending, pos = open(path, 'rb').read(), [], b'', 7  # after the ':W&B' file header
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a record header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack('<IHB', data[pos:pos + 7])
        pending, pos = pending + data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b''
        elif kind == 0:
            break
    return records


def _history(run_dir: str, key: str) -> list[float]:
    values = []
    for record in _records(glob.glob(os.path.join(run_dir, 'run-*.wandb'))[0]):
        if record.WhichOneof('record_type') == 'history':
            values += [float(json.loads(item.value_json)) for item in record.history.item
                       if (item.key or '/'.join(item.nested_key)) == key]
    return values


def test_track_sends_the_evaluations_offline_and_a_resume_continues_the_run(tmp_path):
    main_cfg = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'tracked'))
    path = tmp_path / 'cfg.py'
    path.write_text(f"main_config = {pprint.pformat(main_cfg)}\ncreate_config = {pprint.pformat(TINY_CREATE)}\n")
    env = {**os.environ, 'WANDB_MODE': 'offline', 'WANDB_SILENT': 'true', 'WANDB_CONFIG_DIR': str(tmp_path / 'cfg'),
           'WANDB_CACHE_DIR': str(tmp_path / 'cache'), 'WANDB_DATA_DIR': str(tmp_path / 'data')}
    for extra in (['--max-train-iter', '20'], ['--resume', '--max-train-iter', '40']):
        run = subprocess.run(['ding_lite', '-m', 'serial', '-c', str(path), '--track', *extra], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
    run_id = (tmp_path / 'tracked' / 'log' / 'wandb_run_id').read_text().strip()
    runs = sorted(glob.glob(str(tmp_path / 'tracked' / 'wandb' / 'offline-run-*')))
    assert len(runs) == 2 and all(run.endswith(f'-{run_id}') for run in runs)  # one W&B run, continued
    rows = list(csv.DictReader(open(tmp_path / 'tracked' / 'log' / 'evaluator.csv')))
    logged = _history(runs[0], 'evaluator/return_mean') + _history(runs[1], 'evaluator/return_mean')
    assert logged == pytest.approx([float(row['return_mean']) for row in rows], abs=1e-3) and len(rows) >= 4
    records = _records(glob.glob(os.path.join(runs[0], 'run-*.wandb'))[0])
    config = {item.key: json.loads(item.value_json) for r in records if r.WhichOneof('record_type') == 'run'
              for item in r.run.config.update}
    assert config['exp_name'] == str(tmp_path / 'tracked') and config['policy']['learn']['batch_size'] == 16
    assert not (tmp_path / 'wandb').exists()  # everything inside the run's folder


def test_tracking_without_wandb_is_a_clear_error(tmp_path, monkeypatch):
    import sys
    from entry import serial_pipeline
    monkeypatch.setitem(sys.modules, 'wandb', None)
    main_cfg = dict(TINY_PENDULUM, exp_name=str(tmp_path / 'untracked'), logger=dict(wandb=dict(project='p')))
    with pytest.raises(ImportError, match=r"experiment tracking \(logger.wandb, --track\) needs wandb: pip install"):
        serial_pipeline((main_cfg, TINY_CREATE), max_train_iter=2)
    assert not (tmp_path / 'untracked').exists()
