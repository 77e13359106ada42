"""A graph attention network on edge lists, written the way pyGAT and PyTorch Geometric's
message-passing code (GATConv, `torch_scatter`-style softmax) write it in plain PyTorch.

Node classification on a synthetic graph of planted communities. The graph is an `edge_index`
(2, E) tensor made undirected with `torch.cat([ei, ei.flip(0)])`, de-duplicated with
`torch.unique(dim=1)` and given self loops (`torch.arange` stacked). Each GAT layer projects the
nodes (`x @ W` viewed as heads), scores every edge with `(h * att_src).sum(-1)` gathered by
`index_select` at the source and target, `F.leaky_relu(negative_slope=0.2)`, then the edge
softmax per target node: the group maximum by `scatter_reduce(reduce="amax", include_self=False)`,
`exp`, the group sum by `scatter_add_` on an `index.unsqueeze(-1).expand_as(...)` index, and
attention dropout; messages are summed into their targets with `index_add_`. Heads are
concatenated with ELU in the hidden layer and averaged in the output layer. The edge softmax is
checked against a dense masked formulation (`masked_fill(~adj, -inf)`, `softmax`), the graph's
degrees come from `torch.bincount`, and training uses Adam with weight decay, a boolean train
mask and early-stopping bookkeeping on the validation loss (`copy.deepcopy(state_dict())`).
"""
import argparse
import copy
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F


def scatter_softmax(src, index, num_nodes):
    """Softmax of `src` (E, H) over the edges that share a target in `index` (E,)."""
    expanded = index.unsqueeze(-1).expand_as(src)
    group_max = src.new_full((num_nodes, src.size(1)), float("-inf"))
    group_max = group_max.scatter_reduce(0, expanded, src, reduce="amax", include_self=False)
    exp = (src - group_max.index_select(0, index)).exp()
    group_sum = torch.zeros_like(group_max).scatter_add_(0, expanded, exp)
    return exp / (group_sum.index_select(0, index) + 1e-16)


class GATLayer(nn.Module):
    def __init__(self, in_features, out_features, heads, concat=True, dropout=0.6, negative_slope=0.2):
        super().__init__()
        self.heads, self.out_features, self.concat = heads, out_features, concat
        self.dropout, self.negative_slope = dropout, negative_slope
        self.W = nn.Parameter(torch.empty(in_features, heads * out_features))
        self.att_src = nn.Parameter(torch.empty(1, heads, out_features))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_features))
        self.bias = nn.Parameter(torch.zeros(heads * out_features if concat else out_features))

    def edge_scores(self, x, edge_index):
        h = (x @ self.W).view(-1, self.heads, self.out_features)
        alpha_src = (h * self.att_src).sum(dim=-1)
        alpha_dst = (h * self.att_dst).sum(dim=-1)
        src, dst = edge_index
        scores = alpha_src.index_select(0, src) + alpha_dst.index_select(0, dst)
        return h, F.leaky_relu(scores, self.negative_slope)

    def forward(self, x, edge_index, return_attention=False):
        num_nodes = x.size(0)
        h, scores = self.edge_scores(x, edge_index)
        src, dst = edge_index
        alpha = scatter_softmax(scores, dst, num_nodes)
        alpha_dropped = F.dropout(alpha, p=self.dropout, training=self.training)
        messages = h.index_select(0, src) * alpha_dropped.unsqueeze(-1)
        out = torch.zeros_like(h).index_add_(0, dst, messages)
        out = out.reshape(num_nodes, -1) if self.concat else out.mean(dim=1)
        out = out + self.bias
        return (out, alpha) if return_attention else out


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, heads, dropout):
        super().__init__()
        self.dropout = dropout
        self.conv1 = GATLayer(nfeat, nhid, heads, concat=True, dropout=dropout)
        self.conv2 = GATLayer(nhid * heads, nclass, 1, concat=False, dropout=dropout)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def planted_partition(rng, nodes, classes, p_in, p_out, features):
    labels = rng.integers(0, classes, nodes)
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.random((nodes, nodes)) < np.where(same, p_in, p_out), 1)
    src, dst = np.nonzero(upper)
    centers = rng.standard_normal((classes, features))
    x = centers[labels] * 0.4 + rng.standard_normal((nodes, features))
    return np.stack([src, dst]), x.astype(np.float32), labels


