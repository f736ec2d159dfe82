"""What each pipeline supports, declared once: read by the compile-time check (``ding_lite.capabilities.check``) and
drawn as the docs' table of what works with what (``ding_lite capabilities``)."""
from __future__ import annotations

from ding_lite.capabilities import FEATURES, Pipeline, table

_ALL = frozenset(FEATURES)
_DATA_PATH = ("learn.data_path is -m offline's data; to mix a file into the batches of an online run, set "
              "policy.other.offline_buffer.path")
_NOT_STACKED = "the seeds' (rows') {} not stacked on one update yet"
# features a run of many seeds (or a search's trials) runs one row at a time
_ONE_BY_ONE = {
    'recurrent': _NOT_STACKED.format("sequences and recurrent states are"),
    'reward_signals': _NOT_STACKED.format("reward models are"),
    'gail': _NOT_STACKED.format("reward models are"),
    'reward_model_schedule': _NOT_STACKED.format("reward models are"),
    'cloning': _NOT_STACKED.format("demonstrations are"),
    'reward_vector': _NOT_STACKED.format("reward heads are"),
    'amp_fp16': "fp16's gradient scaler is one row's",
}

SERIAL = Pipeline('serial', '-m serial', _ALL - {'data_path'}, refuses={'data_path': _DATA_PATH})

SEEDS = Pipeline(
    'seeds', '--seeds', _ALL - {'data_path', 'overlap', *_ONE_BY_ONE},
    one_after_another={**_ONE_BY_ONE, 'overlap': "each seed's rounds are collected in a process of its own"},
    refuses={'data_path': _DATA_PATH})

TUNE = Pipeline(
    'tune', 'ding_lite tune', _ALL - {'data_path', 'overlap', *_ONE_BY_ONE}, one_after_another=_ONE_BY_ONE,
    refuses={'data_path': _DATA_PATH,
             'overlap': "a search's trials collect in the learner's process; set policy.collect.overlap to False "
                        "or 'auto'"})

OFFLINE = Pipeline(
    'offline', '-m offline',
    frozenset({'norm_obs', 'norm_reward', 'reward_clip', 'reward_signals', 'gail', 'cloning', 'priority',
               'priority_IS_weight', 'cuda_graph', 'load_before_run', 'data_path', 'reward_vector', 'agents', 'amp',
               'amp_fp16', 'environment_parameters'}),
    refuses={'report_collected': "offline training collects no transitions to report on; leave it False",
             'param_resets': "resets fall at env steps, and offline training takes none; leave it None",
             'her': "hindsight replay relabels the episodes a run collects, and offline training collects none; "
                    "set her=None",
             'recurrent': "the file's transitions are learnt from one by one, not as sequences yet; train a "
                          "recurrent model with -m serial",
             'overlap': "offline training collects nothing to overlap; set policy.collect.overlap=False",
             'offline_buffer': "learn.data_path is the data; a second file to mix in is not read offline: merge the "
                               "files, or leave other.offline_buffer.path None",
             'reward_model_schedule': "the schedule counts env steps, and offline training takes none: leave it "
                                      "None (the reward models step with each learn step)",
             'curriculum': "lessons move on the episodes a run collects, and offline training collects none; give "
                           "the evaluation's envs one value (a constant or a sampler)"})

SQIL = Pipeline(
    'sqil', '-m serial_sqil',
    _ALL - {'norm_reward', 'gail', 'offline_buffer', 'data_path', 'reward_vector', 'her', 'priority',
            'priority_IS_weight', 'recurrent', 'agents'},
    refuses={'norm_reward': "SQIL labels agent rewards 0 and demonstration rewards 1; a running std would rescale "
                            "the labels: set env.norm_reward.use_norm=False",
             'gail': "SQIL's demonstration half would count as the policy's rows for the discriminator; use GAIL "
                     "with -m serial, or SQIL alone",
             'offline_buffer': "SQIL's batches are half demonstrations already; give the file as "
                               "--expert-data-path",
             'data_path': "SQIL's demonstrations are --expert-data-path (or an expert config)",
             'reward_vector': "SQIL relabels every reward 0 or 1, a scalar; leave policy.reward_weights None",
             'her': "SQIL relabels every reward 0 or 1, which would erase the relabelled goals' rewards",
             'priority': "the demonstration half is sampled uniformly, and its priorities would not be written "
                         "back; set policy.priority=False",
             'priority_IS_weight': "SQIL samples its halves uniformly; set policy.priority_IS_weight=False",
             'recurrent': "the demonstration half is mixed in as transitions, not as a recurrent model's sequences; "
                          "train a recurrent model with -m serial",
             'agents': "SQIL's demonstrations are not collected or checked per agent yet; train many agents with "
                       "-m serial"})

PARALLEL = Pipeline(
    'parallel', '-m parallel',
    _ALL - {'her', 'reward_model_schedule', 'reward_vector', 'norm_reward', 'overlap', 'data_path', 'curriculum',
            'report_collected'},
    refuses={'her': "the collector actors send no episode boundaries yet; run it with -m serial",
             'report_collected': "the collector actors hold no critics to score with; run it with -m serial",
             'reward_model_schedule': "the learner trains the reward models on each learn step's batch; leave it "
                                      "None",
             'reward_vector': "the collector actors take scalar rewards; use -m serial for a reward vector",
             'norm_reward': "the collectors' running returns stay in their actors; use -m serial or set "
                            "env.norm_reward.use_norm=False",
             'overlap': "collection already runs in Ray actors beside the learner; leave policy.collect.overlap "
                        "False",
             'data_path': _DATA_PATH,
             'curriculum': "each collector actor would move its own lessons; run a curriculum with -m serial (a "
                           "constant or a sampler works here)"})

PIPELINES = {p.name: p for p in (SERIAL, SEEDS, TUNE, OFFLINE, SQIL, PARALLEL)}
# acting with a trained run (eval, collect_demo, load_policy, export): how it was trained was checked then
ACTING = Pipeline('acting', 'eval', _ALL, learns=False)


def capability_table() -> str:
    """The docs' tables of what works with what, drawn from the pipelines' and the registered policies'
    declarations."""
    from ding_lite.registry import POLICY_REGISTRY
    policies = {name: POLICY_REGISTRY.get(name) for name in POLICY_REGISTRY.keys()}
    policies = {name: cls for name, cls in policies.items() if cls.__module__.startswith('policy_zoo')}
    unique = {}
    for name, cls in policies.items():  # an alias (DI-engine's misspelling) once, under its class's own name
        unique.setdefault(cls, name if cls.config.get('type') in (None, name) else cls.config['type'])
    return table(PIPELINES.values(), {name: cls for cls, name in unique.items()})
