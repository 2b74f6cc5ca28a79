import math

import pytest
import torch
from torch import nn

from course_lib import decode, vocab
from course_lib.models import (
    AdditiveAttention,
    CopyEncoder,
    GRUEncoder,
    LuongAttentionDecoder,
    PointerGeneratorDecoder,
    RNNDecoder,
    SourceAnnotations,
    lookup_model,
    lookup_table,
    show_source,
)
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


# --- Part 5: the attention decoders and the hand-built model ------------------------------------


class DotProduct(nn.Module):
    """Plain dot-product attention with AdditiveAttention's interface (a test stand-in)."""

    def forward(self, queries, keys, values):
        weights = torch.softmax(keys @ queries.unsqueeze(2), dim=1)  # (N, S, 1)
        return weights.transpose(1, 2) @ values, weights


def test_additive_attention_shapes_and_formula():
    torch.manual_seed(0)
    attention = AdditiveAttention(7)
    queries, keys, values = torch.randn(3, 7), torch.randn(3, 5, 7), torch.randn(3, 5, 7)
    context, weights = attention(queries, keys, values)
    assert context.shape == (3, 1, 7) and weights.shape == (3, 5, 1)
    net = attention.attention_network
    pair = torch.cat([queries[:, None].expand(3, 5, 7), keys], dim=2)  # (N, S, 2H)
    scores = net[2](torch.relu(net[0](pair)))  # (N, S, 1)
    expected = torch.softmax(scores, dim=1)
    assert torch.allclose(weights, expected, atol=1e-6)
    assert torch.allclose(context, expected.transpose(1, 2) @ values, atol=1e-6)


def _luong_step_by_step(decoder, inputs, annotations, hidden):
    """Luong et al.'s equations one step at a time, with the decoder's own layers."""
    cell = nn.GRUCell(decoder.hidden_size, decoder.hidden_size)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in decoder.rnn.state_dict().items()})
    logits, maps = [], []
    for t in range(inputs.shape[1]):
        hidden = cell(decoder.embedding(inputs[:, t]), hidden)  # h_t first
        context, weights = decoder.attention(hidden, annotations, annotations)  # query: h_t
        state = torch.tanh(decoder.combine(torch.cat([context[:, 0], hidden], dim=1)))
        logits.append(decoder.out(state))
        maps.append(weights[:, :, 0])
    return torch.stack(logits, dim=1), torch.stack(maps, dim=2)


@pytest.mark.parametrize("attention", [AdditiveAttention(6), DotProduct()])
def test_luong_decoder_equals_its_equations_step_by_step(attention):
    torch.manual_seed(1)
    decoder = LuongAttentionDecoder(29, 6, attention)
    inputs, annotations, hidden = (
        torch.randint(0, 29, (3, 4)),
        torch.randn(3, 5, 6),
        torch.randn(3, 6),
    )
    logits, weights = decoder(inputs, annotations, hidden)
    assert logits.shape == (3, 4, 29) and weights.shape == (3, 5, 4)
    assert torch.allclose(weights.sum(dim=1), torch.ones(3, 4), atol=1e-6)
    with torch.no_grad():
        expected_logits, expected_weights = _luong_step_by_step(
            decoder, inputs, annotations, hidden
        )
    assert torch.allclose(logits, expected_logits, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)


def test_luong_decoder_is_causal_and_trains_end_to_end():
    torch.manual_seed(2)
    model = Seq2Seq(GRUEncoder(29, 5), LuongAttentionDecoder(29, 5, AdditiveAttention(5)))
    src, tgt = torch.randint(0, 29, (2, 6)), torch.randint(0, 29, (2, 4))
    logits, _ = model(src, tgt)
    changed = tgt.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 29
    assert torch.allclose(model(src, changed)[0][:, :-1], logits[:, :-1], atol=1e-6)
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def _keep_vocab(p_vocab, attention, src, p_gen):
    return p_vocab


