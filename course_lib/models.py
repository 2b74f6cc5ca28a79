"""Given (not student-written) models: what the notebooks build on.

- :class:`GRUEncoder` and :class:`RNNDecoder` (Part 1), built on any GRU cell with
  ``nn.GRUCell``'s signature ``cell(input_size, hidden_size)`` and ``cell(x (N, I), h (N, H))
  -> (N, H)``: Part 1 passes the student's ``MyGRUCell``, later parts use ``nn.GRUCell`` so a
  broken Part 1 costs nothing there;
- :class:`AdditiveAttention` (given in Part 2), and the attention decoders of Part 5:
  :class:`LuongAttentionDecoder` (attention after the cell, on any attention module with
  ``AdditiveAttention``'s interface) and :class:`PointerGeneratorDecoder` (with a
  :class:`CopyEncoder`), which mixes in a copy distribution that the notebook's student code
  computes;
- :func:`lookup_model`: a hand-built seq2seq model whose output probabilities are read from
  tables, a test bench for decoding algorithms.

Every model follows the interface of :mod:`course_lib.train`. Shapes: N batch, S source
length, T target length, H hidden, V vocabulary, K tables.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import NamedTuple

import torch
from torch import nn

CellFactory = type[nn.Module]


class GRUEncoder(nn.Module):
    """Embeds the source characters and runs a GRU cell over them, one step at a time."""

    def __init__(self, vocab_size: int, hidden_size: int, cell: CellFactory = nn.GRUCell):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.gru = cell(hidden_size, hidden_size)

    def forward(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``inputs (N, S)`` -> ``annotations (N, S, H)`` (every hidden state), ``hidden (N, H)``
        (the last one)."""
        batch_size, seq_len = inputs.shape
        hidden = inputs.new_zeros(batch_size, self.hidden_size, dtype=torch.float)  # (N, H)
        encoded = self.embedding(inputs)  # (N, S, H)
        annotations = []
        for i in range(seq_len):
            hidden = self.gru(encoded[:, i, :], hidden)  # (N, H)
            annotations.append(hidden)
        return torch.stack(annotations, dim=1), hidden  # (N, S, H), (N, H)


