"""Translation with a sequence-to-sequence network and attention, trained the way PyTorch's
"NLP From Scratch: Translation with a Sequence to Sequence Network and Attention" tutorial trains
one.

A synthetic language pair stands in for the tutorial's English-French sentences: NumPy draws
source sentences over a small vocabulary, and their "translation" maps each word through a fixed
dictionary and reverses the word order, so the decoder must attend far from the diagonal. The
encoder embeds the source and runs a GRU (batch_first); the decoder embeds its previous word,
attends over the encoder outputs with additive (Bahdanau) attention, and feeds the attention
context with the embedding into its own GRU. Training uses teacher forcing for a NumPy-drawn
share of the batches (the decoder's own greedy guess otherwise), log_softmax and NLLLoss, and Adam
for encoder and decoder; evaluation decodes a few sentences greedily with `topk(1)` and stops at
EOS.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug import optim
from tensorplug.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 8


class Lang:
    """A vocabulary: word <-> index, with the tutorial's two reserved tokens."""

    def __init__(self, name):
        self.name = name
        self.word2index = {}
        self.word2count = {}
        self.index2word = {SOS_token: "SOS", EOS_token: "EOS"}
        self.n_words = 2

    def add_sentence(self, sentence):
        for word in sentence.split(' '):
            self.add_word(word)

    def add_word(self, word):
        if word not in self.word2index:
            self.word2index[word] = self.n_words
            self.word2count[word] = 1
            self.index2word[self.n_words] = word
            self.n_words += 1
        else:
            self.word2count[word] += 1


def make_pairs(rng, count, words=12):
    """Sentences of 3-6 words and their translations: each word through a fixed dictionary,
    the order reversed."""
    source_words = [f"w{i}" for i in range(words)]
    dictionary = {w: f"m{j}" for w, j in zip(source_words, np.random.default_rng(7).permutation(words))}
    pairs = []
    for _ in range(count):
        sentence = [source_words[i] for i in rng.integers(0, words, rng.integers(3, MAX_LENGTH - 1))]
        translation = [dictionary[w] for w in reversed(sentence)]
        pairs.append((' '.join(sentence), ' '.join(translation)))
    return pairs


def indexes_from_sentence(lang, sentence):
    return [lang.word2index[word] for word in sentence.split(' ')]


def tensor_from_sentence(lang, sentence, device):
    indexes = indexes_from_sentence(lang, sentence)
    indexes.append(EOS_token)
    return torch.tensor(indexes, dtype=torch.long, device=device).view(1, -1)


def get_dataloader(pairs, input_lang, output_lang, batch_size, shuffle):
    """Every pair as a row of token ids ending in EOS, zero-padded to MAX_LENGTH."""
    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = indexes_from_sentence(input_lang, inp) + [EOS_token]
        tgt_ids = indexes_from_sentence(output_lang, tgt) + [EOS_token]
        input_ids[idx, :len(inp_ids)] = inp_ids
        target_ids[idx, :len(tgt_ids)] = tgt_ids
    train_data = TensorDataset(torch.LongTensor(input_ids), torch.LongTensor(target_ids))
    train_sampler = RandomSampler(train_data) if shuffle else SequentialSampler(train_data)
    return DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    """Additive attention: score(q, k) = v . tanh(W q + U k), softmax over the source positions."""

    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        # query: (batch, 1, hidden); keys: (batch, source length, hidden)
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=encoder_outputs.device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, rng,
                teacher_forcing_ratio):
    total_loss, losses = 0, []
    for input_tensor, target_tensor in dataloader:
        input_tensor, target_tensor = input_tensor.to(encoder.embedding.weight.device), \
            target_tensor.to(encoder.embedding.weight.device)
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        use_teacher_forcing = rng.uniform() < teacher_forcing_ratio
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden,
                                        target_tensor if use_teacher_forcing else None)

        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()
        total_loss += loss.item()
        losses.append(loss.item())
    return total_loss / len(dataloader), losses


def evaluate(encoder, decoder, sentence, input_lang, output_lang, device):
    with torch.no_grad():
        input_tensor = tensor_from_sentence(input_lang, sentence, device)
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append('<EOS>')
                break
            decoded_words.append(output_lang.index2word[idx.item()])
    return decoded_words, decoded_ids.tolist(), decoder_attn


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'embedding' in name:
                p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
                continue
            fan_in = p.shape[1] if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='seq2seq translation with attention on a synthetic language pair')
    parser.add_argument('--hidden-size', type=int, default=32)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--teacher-forcing-ratio', type=float, default=0.75)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--shuffle', action=argparse.BooleanOptionalAction, default=True,
                        help="draw the batches in a random order (the library's generator)")
    parser.add_argument('--seed', type=int, default=3)
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
    pairs = make_pairs(rng, 64)
    input_lang, output_lang = Lang('src'), Lang('tgt')
    for src, tgt in pairs:
        input_lang.add_sentence(src)
        output_lang.add_sentence(tgt)
    train_dataloader = get_dataloader(pairs, input_lang, output_lang, args.batch_size, args.shuffle)

    encoder = EncoderRNN(input_lang.n_words, args.hidden_size, args.dropout)
    decoder = AttnDecoderRNN(args.hidden_size, output_lang.n_words, args.dropout)
    init_from_numpy(encoder, args.seed)
    init_from_numpy(decoder, args.seed + 1)
    encoder, decoder = encoder.to(device), decoder.to(device)
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=args.lr)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=args.lr)
    criterion = nn.NLLLoss()

    losses, epoch_losses = [], []
    for epoch in range(1, args.epochs + 1):
        encoder.train()
        decoder.train()
        epoch_loss, step_losses = train_epoch(train_dataloader, encoder, decoder, encoder_optimizer,
                                              decoder_optimizer, criterion, rng, args.teacher_forcing_ratio)
        losses.extend(step_losses)
        epoch_losses.append(epoch_loss)
        if not args.quiet:
            print(f'epoch {epoch}: loss {epoch_loss:.4f}')

    encoder.eval()
    decoder.eval()
    decoded, attention_peaks = [], []
    for src, tgt in pairs[:4]:
        words, ids, attentions = evaluate(encoder, decoder, src, input_lang, output_lang, device)
        decoded.append(' '.join(str(i) for i in ids))
        attention_peaks.extend(attentions[0].max(dim=1).values.tolist())
        if not args.quiet:
            print('>', src)
            print('=', tgt)
            print('<', ' '.join(words))
    return {"losses": losses, "epoch_loss": epoch_losses, "attention_peaks": attention_peaks,
            "decoded": ' | '.join(decoded)}


if __name__ == '__main__':
    print(json.dumps(main()))
