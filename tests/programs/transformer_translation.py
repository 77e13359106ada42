"""A sequence-to-sequence `nn.Transformer` translator, written the way PyTorch's tutorial
"Language Translation with nn.Transformer and torchtext" writes it.

The "languages" are synthetic: a source sentence is a random word sequence, and its translation
reverses it and maps every word through a fixed dictionary, so attention has to learn a
reordering. Sentences are wrapped in BOS/EOS, padded with `pad_sequence` (sequence-first, as the
tutorial's batches are). The model is the tutorial's `Seq2SeqTransformer`: `TokenEmbedding`
(`embedding(tokens.long()) * math.sqrt(emb_size)`), `PositionalEncoding` (a `pos_embedding`
buffer built with `torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)`,
sin/cos strided assignment, `unsqueeze(-2)`), `nn.Transformer` with a generator Linear, and
`encode`/`decode` methods for inference. `create_mask` builds the tutorial's float causal mask
from `torch.triu(torch.ones(...)) == 1` with `masked_fill(..., float('-inf'))` (checked against
`nn.Transformer.generate_square_subsequent_mask`), turned boolean (`== float('-inf')`) to match
the key padding masks `(src == PAD_IDX).transpose(0, 1)`. Training uses `CrossEntropyLoss(ignore_index=PAD_IDX,
label_smoothing=0.1)` on `logits.reshape(-1, logits.shape[-1])` and Adam with
`betas=(0.9, 0.98), eps=1e-9`; `xavier_uniform_` initialises every matrix. Evaluation computes
the validation loss and greedy-decodes sentences token by token (`torch.max(prob, dim=1)`,
`torch.cat` of `torch.ones(1, 1).type_as(src.data).fill_(next_word)`), compared as strings.
"""
import argparse
import json
import math

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
from tensorplug import Tensor
from tensorplug.nn import Transformer
from tensorplug.nn.utils.rnn import pad_sequence

UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3
SPECIAL_SYMBOLS = ['<unk>', '<pad>', '<bos>', '<eos>']
SRC_WORDS = ['ich', 'du', 'sie', 'wir', 'haus', 'hund', 'katze', 'baum', 'rot', 'blau', 'gross', 'klein']
TGT_WORDS = ['i', 'you', 'she', 'we', 'house', 'dog', 'cat', 'tree', 'red', 'blue', 'big', 'small']


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 64):
        super(PositionalEncoding, self).__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('pos_embedding', pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super(TokenEmbedding, self).__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                 dim_feedforward=512, dropout=0.1):
        super(Seq2SeqTransformer, self).__init__()
        self.transformer = Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                       num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                       dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def generate_square_subsequent_mask(sz, device):
    mask = (torch.triu(torch.ones((sz, sz), device=device)) == 1).transpose(0, 1)
    mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
    return mask


def create_mask(src, tgt, device):
    src_seq_len = src.shape[0]
    tgt_seq_len = tgt.shape[0]
    # Boolean, like the padding masks (True: may not attend): PyTorch deprecates mixing a float
    # attention mask with a boolean key padding mask, and warns about it on every call.
    tgt_mask = generate_square_subsequent_mask(tgt_seq_len, device) == float('-inf')
    src_mask = torch.zeros((src_seq_len, src_seq_len), device=device).type(torch.bool)
    src_padding_mask = (src == PAD_IDX).transpose(0, 1)
    tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def make_pairs(rng, count, max_len):
    pairs = []
    for _ in range(count):
        words = rng.integers(0, len(SRC_WORDS), int(rng.integers(3, max_len + 1)))
        pairs.append((' '.join(SRC_WORDS[w] for w in words), ' '.join(TGT_WORDS[w] for w in words[::-1])))
    return pairs


def tensor_transform(token_ids):
    return torch.cat((torch.tensor([BOS_IDX]), torch.tensor(token_ids), torch.tensor([EOS_IDX])))


def collate_fn(batch, src_vocab, tgt_vocab):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(tensor_transform([src_vocab[w] for w in src_sample.split()]))
        tgt_batch.append(tensor_transform([tgt_vocab[w] for w in tgt_sample.split()]))
    return pad_sequence(src_batch, padding_value=PAD_IDX), pad_sequence(tgt_batch, padding_value=PAD_IDX)


def greedy_decode(model, src, src_mask, max_len, start_symbol, device):
    src = src.to(device)
    src_mask = src_mask.to(device)
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(device)
    for i in range(max_len - 1):
        memory = memory.to(device)
        tgt_mask = (generate_square_subsequent_mask(ys.size(0), device).type(torch.bool)).to(device)
        out = model.decode(ys, memory, tgt_mask)
        out = out.transpose(0, 1)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys


