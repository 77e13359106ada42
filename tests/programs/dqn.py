"""Deep Q-learning on a slippery corridor, as PyTorch's "Reinforcement Learning (DQN) Tutorial"
trains its agent.

The tutorial's pieces: the cuda / mps / cpu device choice, a replay memory of
namedtuple('Transition', ...) sampled with random.sample, a small MLP Q-network, epsilon-greedy
actions (policy_net(state).max(1).indices.view(1, 1)), the batch assembled with torch.cat over
the sampled transitions and a boolean mask of the non-final next states, Q(s, a) read with
gather, the target network's max(1).values written through that mask under no_grad,
SmoothL1Loss, AdamW with amsgrad, clip_grad_value_, and the soft update of the target network
through its state_dict. The tutorial's moving average of episode durations (Tensor.unfold) is
reported instead of plotted.

Gym is replaced by a small NumPy corridor whose slips come from its own seeded generator; the
exploration coin, the random actions and the replay samples come from a seeded random.Random, so
that two libraries running this file take the same actions and replay the same batches.
"""
import argparse
import json
import math
import random
from collections import namedtuple, deque
from itertools import count

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim


class SlipperyCorridor:
    """A corridor of `length` cells: step left or right, but slip the other way now and then.

    Reaching the right end pays 1 and ends the episode, the left end is a pit that pays -1 and
    ends it too, and every other step costs 0.05; an episode is cut off (not ended) after
    `max_steps`. The observation is three floats: where the agent is, how far the goal is, and
    how much of the step budget is used.
    """

    n_actions = 2

    def __init__(self, rng, length=8, slip=0.15, max_steps=12):
        self.rng = rng
        self.length = length
        self.slip = slip
        self.max_steps = max_steps
        self.position = 0
        self.steps = 0

    def observe(self):
        where = self.position / (self.length - 1)
        return np.array([where, 1.0 - where, self.steps / self.max_steps], dtype=np.float32)

    def reset(self):
        self.position = int(self.rng.integers(2, self.length - 2))
        self.steps = 0
        return self.observe(), {}

    def step(self, action):
        move = 1 if action == 1 else -1
        if self.rng.random() < self.slip:
            move = -move
        self.position += move
        self.steps += 1
        if self.position == self.length - 1:
            reward, terminated = 1.0, True
        elif self.position == 0:
            reward, terminated = -1.0, True
        else:
            reward, terminated = -0.05, False
        truncated = not terminated and self.steps >= self.max_steps
        return self.observe(), reward, terminated, truncated, {}


Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))


