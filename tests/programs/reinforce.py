"""REINFORCE on a cart-pole, as pytorch/examples' reinforcement_learning/reinforce.py trains it.

The example's Policy (Linear, Dropout, ReLU, Linear, softmax), actions drawn from
torch.distributions.Categorical with their log_prob kept for the update, discounted returns
normalised with mean and std, and the policy loss as torch.cat(...).sum() with Adam. Gym is
replaced by a small NumPy cart-pole with the same physics. With --numpy-actions the action is
drawn by NumPy from the policy's probabilities instead of by Categorical.sample, so that two
libraries take the same actions (their generators differ).
"""
import argparse
import json
from collections import deque

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim
from tensorplug.distributions import Categorical


class CartPole:
    """Gym's CartPole-v1 dynamics: push left or right; reward 1 per step until the pole falls."""

    def __init__(self, rng):
        self.rng = rng
        self.state = None

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        done = bool(abs(x) > 2.4 or abs(theta) > 12 * 2 * np.pi / 360)
        return self.state.astype(np.float32), 1.0, done


class Policy(nn.Module):
    def __init__(self, dropout=0.6):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.dropout = nn.Dropout(p=dropout)
        self.affine2 = nn.Linear(32, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights; constant ones (norm layers' ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='REINFORCE on a NumPy cart-pole')
    parser.add_argument('--gamma', type=float, default=0.99, metavar='G')
    parser.add_argument('--seed', type=int, default=543, metavar='N')
    parser.add_argument('--episodes', type=int, default=5)
    parser.add_argument('--max-steps', type=int, default=40)
    parser.add_argument('--dropout', type=float, default=0.6)
    parser.add_argument('--numpy-actions', action='store_true')
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(args.seed)
    env = CartPole(rng)
    policy = Policy(args.dropout)
    init_from_numpy(policy, args.seed)
    policy.to(device)
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0).to(device)
        probs = policy(state)
        m = Categorical(probs)
        if args.numpy_actions:
            p = probs.detach().cpu().numpy()[0]
            action = torch.tensor([min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum())), 1)],
                                  device=device)
        else:
            action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()

    def finish_episode():
        R = 0
        policy_loss = []
        returns = deque()
        for r in policy.rewards[::-1]:
            R = r + args.gamma * R
            returns.appendleft(R)
        returns = torch.tensor(returns, device=device)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for log_prob, R in zip(policy.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        return policy_loss.item()

    running_reward = 10
    record = {"losses": [], "lengths": [], "running_reward": []}
    for i_episode in range(1, args.episodes + 1):
        state, ep_reward = env.reset(), 0
        for t in range(1, args.max_steps + 1):
            action = select_action(state)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        record["losses"].append(finish_episode())
        record["lengths"].append(t)
        record["running_reward"].append(running_reward)
        if not args.quiet:
            print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(
                i_episode, ep_reward, running_reward))
    return record


if __name__ == '__main__':
    print(json.dumps(main()))
