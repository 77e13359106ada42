"""A BERT-style masked language model, written the way BERT pre-training scripts (the Hugging Face
run_mlm recipe, minimal BERT re-implementations) write one.

Sentences from a tiny template grammar, tokenised with a word vocabulary and padded to the batch's
longest, stand in for a corpus. Masking follows BERT: 15% of the real tokens become targets
(`torch.bernoulli` on a probability matrix with special tokens and padding set to 0 by
`masked_fill_`), 80% of those are replaced by [MASK], 10% by a random word, 10% kept; every other
label is -100. With `--numpy-masking` the same three Bernoulli draws and the random words come
from NumPy, so that two libraries can be compared. The model sums token, learned position
(`nn.Embedding` over `torch.arange`) and segment embeddings, applies LayerNorm and dropout, and
runs `nn.TransformerEncoder(batch_first=True, activation="gelu")` with `src_key_padding_mask`
from the attention mask; the prediction head (dense, GELU, LayerNorm) ties its decoder to the
token embedding. Training uses `F.cross_entropy(ignore_index=-100)`, AdamW with no decay on biases
and LayerNorm weights, the linear warmup-then-decay schedule of `get_linear_schedule_with_warmup`
written inline through `LambdaLR`, and `torch.nn.utils.clip_grad_norm_`. Evaluation reports the
masked-token accuracy.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.optim.lr_scheduler import LambdaLR

SPECIAL_TOKENS = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
SUBJECTS = ["the cat", "a dog", "my friend", "the teacher", "her brother", "our neighbour"]
VERBS = ["likes", "sees", "finds", "paints", "follows", "remembers"]
OBJECTS = ["the red ball", "a small house", "the old tree", "a quiet river", "the tall tower"]
ENDINGS = ["", "every day", "at night", "in the park", "with great care"]


def make_sentences(rng, count):
    sentences = []
    for _ in range(count):
        parts = [SUBJECTS[rng.integers(len(SUBJECTS))], VERBS[rng.integers(len(VERBS))],
                 OBJECTS[rng.integers(len(OBJECTS))], ENDINGS[rng.integers(len(ENDINGS))]]
        sentences.append(" ".join(part for part in parts if part))
    return sentences


class Tokenizer:
    def __init__(self, sentences):
        words = sorted({word for sentence in sentences for word in sentence.split()})
        self.vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + words)}
        self.pad_token_id, self.cls_token_id, self.sep_token_id = 0, 1, 2
        self.mask_token_id, self.unk_token_id = 3, 4

    def __len__(self):
        return len(self.vocab)

    def __call__(self, batch):
        """[CLS] words [SEP], padded to the longest: input_ids and attention_mask as tensors."""
        ids = [[self.cls_token_id] + [self.vocab.get(w, self.unk_token_id) for w in s.split()] + [self.sep_token_id]
               for s in batch]
        longest = max(len(row) for row in ids)
        input_ids = torch.tensor([row + [self.pad_token_id] * (longest - len(row)) for row in ids], dtype=torch.long)
        attention_mask = torch.tensor([[1] * len(row) + [0] * (longest - len(row)) for row in ids], dtype=torch.long)
        return {"input_ids": input_ids, "attention_mask": attention_mask}


def mask_tokens(inputs, tokenizer, mlm_probability=0.15, rng=None):
    """BERT's masking: (masked inputs, labels with -100 where no prediction is made)."""
    labels = inputs.clone()

    def bernoulli(probabilities):
        if rng is None:
            return torch.bernoulli(probabilities).bool()
        return torch.from_numpy(rng.random(tuple(probabilities.shape)) < probabilities.numpy())

    probability_matrix = torch.full(labels.shape, mlm_probability)
    special_tokens_mask = labels <= tokenizer.unk_token_id
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = bernoulli(probability_matrix)
    labels[~masked_indices] = -100

    indices_replaced = bernoulli(torch.full(labels.shape, 0.8)) & masked_indices
    inputs = inputs.clone()
    inputs[indices_replaced] = tokenizer.mask_token_id

    indices_random = bernoulli(torch.full(labels.shape, 0.5)) & masked_indices & ~indices_replaced
    if rng is None:
        random_words = torch.randint(len(SPECIAL_TOKENS), len(tokenizer), labels.shape, dtype=torch.long)
    else:
        random_words = torch.from_numpy(rng.integers(len(SPECIAL_TOKENS), len(tokenizer), tuple(labels.shape)))
    inputs[indices_random] = random_words[indices_random]
    return inputs, labels


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size, dropout):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                      + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(embeddings))