class ReplayMemory(object):

    def __init__(self, capacity, rand):
        self.memory = deque([], maxlen=capacity)
        self.rand = rand

    def push(self, *args):
        """Save a transition"""
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return self.rand.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):

    def __init__(self, n_observations, n_actions, hidden=32):
        super(DQN, self).__init__()
        self.layer1 = nn.Linear(n_observations, hidden)
        self.layer2 = nn.Linear(hidden, hidden)
        self.layer3 = nn.Linear(hidden, n_actions)

    # Called with either one element to determine next action, or a batch
    # during optimization. Returns tensor([[left0exp,right0exp]...]).
    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


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
    parser = argparse.ArgumentParser(description='DQN on a NumPy slippery corridor')
    parser.add_argument('--episodes', type=int, default=6)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--gamma', type=float, default=0.9)
    parser.add_argument('--eps-start', type=float, default=0.9)
    parser.add_argument('--eps-end', type=float, default=0.05)
    parser.add_argument('--eps-decay', type=float, default=40)
    parser.add_argument('--tau', type=float, default=0.05)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--device', default=None, help='default: cuda, then mps, then cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    if args.device is not None:
        device = torch.device(args.device)
    else:
        device = torch.device(
            "cuda" if torch.cuda.is_available() else
            "mps" if torch.backends.mps.is_available() else
            "cpu"
        )

    BATCH_SIZE = args.batch_size
    GAMMA = args.gamma
    EPS_START = args.eps_start
    EPS_END = args.eps_end
    EPS_DECAY = args.eps_decay
    TAU = args.tau
    LR = args.lr

    rand = random.Random(args.seed)
    env = SlipperyCorridor(np.random.default_rng(args.seed))
    n_actions = env.n_actions
    state, info = env.reset()
    n_observations = len(state)

    policy_net = DQN(n_observations, n_actions)
    init_from_numpy(policy_net, args.seed)
    policy_net.to(device)
    target_net = DQN(n_observations, n_actions).to(device)
    target_net.load_state_dict(policy_net.state_dict())

    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    memory = ReplayMemory(1000, rand)

    steps_done = 0

    def select_action(state):
        nonlocal steps_done
        sample = rand.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                # t.max(1) will return the largest column value of each row.
                # second column on max result is index of where max element was
                # found, so we pick action with the larger expected reward.
                return policy_net(state).max(1).indices.view(1, 1)
        else:
            return torch.tensor([[rand.randrange(n_actions)]], device=device, dtype=torch.long)

    def optimize_model():
        if len(memory) < BATCH_SIZE:
            return None
        transitions = memory.sample(BATCH_SIZE)
        # Transpose the batch: a list of Transitions becomes a Transition of tuples.
        batch = Transition(*zip(*transitions))

        # Compute a mask of non-final states and concatenate the batch elements
        # (a final state would've been the one after which simulation ended)
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None,
                                                batch.next_state)), device=device, dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state
                                           if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)

        # Q(s_t, a): the network's value of the action each transition actually took.
        state_action_values = policy_net(state_batch).gather(1, action_batch)

        # V(s_{t+1}) for all next states, from the older target_net; 0 where the episode ended.
        next_state_values = torch.zeros(BATCH_SIZE, device=device)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        # Compute the expected Q values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch

        # Compute Huber loss
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))

        # Optimize the model
        optimizer.zero_grad()
        loss.backward()
        # In-place gradient clipping
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        return loss.item()

    losses = []
    episode_durations = []
    episode_returns = []
    actions_taken = []
    for i_episode in range(args.episodes):
        # Initialize the environment and get its state
        state, info = env.reset()
        state = torch.tensor(state, dtype=torch.float32, device=device).unsqueeze(0)
        episode_return = 0.0
        for t in count():
            action = select_action(state)
            actions_taken.append(action.item())
            observation, reward, terminated, truncated, _ = env.step(action.item())
            episode_return += reward
            reward = torch.tensor([reward], device=device)
            done = terminated or truncated

            if terminated:
                next_state = None
            else:
                next_state = torch.tensor(observation, dtype=torch.float32, device=device).unsqueeze(0)

            # Store the transition in memory
            memory.push(state, action, next_state, reward)

            # Move to the next state
            state = next_state

            # Perform one step of the optimization (on the policy network)
            loss = optimize_model()
            if loss is not None:
                losses.append(loss)

            # Soft update of the target network's weights
            # θ′ ← τ θ + (1 −τ )θ′
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key]*TAU + target_net_state_dict[key]*(1-TAU)
            target_net.load_state_dict(target_net_state_dict)

            if done:
                episode_durations.append(t + 1)
                episode_returns.append(episode_return)
                break
        if not args.quiet:
            print(f"episode {i_episode}: {episode_durations[-1]} steps, return {episode_returns[-1]:.2f}")

    # The tutorial plots a moving average of the durations; a window of 3 fits these few episodes.
    durations_t = torch.tensor(episode_durations, dtype=torch.float)
    means = durations_t.unfold(0, 3, 1).mean(1).view(-1)
    means = torch.cat((torch.zeros(2), means))

    # What the trained network thinks of each cell at the start of an episode.
    with torch.no_grad():
        cells = torch.tensor(np.stack([np.array([i / 7, 1 - i / 7, 0.0], dtype=np.float32) for i in range(1, 7)]),
                             device=device)
        q_values = policy_net(cells)
    if not args.quiet:
        print('Complete')
    return {"losses": losses, "durations": episode_durations, "returns": episode_returns,
            "mean_durations": means.tolist(), "actions": actions_taken, "q_values": q_values.cpu().tolist()}


if __name__ == '__main__':
    print(json.dumps(main()))
