"""Read what a run wrote to tensorboard (tensorboardX's event files, without the tensorboard package)."""
from __future__ import annotations

import os
import struct
from collections import defaultdict
from typing import Iterator

from tensorboardX.proto import event_pb2


def _events(logdir: str) -> Iterator[event_pb2.Event]:
    for name in sorted(os.listdir(logdir)):
        if not name.startswith('events.out.tfevents'):
            continue
        with open(os.path.join(logdir, name), 'rb') as f:
            data = f.read()
        offset = 0
        while offset + 12 <= len(data):  # a record: u64 length, u32 crc, payload, u32 crc
            (length,) = struct.unpack('<Q', data[offset:offset + 8])
            yield event_pb2.Event.FromString(data[offset + 12:offset + 12 + length])
            offset += 12 + length + 4


def read_scalars(logdir: str) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` over every event file in ``logdir``, in the order written."""
    scalars: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for event in _events(logdir):
        for value in event.summary.value:
            if value.HasField('simple_value'):
                scalars[value.tag].append((event.step, value.simple_value))
    return dict(scalars)


def read_histogram_tags(logdir: str) -> set[str]:
    """The tags of the histograms in ``logdir``'s event files."""
    return {value.tag for event in _events(logdir) for value in event.summary.value if value.HasField('histo')}