class BertForMaskedLM(nn.Module):
    def __init__(self, vocab_size, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
                 max_position_embeddings=32, type_vocab_size=2, dropout=0.1):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, hidden_size, max_position_embeddings, type_vocab_size, dropout)
        layer = nn.TransformerEncoderLayer(hidden_size, num_heads, intermediate_size, dropout,
                                           activation="gelu", batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.transform = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.GELU(),
                                       nn.LayerNorm(hidden_size, eps=1e-12))
        self.decoder = nn.Linear(hidden_size, vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.decoder.weight = self.embeddings.word_embeddings.weight  # tied, as BERT ties them

    def forward(self, input_ids, attention_mask):
        hidden = self.embeddings(input_ids)
        hidden = self.encoder(hidden, src_key_padding_mask=attention_mask == 0)
        return self.decoder(self.transform(hidden)) + self.bias


def linear_schedule_with_warmup(num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    return lr_lambda


def init_from_numpy(model, seed, std=0.02):
    """Give every randomly initialised parameter a NumPy-drawn value, N(0, 0.02) as BERT's
    initializer_range; LayerNorm ones and zero biases stay; the padding row stays 0."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() < 2:
                if p.numel() > 1 and p.min().item() == p.max().item():
                    continue
                p.zero_()
                continue
            values = rng.standard_normal(tuple(p.shape)) * std
            if name.endswith('word_embeddings.weight'):
                values[0] = 0.0
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='a tiny BERT masked LM on template sentences')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--weight-decay', type=float, default=0.01)
    parser.add_argument('--warmup-steps', type=int, default=2)
    parser.add_argument('--max-grad-norm', type=float, default=1.0)
    parser.add_argument('--dropout', type=float, default=0.1)
    parser.add_argument('--numpy-masking', action='store_true', help='draw the masking with NumPy')
    parser.add_argument('--seed', type=int, default=17)
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
    mask_rng = np.random.default_rng(args.seed + 1) if args.numpy_masking else None
    train_sentences, eval_sentences = make_sentences(rng, 64), make_sentences(rng, 32)
    tokenizer = Tokenizer(train_sentences + eval_sentences)

    model = BertForMaskedLM(len(tokenizer), dropout=args.dropout)
    init_from_numpy(model, args.seed)
    model.to(device)
    no_decay = ["bias", "LayerNorm.weight", "norm1.weight", "norm2.weight", "transform.2.weight"]
    grouped = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(grouped, lr=args.lr)
    steps_per_epoch = (len(train_sentences) + args.batch_size - 1) // args.batch_size
    scheduler = LambdaLR(optimizer, linear_schedule_with_warmup(args.warmup_steps, args.epochs * steps_per_epoch))

    # The evaluation batch is masked once, so that every epoch scores the same predictions.
    eval_batch = tokenizer(eval_sentences)
    eval_inputs, eval_labels = mask_tokens(eval_batch["input_ids"], tokenizer, rng=mask_rng)

    losses, lrs, grad_norms, eval_losses, eval_accuracy = [], [], [], [], []
    for epoch in range(args.epochs):
        model.train()
        for start in range(0, len(train_sentences), args.batch_size):
            batch = tokenizer(train_sentences[start:start + args.batch_size])
            inputs, labels = mask_tokens(batch["input_ids"], tokenizer, rng=mask_rng)
            inputs, labels = inputs.to(device), labels.to(device)
            attention_mask = batch["attention_mask"].to(device)
            logits = model(inputs, attention_mask)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            lrs.append(scheduler.get_last_lr()[0])
            grad_norms.append(grad_norm.item())
        model.eval()
        with torch.no_grad():
            logits = model(eval_inputs.to(device), eval_batch["attention_mask"].to(device))
            labels = eval_labels.to(device)
            eval_losses.append(F.cross_entropy(logits.transpose(1, 2), labels).item())
            predicted = logits.argmax(-1)
            targets = labels != -100
            eval_accuracy.append(((predicted == labels) & targets).sum().item() / targets.sum().item())
        if not args.quiet:
            print(f'epoch {epoch}: loss {losses[-1]:.4f} lr {lrs[-1]:.2e} eval loss {eval_losses[-1]:.4f} '
                  f'masked accuracy {eval_accuracy[-1]:.3f}')
    return {"losses": losses, "lr": lrs, "grad_norm": grad_norms, "eval_loss": eval_losses,
            "eval_accuracy": eval_accuracy}


if __name__ == '__main__':
    print(json.dumps(main()))
