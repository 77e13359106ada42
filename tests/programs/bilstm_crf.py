"""A BiLSTM-CRF tagger, written the way PyTorch's tutorial "Advanced: Making Dynamic Decisions and
the Bi-LSTM CRF" writes it, with the batched CRF that sequence-labelling code (pytorch-crf style)
uses next to it.

The tutorial's model, kept as it is written: a bidirectional `nn.LSTM` over one sentence
(`embeds.view(len(sentence), 1, -1)`), a transition matrix `nn.Parameter` whose START row and STOP
column are set to -10000 through `.data[...]`, the forward algorithm over
`torch.full((1, n), -10000.)` with its `log_sum_exp` helper (`torch.max` and `view(1, -1).expand`),
the gold path score from `torch.cat([torch.tensor([START], dtype=torch.long), tags])`, Viterbi
decoding with `argmax(...).item()` backpointers, and the tutorial's
`optim.SGD(lr=0.01, weight_decay=1e-4)` loop over sentences with `model.zero_grad()`. The LSTM's
initial state is drawn by NumPy where the tutorial calls `torch.randn`.

The batched CRF runs the same model on a padded batch: emissions for every sentence at once, the
forward algorithm with `torch.logsumexp` over broadcast `(batch, 1, tags) + (tags, tags)` scores,
a length mask through `torch.where`, the gold score with `gather`, and Viterbi with
`max(dim=1)` and `gather` backtracking, `flip` of the collected path. Its loss must equal the sum
of the tutorial's per-sentence losses and its paths the tutorial's paths.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.optim as optim


START_TAG = "<START>"
STOP_TAG = "<STOP>"


def argmax(vec):
    # return the argmax as a python int
    _, idx = torch.max(vec, 1)
    return idx.item()


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


# Compute log sum exp in a numerically stable way for the forward algorithm
def log_sum_exp(vec):
    max_score = vec[0, argmax(vec)]
    max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
    return max_score + torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))


class BiLSTM_CRF(nn.Module):

    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim, seed):
        super(BiLSTM_CRF, self).__init__()
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.vocab_size = vocab_size
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.rng = np.random.default_rng(seed)

        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)

        # Maps the output of the LSTM into tag space.
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)

        # Matrix of transition parameters.  Entry i,j is the score of transitioning *to* i *from* j.
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))

        # These two statements enforce the constraint that we never transfer
        # to the start tag and we never transfer from the stop tag
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000

        self.hidden = self.init_hidden()

    def init_hidden(self, batch=1):
        device = self.transitions.device
        draw = lambda: torch.from_numpy(self.rng.standard_normal((2, batch, self.hidden_dim // 2)).astype(np.float32))
        return (draw().to(device), draw().to(device))

    def _forward_alg(self, feats):
        # Do the forward algorithm to compute the partition function
        init_alphas = torch.full((1, self.tagset_size), -10000., device=feats.device)
        # START_TAG has all of the score.
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.

        # Wrap in a variable so that we will get automatic backprop
        forward_var = init_alphas

        # Iterate through the sentence
        for feat in feats:
            alphas_t = []  # The forward tensors at this timestep
            for next_tag in range(self.tagset_size):
                # broadcast the emission score: it is the same regardless of the previous tag
                emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                # the ith entry of trans_score is the score of transitioning to next_tag from i
                trans_score = self.transitions[next_tag].view(1, -1)
                # The ith entry of next_tag_var is the value for the edge (i -> next_tag) before we do log-sum-exp
                next_tag_var = forward_var + trans_score + emit_score
                # The forward variable for this tag is log-sum-exp of all the scores.
                alphas_t.append(log_sum_exp(next_tag_var).view(1))
            forward_var = torch.cat(alphas_t).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        alpha = log_sum_exp(terminal_var)
        return alpha

    def _get_lstm_features(self, sentence):
        self.hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, self.hidden = self.lstm(embeds, self.hidden)
        lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
        lstm_feats = self.hidden2tag(lstm_out)
        return lstm_feats

    def _score_sentence(self, feats, tags):
        # Gives the score of a provided tag sequence
        score = torch.zeros(1, device=feats.device)
        tags = torch.cat([torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long, device=feats.device), tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
        return score

    def _viterbi_decode(self, feats):
        backpointers = []

        # Initialize the viterbi variables in log space
        init_vvars = torch.full((1, self.tagset_size), -10000., device=feats.device)
        init_vvars[0][self.tag_to_ix[START_TAG]] = 0

        # forward_var at step i holds the viterbi variables for step i-1
        forward_var = init_vvars
        for feat in feats:
            bptrs_t = []  # holds the backpointers for this step
            viterbivars_t = []  # holds the viterbi variables for this step

            for next_tag in range(self.tagset_size):
                # next_tag_var[i] holds the viterbi variable for tag i at the previous step, plus
                # the score of transitioning from tag i to next_tag. We don't include the emission
                # scores here because the max does not depend on them (we add them in below)
                next_tag_var = forward_var + self.transitions[next_tag]
                best_tag_id = argmax(next_tag_var)
                bptrs_t.append(best_tag_id)
                viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
            # Now add in the emission scores, and assign forward_var to the set of viterbi
            # variables we just computed
            forward_var = (torch.cat(viterbivars_t) + feat).view(1, -1)
            backpointers.append(bptrs_t)

        # Transition to STOP_TAG
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]

        # Follow the back pointers to decode the best path.
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        # Pop off the start tag (we dont want to return that to the caller)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]  # Sanity check
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return forward_score - gold_score

    def forward(self, sentence):  # dont confuse this with _forward_alg above.
        # Get the emission scores from the BiLSTM
        lstm_feats = self._get_lstm_features(sentence)

        # Find the best path, given the features.
        score, tag_seq = self._viterbi_decode(lstm_feats)
        return score, tag_seq


def batched_emissions(model, padded, lengths):
    """(batch, time, tags) emission scores of a padded batch, each sentence as the tutorial runs it."""
    feats = []
    for row, length in zip(padded, lengths):
        sentence_feats = model._get_lstm_features(row[:length])
        pad = sentence_feats.new_zeros(padded.shape[1] - length, model.tagset_size)
        feats.append(torch.cat([sentence_feats, pad]))
    return torch.stack(feats)


def batched_crf_nll(transitions, emissions, tags, mask, start, stop):
    """Summed negative log-likelihood of a padded batch: forward algorithm minus gold score."""
    batch, steps, _ = emissions.shape
    # alpha[b, j]: log-sum of the scores of every path ending in tag j; transitions[to, from]
    alpha = transitions[:, start].unsqueeze(0) + emissions[:, 0]
    for t in range(1, steps):
        scores = alpha.unsqueeze(1) + transitions.unsqueeze(0) + emissions[:, t].unsqueeze(2)
        alpha = torch.where(mask[:, t].unsqueeze(1), torch.logsumexp(scores, dim=2), alpha)
    log_partition = torch.logsumexp(alpha + transitions[stop].unsqueeze(0), dim=1)

    emitted = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)
    moved = transitions[tags[:, 1:], tags[:, :-1]]
    gold = transitions[tags[:, 0], start] + emitted[:, 0]
    gold = gold + ((emitted[:, 1:] + moved) * mask[:, 1:]).sum(dim=1)
    last_tags = tags.gather(1, (mask.sum(dim=1, keepdim=True) - 1)).squeeze(1)
    gold = gold + transitions[stop, last_tags]
    return (log_partition - gold).sum()


def batched_viterbi(transitions, emissions, mask, start, stop):
    batch, steps, _ = emissions.shape
    score = transitions[:, start].unsqueeze(0) + emissions[:, 0]
    history = []
    for t in range(1, steps):
        candidates = score.unsqueeze(1) + transitions.unsqueeze(0)
        best, best_prev = candidates.max(dim=2)
        history.append(best_prev)
        score = torch.where(mask[:, t].unsqueeze(1), best + emissions[:, t], score)
    score = score + transitions[stop].unsqueeze(0)
    best_score, best_last = score.max(dim=1)
    lengths = mask.sum(dim=1)
    paths = [best_last]
    current = best_last
    for t in range(steps - 1, 0, -1):
        previous = history[t - 1].gather(1, current.unsqueeze(1)).squeeze(1)
        # positions past a sentence's end keep the last tag
        current = torch.where(t < lengths, previous, current)
        paths.append(current)
    return best_score, torch.stack(paths, dim=1).flip(1)


def synthetic_corpus(rng, count):
    """Sentences from a tiny grammar: determiners, adjectives and nouns form B-NP I-NP runs."""
    dets, adjs, nouns = ["the", "a", "this"], ["big", "red", "old", "wise"], ["dog", "cat", "apple", "king"]
    verbs, others = ["ate", "saw", "likes"], ["today", "quickly", "here"]
    data = []
    for _ in range(count):
        words, tags = [], []
        for part in range(rng.integers(2, 4)):
            if part == 1:
                words.append(verbs[rng.integers(len(verbs))]); tags.append("O")
                continue
            words.append(dets[rng.integers(len(dets))]); tags.append("B")
            for _ in range(rng.integers(0, 2)):
                words.append(adjs[rng.integers(len(adjs))]); tags.append("I")
            words.append(nouns[rng.integers(len(nouns))]); tags.append("I")
        if rng.random() < 0.5:
            words.append(others[rng.integers(len(others))]); tags.append("O")
        data.append((words, tags))
    return data


def init_from_numpy(model, seed):
    """Every parameter redrawn by NumPy (N(0, 1) for embeddings and transitions, as PyTorch's
    defaults, uniform within 1/sqrt(hidden) or 1/sqrt(fan_in) otherwise)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in ("word_embeds.weight", "transitions"):
                value = rng.standard_normal(tuple(p.shape))
            else:
                bound = 1.0 / np.sqrt(model.hidden_dim // 2 if name.startswith("lstm") else p.shape[-1])
                value = rng.uniform(-bound, bound, tuple(p.shape))
            p.copy_(torch.from_numpy(value.astype(np.float32)))
        model.transitions.data[model.tag_to_ix[START_TAG], :] = -10000
        model.transitions.data[:, model.tag_to_ix[STOP_TAG]] = -10000


def main(argv=None):
    parser = argparse.ArgumentParser(description='BiLSTM-CRF tagging, the tutorial loop and a batched CRF')
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--sentences', type=int, default=5)
    parser.add_argument('--embedding-dim', type=int, default=5)
    parser.add_argument('--hidden-dim', type=int, default=4)
    parser.add_argument('--seed', type=int, default=1)
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
    training_data = synthetic_corpus(rng, args.sentences)
    word_to_ix = {}
    for sentence, tags in training_data:
        for word in sentence:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}

    model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, args.embedding_dim, args.hidden_dim, args.seed)
    init_from_numpy(model, args.seed)
    model.to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)

    losses, sentence_losses = [], []
    for epoch in range(args.epochs):
        total_loss = 0.0
        for sentence, tags in training_data:
            # Step 1. Remember that Pytorch accumulates gradients. We need to clear them out before each instance
            model.zero_grad()
            # Step 2. Get our inputs ready for the network, that is, turn them into Tensors of word indices.
            sentence_in = prepare_sequence(sentence, word_to_ix).to(device)
            targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long).to(device)
            # Step 3. Run our forward pass.
            loss = model.neg_log_likelihood(sentence_in, targets)
            # Step 4. Compute the loss, gradients, and update the parameters by calling optimizer.step()
            loss.backward()
            optimizer.step()
            sentence_losses.append(loss.item())
            total_loss += loss.item()
        losses.append(total_loss)

    # The batched CRF on the whole padded corpus, against the tutorial's per-sentence code.
    lengths = [len(sentence) for sentence, _ in training_data]
    steps = max(lengths)
    padded = torch.zeros(len(training_data), steps, dtype=torch.long)
    tag_ids = torch.zeros(len(training_data), steps, dtype=torch.long)
    for b, (sentence, tags) in enumerate(training_data):
        padded[b, :len(sentence)] = prepare_sequence(sentence, word_to_ix)
        tag_ids[b, :len(tags)] = torch.tensor([tag_to_ix[t] for t in tags])
    padded, tag_ids = padded.to(device), tag_ids.to(device)
    mask = torch.arange(steps, device=device).unsqueeze(0) < torch.tensor(lengths, device=device).unsqueeze(1)

    start, stop = tag_to_ix[START_TAG], tag_to_ix[STOP_TAG]
    # The initial LSTM state is drawn anew on every call, so both CRFs score the same emissions.
    emissions = batched_emissions(model, padded, lengths)
    batch_loss = batched_crf_nll(model.transitions, emissions, tag_ids, mask, start, stop)
    batch_grads = torch.autograd.grad(batch_loss, [model.transitions, emissions])
    per_sentence = sum(model._forward_alg(emissions[b, :length]) - model._score_sentence(emissions[b, :length], tag_ids[b, :length])
                       for b, length in enumerate(lengths))
    sentence_grads = torch.autograd.grad(per_sentence, [model.transitions, emissions])
    assert abs(batch_loss.item() - per_sentence.item()) <= 1e-4 * abs(per_sentence.item()), (batch_loss, per_sentence)
    for batched, looped in zip(batch_grads, sentence_grads):
        assert torch.allclose(batched, looped, atol=1e-4), (batched - looped).abs().max()

    # Check predictions after training
    with torch.no_grad():
        emissions = batched_emissions(model, padded, lengths)
        decoded, scores = [], []
        for b, length in enumerate(lengths):
            score, path = model._viterbi_decode(emissions[b, :length])
            decoded.append(path)
            scores.append(score.item())
        batch_scores, batch_paths = batched_viterbi(model.transitions, emissions, mask, start, stop)
        _, tagged = model(prepare_sequence(training_data[0][0], word_to_ix).to(device))
    for b, length in enumerate(lengths):
        assert batch_paths[b, :length].tolist() == decoded[b], (batch_paths[b], decoded[b])
    assert torch.allclose(batch_scores.cpu(), torch.tensor(scores), rtol=1e-5, atol=1e-4)
    gold = [[tag_to_ix[t] for t in tags] for _, tags in training_data]
    accuracy = sum(p == g for path, ref in zip(decoded, gold) for p, g in zip(path, ref)) / sum(lengths)
    if not args.quiet:
        print(f'last loss {losses[-1]:.4f} batched loss {batch_loss.item():.4f} tag accuracy {accuracy:.3f}')
    return {"losses": losses, "sentence_losses": sentence_losses, "batch_loss": [batch_loss.item()], "viterbi_scores": scores,
            "paths": " ".join("".join(map(str, path)) for path in decoded), "tagged": "".join(map(str, tagged)),
            "accuracy": [accuracy]}


if __name__ == '__main__':
    print(json.dumps(main()))
