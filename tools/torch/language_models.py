"""A small transformer-encoder language model, the non-vision workload of tensormem's tools.

    model = build("transformer")                 # random weights, seeded
    lengths = SequenceLengths("transformer_varlen", seed=0)
    tokens = lengths.batch(batch=8)              # (8, length + 1) token ids

Two names share one model (token embedding, learned positions, 4 encoder layers
of d_model 256 with 4 heads and a 1024-wide feed-forward, causal mask, untied
output projection to an 8000-token vocabulary):

  transformer         every batch holds FIXED_LENGTH tokens per sequence;
  transformer_varlen  the length changes from one batch to the next, as with
                      length-bucketed text batches: every round of 5 batches
                      holds each of VARIABLE_LENGTHS once, in an order drawn
                      from the seed (seed 0: 128, 96, 160, 192, 64, then 96, 64, ...).

Each step draws its token batch (a data loader's hand-over), so every step
allocates its own input, target and mask.
"""

import random

import torch

VOCABULARY = 8000
D_MODEL = 256
LAYERS = 4
HEADS = 4
FEED_FORWARD = 1024
FIXED_LENGTH = 128
VARIABLE_LENGTHS = (64, 96, 128, 160, 192)
MAX_LENGTH = max(VARIABLE_LENGTHS)

_NAMES = ("transformer", "transformer_varlen")


def names():
    return list(_NAMES)


class EncoderLM(torch.nn.Module):
    """Next-token prediction with a causal transformer encoder (batch first)."""

    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCABULARY, D_MODEL)
        self.positions = torch.nn.Embedding(MAX_LENGTH, D_MODEL)
        layer = torch.nn.TransformerEncoderLayer(
            D_MODEL, HEADS, dim_feedforward=FEED_FORWARD, dropout=0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, LAYERS)
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCABULARY)

    def forward(self, tokens):
        """tokens (batch, length) -> logits (batch, length, VOCABULARY)."""
        length = tokens.shape[1]
        positions = torch.arange(length, device=tokens.device)
        hidden = self.embedding(tokens) + self.positions(positions)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(length)
        return self.head(self.norm(self.encoder(hidden, mask=mask)))


def build(name, seed=0):
    """The model with deterministic weights. Raises ValueError for an unknown name."""
    if name not in _NAMES:
        raise ValueError(f"unknown language model '{name}'; known: {', '.join(_NAMES)}")
    torch.manual_seed(seed)
    return EncoderLM()


class SequenceLengths:
    """The token batches of one run: fixed or seeded variable lengths, in step order."""

    def __init__(self, name, seed=0):
        if name not in _NAMES:
            raise ValueError(f"unknown language model '{name}'; known: {', '.join(_NAMES)}")
        self.variable = name == "transformer_varlen"
        self.lengths = []  # the length of every batch drawn so far
        self._lengths = random.Random(seed + 2)  # Python's: no tensor in the trace
        self._round = []
        self._tokens = torch.Generator().manual_seed(seed + 3)

    def next_length(self):
        if not self.variable:
            return FIXED_LENGTH
        if not self._round:  # a new round: every length once, in a seeded order
            self._round = self._lengths.sample(VARIABLE_LENGTHS, len(VARIABLE_LENGTHS))
        return self._round.pop()

    def batch(self, batch):
        """Token ids (batch, length + 1): inputs are [:, :-1], next-token targets [:, 1:]."""
        length = self.next_length()
        self.lengths.append(length)
        return torch.randint(VOCABULARY, (batch, length + 1), generator=self._tokens)