class RNNDecoder(nn.Module):
    """A GRU decoder without attention: it starts from the encoder's last hidden state."""

    def __init__(self, vocab_size: int, hidden_size: int, cell: CellFactory = nn.GRUCell):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = cell(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(
        self, inputs: torch.Tensor, annotations: torch.Tensor, hidden_init: torch.Tensor
    ) -> tuple[torch.Tensor, None]:
        """``inputs (N, T)``, ``annotations (N, S, H)`` (unused), ``hidden_init (N, H)``
        -> ``logits (N, T, V)``, no attention."""
        embedded = self.embedding(inputs)  # (N, T, H)
        hidden = hidden_init
        hiddens = []
        for i in range(inputs.shape[1]):
            hidden = self.rnn(embedded[:, i, :], hidden)  # (N, H)
            hiddens.append(hidden)
        return self.out(torch.stack(hiddens, dim=1)), None  # (N, T, V)


# --- attention and decoders of Parts 2 and 5 --------------------------------------------------


class AdditiveAttention(nn.Module):
    """Additive attention: a two-layer network scores each key against the query."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        # f(Q_t, K_i): Linear(2H -> H) (W_1, b_1), ReLU, Linear(H -> 1) (W_2, b_2)
        self.attention_network = nn.Sequential(
            nn.Linear(2 * hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, 1),
        )
        self.softmax = nn.Softmax(dim=1)  # over the S source positions

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """queries (N, H), keys (N, S, H), values (N, S, H)
        -> context (N, 1, H), attention_weights (N, S, 1) (they sum to 1 over S)."""
        expanded_queries = queries.unsqueeze(1).expand_as(keys)  # (N, S, H)
        concat_inputs = torch.cat([expanded_queries, keys], dim=2)  # (N, S, 2H)
        unnormalized_attention = self.attention_network(concat_inputs)  # (N, S, 1)
        attention_weights = self.softmax(unnormalized_attention)  # (N, S, 1)
        context = torch.bmm(attention_weights.transpose(1, 2), values)  # (N, 1, H)
        return context, attention_weights


class LuongAttentionDecoder(nn.Module):
    """A GRU decoder that attends *after* its cell (Luong, Pham and Manning, 2015).

    At step t the GRU reads the embedded input token and its previous state; its new state h_t
    is the query of the attention over the annotations, which returns the context c_t; the
    output layer reads Luong's *attentional state* tanh(W_c [c_t; h_t] + b_c). The states do not
    depend on the attention, so the GRU runs over all T steps first and the N * T states then
    attend at once, as a batch of N * T queries.

    ``attention`` is any module with :class:`AdditiveAttention`'s interface,
    ``attention(queries (M, H), keys (M, S, H), values (M, S, H)) -> context (M, 1, H),
    weights (M, S, 1)``: Luong et al. scored with a dot product (``dot``), a bilinear form
    (``general``, multiplicative) or a small network (``concat``, additive).
    """

    def __init__(self, vocab_size: int, hidden_size: int, attention: nn.Module):
        super().__init__()
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.attention = attention
        self.combine = nn.Linear(2 * hidden_size, hidden_size)  # W_c, b_c: reads [c_t; h_t]
        self.out = nn.Linear(hidden_size, vocab_size)

    def attend(
        self, embedded: torch.Tensor, annotations: torch.Tensor, hidden_init: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``embedded (N, T, H)`` inputs, ``annotations (N, S, H)``, ``hidden_init (N, H)``
        -> ``states (N, T, H)`` (h_t), ``contexts (N, T, H)`` (c_t), ``weights (N, S, T)``."""
        states, _ = self.rnn(embedded, hidden_init.unsqueeze(0).contiguous())  # (N, T, H)
        n, t, h = states.shape
        s = annotations.shape[1]
        queries = states.reshape(n * t, h)  # (N*T, H): one query per step
        keys = annotations.unsqueeze(1).expand(n, t, s, h).reshape(n * t, s, h)  # (N*T, S, H)
        contexts, weights = self.attention(queries, keys, keys)  # (N*T, 1, H), (N*T, S, 1)
        contexts = contexts.reshape(n, t, h)  # (N, T, H)
        weights = weights.reshape(n, t, s).transpose(1, 2)  # (N, S, T)
        return states, contexts, weights

    def forward(
        self, inputs: torch.Tensor, annotations: torch.Tensor, hidden_init: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``inputs (N, T)`` (teacher forcing: ``tgt_in``), ``annotations (N, S, H)``,
        ``hidden_init (N, H)`` -> ``logits (N, T, V)``, ``attention_weights (N, S, T)``."""
        states, contexts, weights = self.attend(self.embedding(inputs), annotations, hidden_init)
        attentional = torch.tanh(self.combine(torch.cat([contexts, states], dim=2)))  # (N, T, H)
        return self.out(attentional), weights


class SourceAnnotations(NamedTuple):
    """Annotations that carry the source they were computed from (for copying)."""

    states: torch.Tensor  # (N, S, H) the encoder's hidden states
    src: torch.Tensor  # (N, S) the source token ids


class CopyEncoder(nn.Module):
    """Wraps an encoder so that its annotations carry the source token ids, which a
    :class:`PointerGeneratorDecoder` copies from: ``src (N, S)`` ->
    ``SourceAnnotations(states (N, S, H), src (N, S))``, ``hidden (N, H)``."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, src: torch.Tensor) -> tuple[SourceAnnotations, torch.Tensor]:
        annotations, hidden = self.encoder(src)  # (N, S, H), (N, H)
        return SourceAnnotations(annotations, src), hidden


Mixture = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class PointerGeneratorDecoder(LuongAttentionDecoder):
    """A :class:`LuongAttentionDecoder` that can copy source tokens (See, Liu and Manning, 2017).

    At step t it computes the vocabulary distribution ``p_vocab`` (a softmax of the output
    layer), the attention weights over the source positions, and the probability of
    generating rather than copying, ``p_gen = sigmoid(w_c c_t + w_h h_t + w_x x_t + b)`` from
    the context, the state and the embedded input. ``mixture(p_vocab (N, T, V),
    weights (N, S, T), src (N, S), p_gen (N, T, 1))`` turns them into the final distribution
    ``(N, T, V)``; forward returns its logarithm as the logits (``cross_entropy`` of
    log-probabilities that sum to 1 is their negative log-likelihood).

    Its annotations must carry the source ids: pair it with a :class:`CopyEncoder`. After each
    call, ``last_p_gen`` holds that call's ``p_gen`` ``(N, T, 1)`` (detached), for plots.
    """

    def __init__(self, vocab_size: int, hidden_size: int, attention: nn.Module, mixture: Mixture):
        super().__init__(vocab_size, hidden_size, attention)
        self.generate = nn.Linear(3 * hidden_size, 1)  # reads [c_t; h_t; x_t]
        self.mixture = mixture
        self.last_p_gen: torch.Tensor | None = None

    def forward(
        self, inputs: torch.Tensor, annotations: SourceAnnotations, hidden_init: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``inputs (N, T)``, ``annotations`` (from a :class:`CopyEncoder`), ``hidden_init
        (N, H)`` -> ``log_probs (N, T, V)`` (as logits), ``attention_weights (N, S, T)``."""
        if not isinstance(annotations, SourceAnnotations):
            raise TypeError("PointerGeneratorDecoder needs the annotations of a CopyEncoder")
        embedded = self.embedding(inputs)  # (N, T, H)
        states, contexts, weights = self.attend(embedded, annotations.states, hidden_init)
        attentional = torch.tanh(self.combine(torch.cat([contexts, states], dim=2)))  # (N, T, H)
        p_vocab = torch.softmax(self.out(attentional), dim=2)  # (N, T, V)
        p_gen = torch.sigmoid(self.generate(torch.cat([contexts, states, embedded], dim=2)))
        self.last_p_gen = p_gen.detach()  # (N, T, 1)
        p_final = self.mixture(p_vocab, weights, annotations.src, p_gen)  # (N, T, V)
        return torch.log(p_final.clamp_min(1e-12)), weights


# --- a hand-built model for testing decoders -------------------------------------------------


def lookup_table(rules: Mapping[str, Mapping[str, float]]) -> torch.Tensor:
    """Next-token log-probabilities ``(V, V)`` (row: the previous token, column: the next one)
    from ``rules[previous][next] = probability``, tokens written as in ``vocab.TOKENS``
    (``"<SOS>"``, ``"a"``, ``"<EOS>"``...).

    The probability a row's rules leave over is shared by the other tokens in small amounts
    that all differ (so no two continuations tie); a previous token without rules is followed
    by ``<EOS>`` with probability 0.99. Raises ``ValueError`` when a row's rules exceed 1 or
    leave nothing over."""
    from .vocab import CHAR_TO_INDEX, EOS, TOKENS, VOCAB_SIZE

    spare = torch.arange(1, VOCAB_SIZE + 1, dtype=torch.float64)  # distinct shares of the rest
    table = torch.empty(VOCAB_SIZE, VOCAB_SIZE, dtype=torch.float64)
    for prev in range(VOCAB_SIZE):
        row = dict(rules.get(TOKENS[prev], {EOS: 0.99}))
        given = torch.zeros(VOCAB_SIZE, dtype=torch.float64)
        for token, p in row.items():
            given[CHAR_TO_INDEX[token]] = p
        rest = 1.0 - float(given.sum())
        if not 0.0 < rest < 1.0:
            raise ValueError(f"the rules after {TOKENS[prev]!r} must sum to less than 1")
        others = spare.masked_fill(given > 0, 0.0)
        table[prev] = given + rest * others / others.sum()
    return table.log().float()


class LookupEncoder(nn.Module):
    """Picks one of K tables per source word, by its first token: ``src (N, S)`` ->
    ``annotations (N, S, K)`` and ``hidden (N, K)``, both the one-hot of ``src[:, 0] % K``."""

    def __init__(self, num_tables: int):
        super().__init__()
        self.num_tables = num_tables

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        choice = nn.functional.one_hot(src[:, 0] % self.num_tables, self.num_tables).float()
        return choice.unsqueeze(1).expand(-1, src.shape[1], -1), choice  # (N, S, K), (N, K)


class LookupDecoder(nn.Module):
    """A hand-built decoder: the next token's log-probabilities depend only on the previous
    token and on the table ``hidden_init`` picks, ``logits[n, t] = tables[k_n, inputs[n, t]]``.
    ``tables``: ``(K, V, V)`` log-probabilities (see :func:`lookup_table`). The probability of a
    whole output is then known exactly, which makes it a test bench for decoding algorithms."""

    def __init__(self, tables: torch.Tensor):
        super().__init__()
        self.tables = nn.Parameter(tables.float().clone(), requires_grad=False)  # (K, V, V)

    def forward(
        self, inputs: torch.Tensor, annotations: torch.Tensor, hidden_init: torch.Tensor
    ) -> tuple[torch.Tensor, None]:
        """``inputs (N, T)``, ``annotations`` (unused), ``hidden_init (N, K)`` one-hot
        -> ``logits (N, T, V)``, no attention."""
        k = hidden_init.argmax(dim=1)  # (N,)
        return self.tables[k.unsqueeze(1), inputs], None  # (N, T, V)


def lookup_model(*tables: torch.Tensor) -> nn.Module:
    """A seq2seq model (``.encoder``, ``.decoder``) of hand-built tables (each ``(V, V)``, from
    :func:`lookup_table`): a source word whose first token has id ``i`` uses table
    ``i % len(tables)``."""
    from .train import Seq2Seq

    return Seq2Seq(LookupEncoder(len(tables)), LookupDecoder(torch.stack(tables))).eval()


def show_source(obj) -> None:
    """Display the source code of a class or function in a notebook (plain print elsewhere)."""
    code = inspect.getsource(obj)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(f"```python\n{code}```"))
            return
    except ImportError:  # pragma: no cover - IPython ships with every Jupyter
        pass
    print(code)
