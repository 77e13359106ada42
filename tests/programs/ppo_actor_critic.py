"""Proximal Policy Optimization with an actor-critic network, written the way the public PPO
implementations (CleanRL's ppo.py, the PyTorch PPO tutorials) write it.

A NumPy grid world (reach the goal corner, small step penalty) is the environment, run as a few
parallel copies. The agent shares a Tanh trunk between a policy head (logits for
`torch.distributions.Categorical`) and a value head; orthogonal initialisation
(`nn.init.orthogonal_` with gains `sqrt(2)`, 0.01 and 1, `constant_` biases) as CleanRL's
`layer_init`. Each update collects a rollout under `torch.no_grad()` into preallocated
`torch.zeros((steps, envs))` buffers, computes generalized advantage estimates backwards in
time, and optimises the clipped surrogate objective for a few epochs over shuffled minibatches:
`ratio = (newlogprob - logprob).exp()`, `torch.max(pg_loss1, pg_loss2)` with
`torch.clamp(ratio, 1 - clip, 1 + clip)`, a clipped value loss, an entropy bonus,
`clip_grad_norm_` and Adam with the learning rate annealed by writing `param_groups[0]["lr"]`.
It reports the approximate KL (`((ratio - 1) - logratio).mean()`) and clip fractions.

Actions come from `Categorical.sample()`; `--numpy-actions` draws them with NumPy from the
policy's probabilities (and the minibatch order is NumPy's in every run), so that two libraries
can be compared.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.optim as optim
from tensorplug.distributions.categorical import Categorical


class GridWorld:
    """A size x size grid; the agent starts in a random cell and must reach (size-1, size-1)."""

    def __init__(self, num_envs, size, rng, max_steps=20):
        self.num_envs, self.size, self.rng, self.max_steps = num_envs, size, rng, max_steps
        self.moves = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])
        self.position = self.rng.integers(0, size, (num_envs, 2))
        self.steps = np.zeros(num_envs, dtype=np.int64)

    def observe(self):
        obs = np.zeros((self.num_envs, 2 * self.size), dtype=np.float32)
        obs[np.arange(self.num_envs), self.position[:, 0]] = 1.0
        obs[np.arange(self.num_envs), self.size + self.position[:, 1]] = 1.0
        return obs

    def step(self, actions):
        self.position = np.clip(self.position + self.moves[actions], 0, self.size - 1)
        self.steps += 1
        at_goal = (self.position == self.size - 1).all(axis=1)
        reward = np.where(at_goal, 1.0, -0.05).astype(np.float32)
        done = at_goal | (self.steps >= self.max_steps)
        restart = np.flatnonzero(done)
        self.position[restart] = self.rng.integers(0, self.size, (len(restart), 2))
        self.steps[restart] = 0
        return self.observe(), reward, done.astype(np.float32)


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, num_actions, hidden=32):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, num_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def init_from_numpy(model, seed):
    """Replace the orthogonal draws with NumPy-drawn orthogonal matrices of the same gains (QR of
    a Gaussian matrix, signs fixed by R's diagonal, as orthogonal_ does), so that any library
    starts from the same weights; biases stay at their constants."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                rows, cols = module.weight.shape
                gain = module.weight.norm().item() / np.sqrt(min(rows, cols))
                flat = rng.standard_normal((max(rows, cols), min(rows, cols)))
                q, r = np.linalg.qr(flat)
                q *= np.sign(np.diag(r))
                q = q.T if rows < cols else q
                module.weight.copy_(torch.from_numpy((gain * q).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='PPO on a grid world')
    parser.add_argument('--num-envs', type=int, default=4)
    parser.add_argument('--num-steps', type=int, default=12)
    parser.add_argument('--updates', type=int, default=3)
    parser.add_argument('--update-epochs', type=int, default=2)
    parser.add_argument('--num-minibatches', type=int, default=2)
    parser.add_argument('--learning-rate', type=float, default=2.5e-3)
    parser.add_argument('--gamma', type=float, default=0.95)
    parser.add_argument('--gae-lambda', type=float, default=0.9)
    parser.add_argument('--clip-coef', type=float, default=0.2)
    parser.add_argument('--ent-coef', type=float, default=0.01)
    parser.add_argument('--vf-coef', type=float, default=0.5)
    parser.add_argument('--max-grad-norm', type=float, default=0.5)
    parser.add_argument('--size', type=int, default=4)
    parser.add_argument('--numpy-actions', action='store_true', help='draw actions with NumPy')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--device', default=None, help='default: cuda if available, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches

    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = True
    device = torch.device(args.device if args.device is not None else "cuda" if torch.cuda.is_available() else "cpu")

    rng = np.random.default_rng(args.seed)
    envs = GridWorld(args.num_envs, args.size, rng)
    obs_dim, num_actions = 2 * args.size, 4
    agent = Agent(obs_dim, num_actions)
    init_from_numpy(agent, args.seed)
    agent.to(device)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, obs_dim)).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs)).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    next_obs = torch.Tensor(envs.observe()).to(device)
    next_done = torch.zeros(args.num_envs).to(device)
    losses, value_losses, approx_kls, clipfracs_per_update, mean_rewards = [], [], [], [], []
    for update in range(1, args.updates + 1):
        frac = 1.0 - (update - 1.0) / args.updates
        optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(0, args.num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                if args.numpy_actions:
                    probs = torch.softmax(agent.actor(next_obs), dim=-1).cpu().numpy().astype(np.float64)
                    draws = rng.random(args.num_envs)
                    chosen = (draws[:, None] > np.cumsum(probs, axis=1)[:, :-1]).sum(axis=1)
                    action, logprob, _, value = agent.get_action_and_value(next_obs, torch.tensor(chosen).to(device))
                else:
                    action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs_np, reward, done = envs.step(action.cpu().numpy())
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs_np).to(device), torch.Tensor(done).to(device)

        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, obs_dim))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            rng.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
                losses.append(loss.item())
                value_losses.append(v_loss.item())

        approx_kls.append(approx_kl.item())
        clipfracs_per_update.append(float(np.mean(clipfracs)))
        mean_rewards.append(rewards.mean().item())
        if not args.quiet:
            print(f'update {update}: mean reward {mean_rewards[-1]:.3f} value loss {v_loss.item():.4f} '
                  f'approx kl {approx_kls[-1]:.5f} clipfrac {clipfracs_per_update[-1]:.3f}')
    return {"losses": losses, "value_losses": value_losses, "approx_kl": approx_kls,
            "clipfrac": clipfracs_per_update, "mean_reward": mean_rewards}


if __name__ == '__main__':
    print(json.dumps(main()))
