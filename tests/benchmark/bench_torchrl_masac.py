"""TorchRL's multi-agent SAC (the design of its ``sota-implementations/multiagent/sac.py``: one actor shared by the
agents, a centralised critic over all agents' observations and actions, ``SACLoss`` with TD(0) and soft target
updates) on MPE simple_spread, for BENCHMARKS.md's "Many agents" rows beside ding_lite's configs.

Needs TorchRL, which ding_lite does not install (in a venv of its own: ``pip install torch==2.13.0`` first, then
``pip install torchrl pettingzoo mpe2``). Run: ``python -m tests.benchmark.bench_torchrl_masac --seeds 0 1 2
[--env-steps 30000]``. One JSON line per seed: the last and best evaluation return (8 deterministic episodes) in
DI-engine's units (each agent's global plus local reward summed over agents: twice mpe2's own sum), and wall time.
"""
from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn

try:
    from mpe2 import simple_spread_v3
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import ExplorationType, set_exploration_type
    from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import SACLoss, SoftUpdate, ValueEstimators
    MISSING = None
except ImportError as error:  # make bench runs every benchmark: this one says why it did not run
    MISSING = error

AGENTS, CYCLES, EVAL_EPISODES = 3, 25, 8
GROUP = 'agent'  # PettingZooWrapper's group of simple_spread's agents


def make_env(seed: int) -> PettingZooWrapper:
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=AGENTS, max_cycles=CYCLES, continuous_actions=True),
                            use_mask=False, seed=seed)
    return env


def build(env: PettingZooWrapper, hidden: int) -> tuple[ProbabilisticActor, ValueOperator]:
    obs_size = env.observation_spec[GROUP, 'observation'].shape[-1]
    action_spec = env.full_action_spec_unbatched[GROUP, 'action']
    act_size = action_spec.shape[-1]
    actor_net = nn.Sequential(
        MultiAgentMLP(n_agent_inputs=obs_size, n_agent_outputs=2 * act_size, n_agents=AGENTS, centralised=False,
                      share_params=True, depth=2, num_cells=hidden, activation_class=nn.ReLU),
        NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=[(GROUP, 'observation')], out_keys=[(GROUP, 'loc'), (GROUP, 'scale')]),
        spec=env.full_action_spec_unbatched, in_keys=[(GROUP, 'loc'), (GROUP, 'scale')],
        out_keys=[(GROUP, 'action')], distribution_class=TanhNormal,
        distribution_kwargs={'low': action_spec.space.low, 'high': action_spec.space.high}, return_log_prob=True)
    critic_net = MultiAgentMLP(n_agent_inputs=obs_size + act_size, n_agent_outputs=1, n_agents=AGENTS,
                               centralised=True, share_params=True, depth=2, num_cells=hidden,
                               activation_class=nn.ReLU)
    critic = ValueOperator(critic_net, in_keys=[(GROUP, 'observation'), (GROUP, 'action')],
                           out_keys=[(GROUP, 'state_action_value')])
    return actor, critic


def evaluate(env: PettingZooWrapper, actor: ProbabilisticActor) -> float:
    """The mean team return of deterministic episodes, in DI-engine's units."""
    returns = []
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for _ in range(EVAL_EPISODES):
            td = env.rollout(CYCLES, policy=actor)
            returns.append(2.0 * float(td['next', GROUP, 'reward'].sum()))
    return sum(returns) / len(returns)


def run(seed: int, env_steps: int, frames: int, updates: int, batch: int, lr: float, hidden: int) -> dict:
    torch.manual_seed(seed)
    env, eval_env = make_env(seed), make_env(seed + 1000)
    actor, critic = build(env, hidden)
    loss = SACLoss(actor_network=actor, qvalue_network=critic, delay_qvalue=True,
                   action_spec=env.full_action_spec_unbatched)
    # the team's done per agent (the wrapper gives each agent its own flags)
    loss.set_keys(state_action_value=(GROUP, 'state_action_value'), action=(GROUP, 'action'),
                  reward=(GROUP, 'reward'), done=(GROUP, 'done'), terminated=(GROUP, 'terminated'))
    loss.make_value_estimator(ValueEstimators.TD0, gamma=0.99)
    target = SoftUpdate(loss, tau=0.005)
    optim = torch.optim.Adam(loss.parameters(), lr)
    collector = Collector(env, actor, frames_per_batch=frames, total_frames=env_steps)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(int(3e5)), batch_size=batch)
    start, best, last, done_steps, next_eval = time.perf_counter(), -float('inf'), None, 0, 0
    for data in collector:
        buffer.extend(data.reshape(-1))
        done_steps += data.numel()
        for _ in range(updates):
            values = loss(buffer.sample())
            (values['loss_actor'] + values['loss_qvalue'] + values['loss_alpha']).backward()
            optim.step()
            optim.zero_grad()
            target.step()
        collector.update_policy_weights_()
        if done_steps >= next_eval or done_steps >= env_steps:
            last = evaluate(eval_env, actor)
            best, next_eval = max(best, last), next_eval + 1000
    collector.shutdown()
    return {'bench': 'torchrl_masac', 'seed': seed, 'env_steps': done_steps, 'last_return': round(last, 1),
            'best_return': round(best, 1), 'wall_s': round(time.perf_counter() - start, 1)}


def main() -> None:
    if MISSING is not None:
        print(f"bench_torchrl_masac: skipped, TorchRL's stack is not installed here ({MISSING}); see its docstring")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--env-steps', type=int, default=30000)
    parser.add_argument('--frames', type=int, default=100, help='env steps per collection')
    parser.add_argument('--updates', type=int, default=25, help='updates per collection')
    parser.add_argument('--batch', type=int, default=256)
    parser.add_argument('--lr', type=float, default=5e-4)
    parser.add_argument('--hidden', type=int, default=128)
    args = parser.parse_args()
    for seed in args.seeds:
        print(json.dumps(run(seed, args.env_steps, args.frames, args.updates, args.batch, args.lr, args.hidden)),
              flush=True)


if __name__ == '__main__':
    main()
