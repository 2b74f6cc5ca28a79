import torch
from torch import nn

from course_lib.models import GRUEncoder, RNNDecoder, show_source
from course_lib.train import Seq2Seq


def test_encoder_shapes_and_last_state():
    torch.manual_seed(0)
    enc = GRUEncoder(29, 7)
    src = torch.randint(0, 29, (3, 5))
    annotations, hidden = enc(src)
    assert annotations.shape == (3, 5, 7) and hidden.shape == (3, 7)
    assert torch.equal(annotations[:, -1], hidden)


def test_encoder_matches_torch_gru():
    """Stepping nn.GRUCell by hand equals nn.GRU over the sequence."""
    torch.manual_seed(0)
    enc = GRUEncoder(29, 6)
    gru = nn.GRU(6, 6, batch_first=True)
    gru.load_state_dict({k + "_l0": v for k, v in enc.gru.state_dict().items()})
    src = torch.randint(0, 29, (2, 4))
    expected, _ = gru(enc.embedding(src))
    assert torch.allclose(enc(src)[0], expected, atol=1e-6)


def test_decoder_uses_given_cell_and_hidden():
    calls = []

    class SpyCell(nn.GRUCell):
        def forward(self, x, h):
            calls.append((tuple(x.shape), tuple(h.shape)))
            return super().forward(x, h)

    dec = RNNDecoder(29, 8, cell=SpyCell)
    logits, attention = dec(torch.randint(0, 29, (2, 3)), torch.zeros(2, 5, 8), torch.zeros(2, 8))
    assert logits.shape == (2, 3, 29) and attention is None
    assert calls == [((2, 8), (2, 8))] * 3
    a, _ = dec(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 5, 8), torch.zeros(1, 8))
    b, _ = dec(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 5, 8), torch.ones(1, 8))
    assert not torch.allclose(a, b)  # the initial hidden state matters


def test_seq2seq_runs_end_to_end():
    model = Seq2Seq(GRUEncoder(29, 5), RNNDecoder(29, 5))
    logits, _ = model(torch.randint(0, 29, (4, 6)), torch.randint(0, 29, (4, 3)))
    assert logits.shape == (4, 3, 29)


def test_show_source_prints_outside_notebooks(capsys):
    show_source(RNNDecoder)
    assert "class RNNDecoder" in capsys.readouterr().out
