"""The ``ding_lite`` command line: ``ding_lite -m serial -c CONFIG.py -s 0``."""
from __future__ import annotations

import argparse
import sys

MODES = ('serial', 'eval')


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ding_lite', description='Train or evaluate a ding_lite config.')
    parser.add_argument('-m', '--mode', required=True, choices=MODES, help='what to run')
    parser.add_argument('-c', '--config', required=True, help='config file (.py with main_config/create_config)')
    parser.add_argument('-s', '--seed', type=int, default=0, help='random seed (default 0)')
    parser.add_argument('--max-env-step', type=_positive_int, default=int(1e10), help='stop after N env steps')
    parser.add_argument('--max-train-iter', type=_positive_int, default=int(1e10),
                        help='stop after N train iterations')
    parser.add_argument('--load-path', default=None, help='checkpoint to evaluate (mode eval)')
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.mode == 'serial':
        from .serial_entry import serial_pipeline
        serial_pipeline(args.config, seed=args.seed, max_env_step=args.max_env_step,
                        max_train_iter=args.max_train_iter)
    elif args.mode == 'eval':
        from .application import eval
        eval(args.config, seed=args.seed, load_path=args.load_path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
