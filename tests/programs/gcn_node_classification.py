"""Semi-supervised node classification with a two-layer graph convolutional network, trained the
way Kipf & Welling's GCN is trained in the pygcn example.

A synthetic citation-style graph stands in for Cora: NumPy draws a planted-partition graph (nodes
of one class link to each other far more often than across classes) and bag-of-words features
whose word frequencies depend on the class. The adjacency matrix with self loops is normalised
symmetrically, D^-1/2 (A + I) D^-1/2, and kept as a sparse COO tensor; each graph convolution is
`torch.spmm(adj, x @ W)`. Training uses dropout, ReLU, log_softmax and nll_loss on the training
nodes only (a boolean mask), Adam with weight decay, and reports accuracy on the validation and
test nodes (index tensors), as pygcn's train.py does, plus a label-propagation baseline computed
with `torch.sparse.mm`.
"""
import argparse
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim
from tensorplug.nn.parameter import Parameter


class GraphConvolution(nn.Module):
    """One graph convolution, as in the paper: the layer's input projected by W, then averaged
    over each node's normalised neighbourhood by the sparse adjacency."""

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output

    def __repr__(self):
        return f'{self.__class__.__name__} ({self.in_features} -> {self.out_features})'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def normalized_adjacency(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 of an undirected graph given by one direction of each edge."""
    self_loops = torch.arange(num_nodes).unsqueeze(0).repeat(2, 1)
    edge_index = torch.cat([edge_index, edge_index.flip(0), self_loops], dim=1)
    adj = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.size(1)), (num_nodes, num_nodes))
    # Coalescing sums the entries of an edge drawn twice; the graph is unweighted.
    adj = adj.coalesce()
    indices, values = adj.indices(), adj.values().clamp(max=1.0)
    adj = torch.sparse_coo_tensor(indices, values, adj.size())
    degree = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = degree.pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.
    row, col = indices
    return torch.sparse_coo_tensor(indices, d_inv_sqrt[row] * values * d_inv_sqrt[col], adj.size()).coalesce()


def load_data(rng, num_nodes=120, num_features=40, num_classes=4, p_in=0.12, p_out=0.01):
    """A planted-partition graph with class-dependent bag-of-words features, row-normalised."""
    labels = rng.integers(0, num_classes, num_nodes)
    same = labels[:, None] == labels[None, :]
    draw = rng.uniform(size=(num_nodes, num_nodes))
    linked = np.triu(draw < np.where(same, p_in, p_out), k=1)
    edges = np.stack(np.nonzero(linked))
    word_rates = rng.uniform(0.02, 0.3, (num_classes, num_features))
    features = (rng.uniform(size=(num_nodes, num_features)) < word_rates[labels]).astype(np.float32)
    features = torch.from_numpy(features)
    features = features / features.sum(1, keepdim=True).clamp(min=1.0)
    adj = normalized_adjacency(torch.from_numpy(edges.astype(np.int64)), num_nodes)
    order = rng.permutation(num_nodes)
    idx_train = torch.from_numpy(order[:40].astype(np.int64))
    idx_val = torch.LongTensor(order[40:70].tolist())
    idx_test = torch.from_numpy(order[70:].astype(np.int64))
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[idx_train] = True
    return adj, features, torch.from_numpy(labels.astype(np.int64)), train_mask, idx_val, idx_test


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights (Glorot-uniform bounds, as the paper's initialisation)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = math.sqrt(6.0 / sum(p.shape)) if p.dim() > 1 else 1.0 / math.sqrt(p.numel())
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='GCN node classification on a synthetic graph')
    parser.add_argument('--epochs', type=int, default=30)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--weight_decay', type=float, default=5e-4)
    parser.add_argument('--hidden', type=int, default=16)
    parser.add_argument('--dropout', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=42)
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
    adj, features, labels, train_mask, idx_val, idx_test = load_data(rng)
    num_classes = int(labels.max()) + 1
    model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=num_classes, dropout=args.dropout)
    init_from_numpy(model, args.seed)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    model.to(device)
    features, adj, labels = features.to(device), adj.to(device), labels.to(device)
    train_mask, idx_val, idx_test = train_mask.to(device), idx_val.to(device), idx_test.to(device)

    losses, val_losses, val_acc = [], [], []
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[train_mask], labels[train_mask])
        loss_train.backward()
        optimizer.step()

        # Evaluate validation set performance separately, deactivating dropout.
        model.eval()
        with torch.no_grad():
            output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        acc_val = accuracy(output[idx_val], labels[idx_val])
        losses.append(loss_train.item())
        val_losses.append(loss_val.item())
        val_acc.append(acc_val.item())
        if not args.quiet and epoch % 10 == 0:
            print(f'Epoch: {epoch + 1:04d} loss_train: {losses[-1]:.4f} loss_val: {val_losses[-1]:.4f} '
                  f'acc_val: {val_acc[-1]:.4f}')

    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    acc_test = accuracy(output[idx_test], labels[idx_test])

    # Baseline: two steps of label propagation from the training labels.
    seeds = F.one_hot(labels, num_classes).float() * train_mask.unsqueeze(1)
    propagated = torch.sparse.mm(adj, torch.sparse.mm(adj, seeds))
    acc_propagation = accuracy(propagated[idx_test], labels[idx_test])
    if not args.quiet:
        print(f'Test set results: loss= {loss_test.item():.4f} accuracy= {acc_test.item():.4f} '
              f'(label propagation: {acc_propagation.item():.4f})')
    return {"losses": losses, "val_loss": val_losses, "val_accuracy": val_acc, "test_loss": loss_test.item(),
            "test_accuracy": acc_test.item(), "propagation_accuracy": acc_propagation.item(),
            "adjacency_nnz": adj._nnz(), "adjacency_sum": adj.to_dense().sum().item()}


if __name__ == '__main__':
    print(json.dumps(main()))
