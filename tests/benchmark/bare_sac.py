"""A hand-written single-file PyTorch SAC (CleanRL style): the reference the benchmarks compare against.

Same math and hyperparameters as ``policy_zoo.sac`` with the Pendulum config; no framework code is used.
"""
from __future__ import annotations

import math
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def mlp(i: int, h: int, o: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, o))


def _step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


class Actor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.mu, self.log_std = nn.Linear(hidden, act_dim), nn.Linear(hidden, act_dim)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.mu(h), self.log_std(h).clamp(-20, 2).exp()

    def sample(self, obs):
        mu, std = self(obs)
        u = mu + std * torch.randn_like(mu)
        log_prob = torch.distributions.Normal(mu, std).log_prob(u) - 2 * (math.log(2) - u - F.softplus(-2 * u))
        return torch.tanh(u), log_prob.sum(-1)


class BareSAC:
    """Twin critics, target critics with Polyak averaging, auto alpha in log space."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, lr_q: float, lr_pi: float, lr_alpha: float,
                 gamma: float = 0.99, tau: float = 0.005, device: str = 'cpu') -> None:
        self.actor = Actor(obs_dim, act_dim, hidden).to(device)
        self.q1, self.q2 = mlp(obs_dim + act_dim, hidden, 1).to(device), mlp(obs_dim + act_dim, hidden, 1).to(device)
        self.q1_t = mlp(obs_dim + act_dim, hidden, 1).to(device)
        self.q2_t = mlp(obs_dim + act_dim, hidden, 1).to(device)
        self.q1_t.load_state_dict(self.q1.state_dict())
        self.q2_t.load_state_dict(self.q2.state_dict())
        self.q_opt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), lr=lr_q)
        self.pi_opt = torch.optim.Adam(self.actor.parameters(), lr=lr_pi)
        self.log_alpha = torch.zeros(1, device=device, requires_grad=True)
        with torch.no_grad():
            self.log_alpha.fill_(math.log(0.2))
        self.a_opt = torch.optim.Adam([self.log_alpha], lr=lr_alpha)
        self.target_entropy, self.gamma, self.tau = -float(act_dim), gamma, tau

    def update(self, obs, action, reward, next_obs, done) -> None:
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_a, next_logp = self.actor.sample(next_obs)
            x = torch.cat([next_obs, next_a], -1)
            q_next = torch.min(self.q1_t(x), self.q2_t(x)).squeeze(-1) - alpha * next_logp
            target = reward + self.gamma * (1 - done) * q_next
        x = torch.cat([obs, action], -1)
        q_loss = F.mse_loss(self.q1(x).squeeze(-1), target) + F.mse_loss(self.q2(x).squeeze(-1), target)
        _step(self.q_opt, q_loss)
        a, logp = self.actor.sample(obs)
        x = torch.cat([obs, a], -1)
        _step(self.pi_opt, (alpha * logp - torch.min(self.q1(x), self.q2(x)).squeeze(-1)).mean())
        # the original SAC's temperature loss, as the framework's: log_alpha * (entropy - target)
        self.alpha_and_targets((self.log_alpha * (-logp.detach() - self.target_entropy)).mean())

    def alpha_and_targets(self, alpha_loss) -> None:
        """The temperature's step, then the target critics' Polyak update."""
        _step(self.a_opt, alpha_loss)
        with torch.no_grad():
            for net, tgt in ((self.q1, self.q1_t), (self.q2, self.q2_t)):
                for p, pt in zip(net.parameters(), tgt.parameters()):
                    pt.mul_(1 - self.tau).add_(p, alpha=self.tau)


class BareDiscreteSAC(BareSAC):
    """Discrete SAC (Christodoulou 2019, CleanRL's sac_atari update on MLPs): expectations over all actions, twin
    critics ``obs -> q [B, A]``, target entropy ``ratio * log|A|``. Shares BareSAC's last steps, not its nets."""

    def __init__(self, obs_dim: int, n_act: int, hidden: int, lr_q: float, lr_pi: float, lr_alpha: float,
                 gamma: float = 0.99, tau: float = 0.005, target_entropy_ratio: float = 0.89,
                 device: str = 'cpu') -> None:
        self.actor = mlp(obs_dim, hidden, n_act).to(device)
        self.q1, self.q2 = mlp(obs_dim, hidden, n_act).to(device), mlp(obs_dim, hidden, n_act).to(device)
        self.q1_t, self.q2_t = mlp(obs_dim, hidden, n_act).to(device), mlp(obs_dim, hidden, n_act).to(device)
        self.q1_t.load_state_dict(self.q1.state_dict())
        self.q2_t.load_state_dict(self.q2.state_dict())
        self.q_opt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), lr=lr_q)
        self.pi_opt = torch.optim.Adam(self.actor.parameters(), lr=lr_pi)
        self.log_alpha = torch.full((1,), math.log(0.2), device=device, requires_grad=True)
        self.a_opt = torch.optim.Adam([self.log_alpha], lr=lr_alpha)
        self.target_entropy, self.gamma, self.tau = target_entropy_ratio * math.log(n_act), gamma, tau

    def update(self, obs, action, reward, next_obs, done) -> None:
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_logp = F.log_softmax(self.actor(next_obs), -1)
            q_next = torch.min(self.q1_t(next_obs), self.q2_t(next_obs))
            target = reward + self.gamma * (1 - done) * (next_logp.exp() * (q_next - alpha * next_logp)).sum(-1)
        index = action.long().view(-1, 1)
        q_loss = F.mse_loss(self.q1(obs).gather(1, index).squeeze(-1), target) + \
            F.mse_loss(self.q2(obs).gather(1, index).squeeze(-1), target)
        _step(self.q_opt, q_loss)
        logp = F.log_softmax(self.actor(obs), -1)
        with torch.no_grad():
            q = torch.min(self.q1(obs), self.q2(obs))
        _step(self.pi_opt, (logp.exp() * (alpha * logp - q)).sum(-1).mean())
        entropy = -(logp.exp() * logp).sum(-1).detach()
        self.alpha_and_targets((self.log_alpha * (entropy - self.target_entropy)).mean())