def test_pointer_generator_with_a_vocabulary_only_mixture_is_the_luong_decoder():
    torch.manual_seed(3)
    copying = PointerGeneratorDecoder(29, 6, AdditiveAttention(6), _keep_vocab)
    plain = LuongAttentionDecoder(29, 6, AdditiveAttention(6))
    plain.load_state_dict(copying.state_dict(), strict=False)
    src, inputs, hidden = (
        torch.randint(0, 27, (3, 5)),
        torch.randint(0, 29, (3, 4)),
        torch.randn(3, 6),
    )
    states = torch.randn(3, 5, 6)
    log_probs, weights = copying(inputs, SourceAnnotations(states, src), hidden)
    logits, expected_weights = plain(inputs, states, hidden)
    assert torch.allclose(log_probs, torch.log_softmax(logits, dim=2), atol=1e-5)
    assert torch.allclose(weights, expected_weights)
    assert copying.last_p_gen.shape == (3, 4, 1)
    assert bool(((copying.last_p_gen > 0) & (copying.last_p_gen < 1)).all())
    with pytest.raises(TypeError, match="CopyEncoder"):
        copying(inputs, states, hidden)


def test_pointer_generator_hands_the_mixture_its_inputs_and_decodes():
    seen = {}

    def mixture(p_vocab, attention, src, p_gen):
        seen.update(p_vocab=p_vocab.shape, attention=attention.shape, src=src, p_gen=p_gen.shape)
        return p_vocab

    torch.manual_seed(4)
    model = Seq2Seq(
        CopyEncoder(GRUEncoder(29, 6)),
        PointerGeneratorDecoder(29, 6, AdditiveAttention(6), mixture),
    )
    src = vocab.encode_batch(["cat", "dog"])  # (2, 4)
    annotations, hidden = model.encoder(src)
    assert isinstance(annotations, SourceAnnotations) and torch.equal(annotations.src, src)
    model(src, torch.randint(0, 29, (2, 3)))
    assert seen["p_vocab"] == (2, 3, 29) and seen["attention"] == (2, 4, 3)
    assert torch.equal(seen["src"], src) and seen["p_gen"] == (2, 3, 1)
    translations = decode.translate_words(model, ["cat", "shopping"])  # greedy decoding works
    assert [t.source for t in translations] == ["cat", "shopping"]
    assert translations[1].attention.shape[0] == len("shopping") + 1


def test_lookup_table_rows_are_distributions_as_written():
    table = lookup_table({"<SOS>": {"a": 0.5, "b": 0.4}, "b": {"<EOS>": 0.9}})
    probs = table.double().exp()
    assert table.shape == (29, 29)
    assert torch.allclose(probs.sum(dim=1), torch.ones(29, dtype=torch.float64), atol=1e-6)
    sos, eos, a, b = vocab.SOS_ID, vocab.EOS_ID, vocab.CHAR_TO_INDEX["a"], vocab.CHAR_TO_INDEX["b"]
    assert probs[sos, a] == pytest.approx(0.5, abs=1e-6) and probs[b, eos] == pytest.approx(0.9)
    rest = probs[sos][torch.tensor([i not in (a, b) for i in range(29)])]
    assert len(set(rest.tolist())) == len(rest) and float(rest.sum()) == pytest.approx(0.1)
    assert probs[a, eos] == pytest.approx(0.99)  # a row without rules ends the word
    with pytest.raises(ValueError, match="less than 1"):
        lookup_table({"<SOS>": {"a": 0.6, "b": 0.4}})


def test_lookup_model_picks_a_table_by_the_first_token():
    first = lookup_table({"<SOS>": {"a": 0.5, "b": 0.4}, "a": {"c": 0.6}, "b": {"<EOS>": 0.9}})
    second = lookup_table({"<SOS>": {"z": 0.9}})
    model = lookup_model(first, second)
    src = torch.tensor([[2, 28], [1, 28]])  # 2 % 2 = 0 -> first, 1 % 2 = 1 -> second
    inputs = torch.tensor([[vocab.SOS_ID, 1], [vocab.SOS_ID, 1]])
    logits, attention = model(src, inputs)
    assert attention is None and logits.shape == (2, 2, 29)
    assert torch.equal(logits[0], first[inputs[0]]) and torch.equal(logits[1], second[inputs[1]])
    ids, _ = decode.greedy_decode(model, src, max_len=5)
    assert vocab.decode(ids[0]) == "ac" and vocab.decode(ids[1]) == "z"
    assert math.exp(float(first[vocab.SOS_ID, 1])) == pytest.approx(0.5, abs=1e-6)
