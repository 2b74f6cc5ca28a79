"""Given (not student-written) recurrent encoder and decoder of Part 1.

They are built on any GRU cell with ``nn.GRUCell``'s signature ``cell(input_size,
hidden_size)`` and ``cell(x (N, I), h (N, H)) -> (N, H)``: Part 1 passes the student's
``MyGRUCell``, later parts use ``nn.GRUCell`` so a broken Part 1 costs nothing there.
Shapes: N batch, S source length, T target length, H hidden, V vocabulary.
"""

from __future__ import annotations

import inspect

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