def train_pendulum(seed: int, stop_value: float = -250.0, max_env_step: int = 100_000) -> dict[str, float]:
    """The Pendulum config (10 envs, 5 eval episodes every 100 updates, ...) as one plain loop. Timed from its
    start, set-up included, as the framework's run is."""
    start = time.perf_counter()
    torch.manual_seed(seed)
    np.random.seed(seed)
    n_env, n_eval, batch, size = 10, 5, 128, 100_000
    envs = [gym.make('Pendulum-v1') for _ in range(n_env)]
    eval_envs = [gym.make('Pendulum-v1') for _ in range(n_eval)]
    rng = np.random.default_rng(seed)
    obs = np.stack([e.reset(seed=int(rng.integers(2 ** 31)))[0] for e in envs])
    sac = BareSAC(3, 1, 128, 1e-3, 1e-3, 3e-4)
    buf = {k: np.zeros((size,) + s, np.float32) for k, s in
           (('obs', (3,)), ('act', (1,)), ('rew', ()), ('next', (3,)), ('done', ()))}
    ptr = count = steps = iters = 0

    def evaluate() -> float:
        total = []
        for i, e in enumerate(eval_envs):
            o, _ = e.reset(seed=seed + i)
            ret, done = 0.0, False
            while not done:
                with torch.no_grad():
                    a = torch.tanh(sac.actor(torch.as_tensor(o).unsqueeze(0))[0]).numpy()[0]
                o, r, term, trunc, _ = e.step(a * 2.0)
                ret, done = ret + r, term or trunc
            total.append(ret)
        return float(np.mean(total))

    while steps < max_env_step:
        if iters % 100 == 0 and steps >= 1000 and evaluate() >= stop_value:
            break
        if steps < 1000:
            act = rng.uniform(-1, 1, (n_env, 1)).astype(np.float32)
        else:
            with torch.no_grad():
                act = sac.actor.sample(torch.as_tensor(obs))[0].numpy()
        for i, e in enumerate(envs):
            o2, r, term, trunc, _ = e.step(act[i] * 2.0)
            j = ptr
            buf['obs'][j], buf['act'][j], buf['rew'][j], buf['next'][j], buf['done'][j] = obs[i], act[i], r, o2, term
            ptr, count = (ptr + 1) % size, min(count + 1, size)
            obs[i] = e.reset(seed=int(rng.integers(2 ** 31)))[0] if term or trunc else o2
        steps += n_env
        if steps <= 1000:
            continue
        idx = torch.randint(count, (batch,))
        t = {k: torch.from_numpy(v)[idx] for k, v in buf.items()}
        sac.update(t['obs'], t['act'], t['rew'], t['next'], t['done'])
        iters += 1
    return {'env_steps': steps, 'wall_s': time.perf_counter() - start}


def steps_to_threshold(steps: list[float], budget: int) -> tuple[float, int]:
    """``(median, runs that never reached it)`` of env steps to a threshold, where a run that never reached it
    (NaN) counts at the ``budget`` it ran for: a NaN inside ``statistics.median`` makes it order-dependent."""
    import statistics
    missed = sum(1 for s in steps if s != s)
    return statistics.median(budget if s != s else s for s in steps), missed
