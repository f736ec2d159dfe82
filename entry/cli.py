"""The ``ding_lite`` command line: ``ding_lite -m serial -c CONFIG.py -s 0``."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import traceback
from typing import Any

MODES = {  # ding_lite -m MODE -c CONFIG ...
    'serial': 'train the config serially (collect, learn, evaluate in one process)',
    'parallel': 'train with collector and evaluator actors on Ray (parallel.ray_address: a cluster)',
    'eval': 'evaluate a checkpoint (--load-path) over the config\'s evaluation episodes',
    'collect_demo': 'write demonstrations of a trained policy (--load-path, --expert-data-path, --collect-count)',
    'serial_sqil': 'train with SQIL from demonstrations (--expert-data-path or --expert-config)',
    'offline': 'train from policy.learn.data_path alone, no env step (--max-train-iter), evaluating in the env',
}
TOOLS = {  # ding_lite TOOL ...: commands beside the training modes
    'tune': "a hyperparameter search with Optuna, trials stacked as rows of one run (-c CONFIG --max-env-step N)",
    'bench': "configs x seeds as benchmarks (-c CFG ... or --suite FILE): results.csv/.md with IQMs, curves",
    'plot': 'learning curves of runs from their evaluator.csv',
    'summary': "a table of runs' last evaluations: IQM, mean and median over seeds with bootstrap intervals",
    'list': 'the registered policies, models, envs, env managers, buffers and wrappers',
    'config': "a registered class's default config, every key explained (e.g. ding_lite config sac)",
    'zoo': 'the ready configs of dizoo_configs/ with their expected results',
    'capabilities': 'what works with what: every feature by pipeline and by policy, and the pairs refused',
    'export': "a run's eval actor as TorchScript, normalisation and action scaling included (torch.jit.load)",
}


def _epilog() -> str:
    width = max(map(len, [*MODES, *TOOLS]))
    modes = '\n'.join(f"  -m {name:<{width}}  {text}" for name, text in MODES.items())
    tools = '\n'.join(f"  {name:<{width + 3}}  {text}" for name, text in TOOLS.items())
    return (f"modes (ding_lite -m MODE -c CONFIG ...):\n{modes}\n\n"
            f"tools (ding_lite TOOL ..., each with its own --help):\n{tools}")


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ding_lite', description='Train or evaluate a ding_lite config. '
                                     'Config files are Python and run as code: only use configs you trust.',
                                     epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('-m', '--mode', required=True, choices=list(MODES), help='what to run (see below)')
    parser.add_argument('-c', '--config', required=True, help='config file (.py with main_config/create_config)')
    parser.add_argument('-s', '--seed', type=int, default=None,
                        help="random seed (default: the config's own seed, as a saved total_config.py records, else 0)")
    parser.add_argument('--seeds', default=None, metavar='SEEDS',
                        help="serial / serial_sqil: train these seeds in one run, each in its own <exp_name>_seed<N>/ "
                             "folder: a range (0-4), a list (0,3,7) or both (0-2,9)")
    parser.add_argument('--exp-name', default=None,
                        help="the run's folder instead of the config's exp_name (whose _seed<K> ending follows -s)")
    parser.add_argument('--max-env-step', type=_positive_int, default=int(1e10), help='stop after N env steps')
    parser.add_argument('--max-train-iter', type=_positive_int, default=int(1e10),
                        help='stop after N train iterations')
    parser.add_argument('--resume', nargs='?', const=True, default=False, metavar='PATH',
                        help="serial / parallel / serial_sqil / offline: continue the newest complete checkpoint of "
                             "the config's exp_name (ckpt/latest), or the checkpoint or experiment folder PATH")
    parser.add_argument('--load-path', default=None, help='checkpoint to evaluate or to collect demonstrations with')
    parser.add_argument('--episodes', type=_positive_int, default=None,
                        help='eval: episodes to run (default: the config\'s n_evaluator_episode)')
    parser.add_argument('--replay-path', default=None,
                        help='eval: record each episode as a video under this folder (needs moviepy)')
    parser.add_argument('--expert-data-path', default=None,
                        help='demonstration file to write (collect_demo) or to learn from (serial_sqil)')
    parser.add_argument('--expert-config', default=None, help='serial_sqil without a file: an expert config '
                        'whose policy.collect.model_path checkpoint collects demonstrations online')
    parser.add_argument('--collect-count', type=_positive_int, default=None, help='transitions to collect')
    parser.add_argument('--demo-sampled', action='store_true',
                        help="collect_demo sampling from the expert's distribution (no exploration schedule) "
                             "instead of its deterministic actions")
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE', dest='overrides',
                        help='change one config value, repeatable: --set policy.learn.batch_size=512 --set '
                             'create.env_manager.type=subprocess (a Python literal; checked as the file\'s keys)')
    parser.add_argument('--track', action='store_true',
                        help="send the run to Weights & Biases (logger.wandb; WANDB_MODE=offline works without a "
                             "network); needs pip install 'ding-lite[track]'")
    parser.add_argument('--debug', action='store_true', help='show the full traceback of an error')
    return parser


def build_tool_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='ding_lite', description='Tools around runs and configs.')
    tools = parser.add_subparsers(dest='tool', required=True)
    plot = tools.add_parser('plot', help=TOOLS['plot'],
                            description='Each experiment (run folders named alike but for _seed<K>) is drawn as its '
                                        'mean evaluation return over seeds with a shaded band.')
    plot.add_argument('exp_dirs', nargs='+', metavar='EXP_DIR', help='run folders (exp_name) to draw')
    plot.add_argument('-o', '--output', default='curve.png', help='image file to write (default: curve.png)')
    plot.add_argument('--x', default='envstep', choices=('envstep', 'wall_time', 'train_iter'), help='x axis')
    plot.add_argument('--y', default='return_mean', metavar='COLUMN',
                      help="evaluator.csv column to draw: return_mean (default), success_rate or another info metric")
    plot.add_argument('--band', default='minmax', choices=('minmax', 'std'),
                      help='shade between the seeds\' min and max, or one std around the mean')
    plot.add_argument('--title', default=None)
    plot.add_argument('--aggregate', default=None, choices=('iqm', 'mean', 'median', 'optimality_gap'),
                      help="draw this aggregate over seeds (rliable's) with its stratified bootstrap 95%% interval "
                           "instead of the mean and band")
    plot.add_argument('--gamma', type=float, default=None,
                      help='optimality_gap: the score to reach (e.g. the stop value)')
    plot.add_argument('--profile', action='store_true',
                      help="draw performance profiles instead of curves: the fraction of each experiment's runs "
                           "whose last evaluation is above each score, with a 95%% bootstrap band")
    summary = tools.add_parser('summary', help=TOOLS['summary'],
                               description="Each experiment's runs (folders named alike but for _seed<K>) scored by "
                                           "their last evaluation, aggregated with 95% stratified bootstrap "
                                           "intervals (rliable's method).")
    summary.add_argument('exp_dirs', nargs='+', metavar='EXP_DIR', help='run folders (exp_name)')
    summary.add_argument('--y', default='return_mean', metavar='COLUMN', help='evaluator.csv column to score')
    summary.add_argument('--gamma', type=float, default=None, help='also the optimality gap to this score')
    listing = tools.add_parser('list', help=TOOLS['list'])
    listing.add_argument('kind', nargs='?', default=None,
                         help='policies, models, envs, env_managers, buffers or wrappers (default: all)')
    config = tools.add_parser('config', help=TOOLS['config'])
    config.add_argument('name', help="e.g. sac, pendulum, subprocess, priority, continuous_qac, parallel")
    config.add_argument('--kind', default=None, help='policy, env, env_manager, buffer or model, where NAME is '
                                                     'registered as several')
    zoo = tools.add_parser('zoo', help=TOOLS['zoo'])
    capabilities = tools.add_parser('capabilities', help=TOOLS['capabilities'],
                                    description='The tables of docs/compose.md, drawn from the declarations the '
                                                'compile-time check reads.')
    export = tools.add_parser('export', help=TOOLS['export'])
    export.add_argument('run', metavar='RUN', help='a run folder, or a checkpoint file in its ckpt/')
    export.add_argument('-o', '--output', default='actor.pt', help='file to write (default: actor.pt)')
    export.add_argument('--checkpoint', default='ckpt_best.pth.tar', help="the run's checkpoint (default: best)")
    tune = tools.add_parser('tune', help=TOOLS['tune'],
                            description="Optuna's search over the config's hyperparameters (its tune.space, a --space "
                                        "file, or learning rate, gamma and tau after rl-zoo's sampler). Trials that "
                                        "keep the networks' shapes run --stack at a time as the rows of one run, each "
                                        "with its own hyperparameters; a median pruner stops the rows that fall "
                                        "behind. Each trial writes <name>_tune/trial_<n>/; the best one's config "
                                        "is written as <name>_tune/best_config.py.")
    tune.add_argument('-c', '--config', required=True, help='the config file to search around')
    tune.add_argument('--max-env-step', type=int, required=True, help="each trial's budget in env steps")
    tune.add_argument('--n-trials', type=int, default=16, help='trials in the search (a resumed one counts its own)')
    tune.add_argument('--stack', type=int, default=4, help='trials run together as rows of one run (default 4)')
    tune.add_argument('--timeout', type=float, default=None, help='start no trial after this many seconds')
    tune.add_argument('--storage', default=None,
                      help='an Optuna storage URL (sqlite:///search.db): a stopped search resumes from it')
    tune.add_argument('--study-name', default=None, help='the study in the storage (default: <name>_tune)')
    tune.add_argument('--space', default=None, help='a .json or .py (space = {...}) search space')
    tune.add_argument('--pruner', default='median', choices=('median', 'none'))
    tune.add_argument('-s', '--seed', type=int, default=0, help="every trial's seed, and the sampler's")
    tune.add_argument('--ray', nargs='?', const=os.environ.get('RAY_ADDRESS') or '', default=None,
                      metavar='ADDRESS', help="the stacked groups of trials as Ray tasks on the cluster at ADDRESS "
                      "(default: RAY_ADDRESS; 'local': a Ray on this machine), sharing the study through --storage")
    bench = tools.add_parser('bench', help=TOOLS['bench'],
                             description="Each config's seeds train as one run (stacked where the policy stacks) in "
                                         "OUT/<name>/<name>_seed<k>/; the same command again skips the finished "
                                         "configs and resumes the unfinished from their resume points. Writes "
                                         "OUT/results.csv and results.md (IQM of the final evaluations with its 95% "
                                         "stratified-bootstrap interval, mean, median, env steps to the stop value, "
                                         "wall time, env steps/s, reference scores) and curves.png, profile.png.")
    bench.add_argument('-c', '--config', action='append', default=[], help='a config file (repeatable)')
    bench.add_argument('--suite', default=None, help="a Python file: suite = [dict(config=..., max_env_step=..., "
                                                      "set={...}, reference=dict(score=..., source=...)), ...]")
    bench.add_argument('--seeds', default='0-4', help='seeds of every config: 0-9, 0,3,7 (default 0-4)')
    bench.add_argument('--max-env-step', type=_positive_int, default=None,
                       help="each config's budget (-c); with --suite it replaces the file's budgets")
    bench.add_argument('--out', default='bench', help='the folder of the results, and of the runs without '
                       '--storage-path (default: bench)')
    bench.add_argument('--ray', nargs='?', const=os.environ.get('RAY_ADDRESS') or '', default=None,
                       metavar='ADDRESS', help="each config's run a Ray task on the cluster at ADDRESS (default: "
                       "RAY_ADDRESS; 'local': a Ray on this machine); the runs' folder must be one every node "
                       "reaches")
    bench.add_argument('--storage-path', metavar='DIR', help="where the runs (checkpoints, logs) go, as Ray's own "
                       "storage_path: a folder every node reaches with --ray (default: --out, which keeps the "
                       "results)")
    bench.add_argument('--set', action='append', default=[], metavar='KEY=VALUE', dest='overrides',
                       help='change one config value of every -c config, as the training modes\' --set')
    for sub in (plot, summary, listing, config, zoo, capabilities, export, tune, bench):
        sub.add_argument('--debug', action='store_true', help='show the full traceback of an error')
    return parser


def _run_tool(args: argparse.Namespace) -> None:
    if args.tool == 'plot' and args.profile:
        from .tools.plot import plot_profiles
        print(f"wrote {plot_profiles(args.exp_dirs, args.output, args.title, args.y)}")
        return
    if args.tool == 'plot':
        from .tools.plot import plot_curves
        written = plot_curves(args.exp_dirs, args.output, args.x, args.band, args.title, args.y, args.aggregate,
                              args.gamma)
        print(f"wrote {written}")
        return
    if args.tool == 'summary':
        from .tools.plot import summary_rows
        rows = summary_rows(args.exp_dirs, args.y, args.gamma)
        widths = {key: max(len(key), *(len(row[key]) for row in rows)) for key in rows[0]}
        print('  '.join(key.ljust(width) for key, width in widths.items()))
        for row in rows:
            print('  '.join(row[key].ljust(width) for key, width in widths.items()))
        return
    if args.tool == 'tune':
        from .pipeline.tune import load_space, tune
        tune(args.config, args.max_env_step, args.n_trials, args.stack, args.timeout, args.storage, args.study_name,
             args.seed, load_space(args.space) if args.space else None, args.pruner, args.ray)
        return
    if args.tool == 'bench':
        from ding_lite.config import parse_overrides
        from .pipeline.seeds import parse_seeds
        from .tools.bench import bench, entries_of, load_suite
        entries = load_suite(args.suite, args.max_env_step) if args.suite else \
            entries_of(args.config, args.max_env_step, parse_overrides(args.overrides))
        rows = bench(entries, parse_seeds(args.seeds), args.out, args.ray, args.storage_path)
        print(f"wrote {os.path.join(args.out, 'results.csv')}, results.md ({len(rows)} configs)")
        return
    if args.tool == 'capabilities':
        from .kit.capabilities import capability_table
        print(capability_table(), end='')
        return
    if args.tool == 'export':
        from .tools.agent import load_policy
        print(f"wrote {load_policy(args.run, args.checkpoint).export(args.output)}")
        return
    if args.tool in ('list', 'config'):  # the built-ins' answers without importing torch, where they are current
        from .tools import catalog
        text = catalog.answer(args.tool, getattr(args, 'name', None), args.kind)
        if text is None and catalog.refresh():  # missing or stale: written once from the live registries
            text = catalog.answer(args.tool, getattr(args, 'name', None), args.kind)
        if text is not None:
            print(text, end='\n' if args.tool == 'list' else '')
            return
    from .tools import discover
    if args.tool == 'list':
        print(discover.list_registered(args.kind))
    elif args.tool == 'config':
        print(discover.describe_config(args.name, args.kind), end='')
    elif args.tool == 'zoo':
        print(discover.zoo_table())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TOOLS:
        tool_parser = build_tool_parser()
        args = tool_parser.parse_args(argv)
        if args.tool == 'plot' and args.profile and (args.aggregate or args.x != 'envstep'):
            tool_parser.error("--profile draws the runs' last evaluations over a score axis: it takes no "
                              "--aggregate or --x")
        if args.tool == 'bench' and bool(args.config) == bool(args.suite):
            tool_parser.error("bench: give -c CONFIG (repeatable) or --suite FILE, one of the two")
        if args.tool in ('bench', 'tune') and args.ray == '':
            tool_parser.error(f"{args.tool} --ray: no Ray cluster to join (RAY_ADDRESS is not set): start one with 'ray start "
                              "--head' (then 'ray start --address=HEAD:6379' on the other nodes) and give --ray "
                              "HEAD:6379 or set RAY_ADDRESS, or use --ray local for a Ray on this machine")
        if args.tool in ('tune', 'bench'):
            _record_command(argv)
        return _guarded(_run_tool, args)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.mode == 'collect_demo' and not (args.load_path and args.expert_data_path and args.collect_count):
        parser.error('-m collect_demo needs --load-path, --expert-data-path and --collect-count')
    if args.mode == 'serial_sqil' and bool(args.expert_data_path) == bool(args.expert_config):
        parser.error('-m serial_sqil needs exactly one of --expert-data-path and --expert-config')
    if (args.episodes or args.replay_path) and args.mode != 'eval':
        parser.error(f'--episodes and --replay-path are for -m eval, not -m {args.mode}')
    if args.seeds is not None:
        if args.mode not in ('serial', 'serial_sqil'):
            parser.error(f"--seeds trains many seeds in one run with -m serial or serial_sqil; -m {args.mode} takes "
                         f"one seed (-s N)" + (' per run: the parallel pipeline is single-seed'
                                              if args.mode == 'parallel' else ''))
        if args.seed is not None:
            parser.error('give either -s/--seed (one run) or --seeds (many), not both')
        from .pipeline.seeds import parse_seeds
        try:
            args.seed = parse_seeds(args.seeds)
        except ValueError as error:
            parser.error(f"--seeds: {error}")
    if args.resume and args.mode not in ('serial', 'parallel', 'serial_sqil', 'offline'):
        parser.error(f'--resume continues a training run (-m serial, parallel, serial_sqil or offline), not '
                     f'-m {args.mode}')
    if args.mode == 'offline' and args.max_env_step != int(1e10):
        parser.error('-m offline makes no env steps: --max-env-step does nothing there; give --max-train-iter')
    _record_command(argv)
    return _guarded(_run, args)


def _record_command(argv: list[str]) -> None:
    """What trains says how to resume: the command that started it (imported once the arguments parsed, so that
    ``--help`` and a bad flag answer without loading torch)."""
    from .kit import life_cycle
    life_cycle.COMMAND = [*_program(), *argv]


def _program() -> list[str]:
    """How this process was started, as a user would type it again: ``ding_lite`` (or its path where it is not
    the one on PATH), or ``python -m entry.cli``."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ''
    if os.path.basename(script) == 'ding_lite':
        on_path = shutil.which('ding_lite')
        return ['ding_lite' if on_path and os.path.abspath(on_path) == script else _short(script)]
    return [_short(sys.executable), '-m', 'entry.cli']