def init_from_numpy(model, seed):
    """Glorot-uniform weights and attention vectors (GATConv's reset_parameters), drawn by NumPy."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                continue
            fan_in, fan_out = (p.shape[0], p.shape[1]) if name.endswith("W") else (p.shape[1], p.shape[2])
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='graph attention network on an edge list')
    parser.add_argument('--epochs', type=int, default=12)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--weight_decay', type=float, default=5e-4)
    parser.add_argument('--hidden', type=int, default=8)
    parser.add_argument('--nb_heads', type=int, default=4)
    parser.add_argument('--dropout', type=float, default=0.6)
    parser.add_argument('--seed', type=int, default=72)
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
    nodes, classes = 60, 3
    edges, features, labels = planted_partition(rng, nodes, classes, 0.2, 0.02, 12)
    edge_index = torch.from_numpy(edges).to(device)
    edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    edge_index = torch.unique(edge_index, dim=1)
    loops = torch.arange(nodes, device=device)
    edge_index = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
    degrees = torch.bincount(edge_index[1], minlength=nodes)
    x = torch.from_numpy(features).to(device)
    y = torch.from_numpy(labels).to(device)
    split = rng.permutation(nodes)
    train_mask = torch.zeros(nodes, dtype=torch.bool, device=device)
    train_mask[torch.from_numpy(split[:20]).to(device)] = True
    idx_val = torch.from_numpy(split[20:35]).to(device)
    idx_test = torch.from_numpy(split[35:]).to(device)

    model = GAT(x.size(1), args.hidden, classes, args.nb_heads, args.dropout)
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    # The edge softmax against a dense, masked softmax over each node's neighbours.
    with torch.no_grad():
        _, alpha = model.conv1(x, edge_index, return_attention=True)
        _, scores = model.conv1.edge_scores(x, edge_index)
        dense = torch.full((args.nb_heads, nodes, nodes), float("-inf"), device=device)
        dense[:, edge_index[1], edge_index[0]] = scores.t()
        adj = torch.zeros(nodes, nodes, dtype=torch.bool, device=device)
        adj[edge_index[1], edge_index[0]] = True
        dense_alpha = F.softmax(dense.masked_fill(~adj, float("-inf")), dim=-1)
        assert torch.allclose(dense_alpha[:, edge_index[1], edge_index[0]].t(), alpha, atol=1e-6)
        assert torch.allclose(alpha.new_zeros(nodes, args.nb_heads).index_add_(0, edge_index[1], alpha),
                              torch.ones(nodes, args.nb_heads, device=device), atol=1e-5)

    losses, val_losses = [], []
    best_val, best_epoch, best_state = float("inf"), -1, None
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(x, edge_index)
        loss_train = F.nll_loss(output[train_mask], y[train_mask])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())

        model.eval()
        with torch.no_grad():
            output = model(x, edge_index)
            loss_val = F.nll_loss(output[idx_val], y[idx_val])
        val_losses.append(loss_val.item())
        if loss_val.item() < best_val:
            best_val, best_epoch = loss_val.item(), epoch
            best_state = copy.deepcopy(model.state_dict())

    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        output = model(x, edge_index)
        loss_test = F.nll_loss(output[idx_test], y[idx_test])
        acc_test = output[idx_test].max(1)[1].eq(y[idx_test]).double().mean()
    if not args.quiet:
        print(f"Test set results: loss= {loss_test.item():.4f} accuracy= {acc_test.item():.4f} "
              f"(best epoch {best_epoch}, {edge_index.size(1)} edges, max degree {degrees.max().item()})")
    return {"losses": losses, "val_losses": val_losses, "test": [loss_test.item(), acc_test.item()],
            "best_epoch": [best_epoch], "edges": [edge_index.size(1), degrees.max().item()]}


if __name__ == '__main__':
    print(json.dumps(main()))