def init_from_numpy(model, seed):
    """Redraw every matrix as xavier_uniform_ draws it and every Linear bias within PyTorch's
    default bound 1/sqrt(fan_in), with NumPy; LayerNorms and attention biases keep their
    constants."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                fan_out, fan_in = p.shape[0], p[0].numel()
                bound = math.sqrt(6.0 / (fan_in + fan_out))
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
        for name, module in model.named_modules():
            if isinstance(module, nn.Linear) and module.bias is not None and not name.endswith('out_proj'):
                bound = 1.0 / math.sqrt(module.in_features)
                module.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(module.bias.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='nn.Transformer translation of a synthetic language')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--train-size', type=int, default=48)
    parser.add_argument('--emb-size', type=int, default=32)
    parser.add_argument('--nhead', type=int, default=4)
    parser.add_argument('--ffn-hid-dim', type=int, default=64)
    parser.add_argument('--layers', type=int, default=2)
    parser.add_argument('--lr', type=float, default=1e-3)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--device', default=None, help='default: cuda if available, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    DEVICE = torch.device(args.device if args.device is not None else 'cuda' if torch.cuda.is_available() else 'cpu')

    rng = np.random.default_rng(args.seed)
    src_vocab = {w: i for i, w in enumerate(SPECIAL_SYMBOLS + SRC_WORDS)}
    tgt_vocab = {w: i for i, w in enumerate(SPECIAL_SYMBOLS + TGT_WORDS)}
    tgt_itos = {i: w for w, i in tgt_vocab.items()}
    train_pairs, val_pairs = make_pairs(rng, args.train_size, 6), make_pairs(rng, 16, 6)

    transformer = Seq2SeqTransformer(args.layers, args.layers, args.emb_size, args.nhead, len(src_vocab),
                                     len(tgt_vocab), args.ffn_hid_dim, dropout=args.dropout)
    for p in transformer.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    init_from_numpy(transformer, args.seed)
    transformer = transformer.to(DEVICE)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)
    optimizer = torch.optim.Adam(transformer.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    reference_mask = nn.Transformer.generate_square_subsequent_mask(7, device=DEVICE)
    assert torch.equal(generate_square_subsequent_mask(7, DEVICE), reference_mask)

    def batches(pairs):
        for start in range(0, len(pairs), args.batch_size):
            yield collate_fn(pairs[start:start + args.batch_size], src_vocab, tgt_vocab)

    losses, val_losses = [], []
    for epoch in range(1, args.epochs + 1):
        transformer.train()
        for src, tgt in batches(train_pairs):
            src, tgt = src.to(DEVICE), tgt.to(DEVICE)
            tgt_input = tgt[:-1, :]
            src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input, DEVICE)
            logits = transformer(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                                 src_padding_mask)
            optimizer.zero_grad()
            tgt_out = tgt[1:, :]
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        transformer.eval()
        total = 0.0
        with torch.no_grad():
            for src, tgt in batches(val_pairs):
                src, tgt = src.to(DEVICE), tgt.to(DEVICE)
                tgt_input = tgt[:-1, :]
                src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input, DEVICE)
                logits = transformer(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                                     src_padding_mask)
                total += loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:, :].reshape(-1)).item()
        val_losses.append(total / math.ceil(len(val_pairs) / args.batch_size))
        if not args.quiet:
            print(f"Epoch: {epoch}, Train loss: {losses[-1]:.3f}, Val loss: {val_losses[-1]:.3f}")

    def translate(src_sentence):
        transformer.eval()
        src = tensor_transform([src_vocab[w] for w in src_sentence.split()]).view(-1, 1)
        num_tokens = src.shape[0]
        src_mask = (torch.zeros(num_tokens, num_tokens)).type(torch.bool)
        with torch.no_grad():
            tgt_tokens = greedy_decode(transformer, src, src_mask, max_len=num_tokens + 5,
                                       start_symbol=BOS_IDX, device=DEVICE).flatten()
        words = [tgt_itos[i] for i in tgt_tokens.cpu().tolist()]
        return " ".join(words).replace("<bos>", "").replace("<eos>", "").strip()

    translations = [translate(src) for src, _ in val_pairs[:3]]
    if not args.quiet:
        for (src, tgt), out in zip(val_pairs[:3], translations):
            print(f'{src} -> {out!r} (reference {tgt!r})')
    return {"losses": losses, "val_losses": val_losses, "translation": " | ".join(translations)}


if __name__ == '__main__':
    print(json.dumps(main()))