def _short(path: str) -> str:
    relative = os.path.relpath(path)
    return relative if not relative.startswith('..') else path


def _guarded(run: Any, args: argparse.Namespace) -> int:
    """Run ``run(args)``: exit code 0, 130 on Ctrl-C, or 1 with one ``ding_lite: error:`` line."""
    try:
        run(args)
    except KeyboardInterrupt:
        print('ding_lite: interrupted', file=sys.stderr)
        return 130
    except Exception as error:  # one clear line at the CLI; --debug shows where it came from
        if args.debug:
            traceback.print_exc()
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"ding_lite: error: {type(error).__name__}: {message}"
              + ('' if args.debug else '  (--debug shows the traceback)'), file=sys.stderr)
        return 1
    return 0


def _run(args: argparse.Namespace) -> None:
    from ding_lite.config import parse_overrides
    overrides = parse_overrides(args.overrides)
    if args.track:
        overrides['logger.wandb.track'] = True
    if args.exp_name:
        from ding_lite.config import read_config
        main_config, create_config = read_config(args.config)
        main_config.exp_name = args.exp_name
        args.config = (main_config, create_config)
    if args.mode == 'serial':
        from .pipeline.serial import serial_pipeline
        serial_pipeline(args.config, seed=args.seed, max_env_step=args.max_env_step,
                        max_train_iter=args.max_train_iter, resume=args.resume, overrides=overrides)
    elif args.mode == 'parallel':
        from .parallel.pipeline import parallel_pipeline
        parallel_pipeline(args.config, seed=args.seed, max_env_step=args.max_env_step,
                          max_train_iter=args.max_train_iter, resume=args.resume, overrides=overrides)
    elif args.mode == 'eval':
        from .tools.application import eval
        eval(args.config, seed=args.seed, load_path=args.load_path, replay_path=args.replay_path,
             n_episode=args.episodes, overrides=overrides)
    elif args.mode == 'collect_demo':
        from .tools.application import collect_demo_data
        collect_demo_data(args.config, seed=args.seed, collect_count=args.collect_count,
                          expert_data_path=args.expert_data_path, state_dict_path=args.load_path,
                          deterministic=not args.demo_sampled, overrides=overrides)
    elif args.mode == 'offline':
        from .pipeline.offline import serial_pipeline_offline
        serial_pipeline_offline(args.config, seed=args.seed, max_train_iter=args.max_train_iter, resume=args.resume,
                                overrides=overrides)
    elif args.mode == 'serial_sqil':
        from .pipeline.sqil import serial_pipeline_sqil
        serial_pipeline_sqil(args.config, expert_cfg=args.expert_config, seed=args.seed,
                             expert_data_path=args.expert_data_path, max_env_step=args.max_env_step,
                             max_train_iter=args.max_train_iter, resume=args.resume, overrides=overrides)


if __name__ == '__main__':
    sys.exit(main())
