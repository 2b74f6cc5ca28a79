"""Variants of ``1_gru``: mistakes students make in ``MyGRUCell.forward``, and other correct
ways to write it."""

from autograder.quality.variants import Variant

NOTEBOOK = "1_gru"
G = "my_gru_cell"
RESET = "r = torch.sigmoid(self.Wir(x) + self.Whr(h_prev))  # reset gate (N, H)"
UPDATE = "z = torch.sigmoid(self.Wiz(x) + self.Whz(h_prev))  # update gate (N, H)"
NEW = "h_new = (1 - z) * g + z * h_prev"
END = "        return h_new"
# The given names the judges use, rebound after the given cells (here, below the answer) to
# lookalikes that cheat: a decoder that reads the teacher-forced targets ahead (so "30 Adam
# steps lower the loss" passes for any cell), and a Seq2Seq and encoder that do nothing useful.
# The judges build them from the course's source, so no point moves.
CHEATS = """


class PeekingDecoder(RNNDecoder):
    \"\"\"The given decoder, but step t also reads the target of step t + 1.\"\"\"

    calls = 0

    def forward(self, inputs, annotations, hidden_init):
        PeekingDecoder.calls += 1
        logits, hidden = super().forward(inputs, annotations, hidden_init)
        ahead = torch.roll(inputs, -1, dims=1)  # tgt_in[t + 1] = tgt_out[t]
        return logits + 20.0 * nn.functional.one_hot(ahead, logits.shape[-1]), hidden


RNNDecoder = PeekingDecoder
"""
BROKEN = """


class Broken(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("a given name rebound")


GRUEncoder = RNNDecoder = Broken
train.Seq2Seq = Broken
"""

VARIANTS = [
    Variant("forward returns h_prev", ((G, NEW, "h_new = h_prev"),), points=0.0, do_nothing=True),
    Variant(
        "forward returns h_prev, the given decoder rebound to one that peeks",
        ((G, NEW, "h_new = h_prev"), (G, END, END + CHEATS)),
        points=0.0,
    ),
    Variant(
        "the given encoder, decoder and Seq2Seq rebound", ((G, END, END + BROKEN),), correct=True
    ),
    Variant("reset gate unused", ((G, "r * self.Whn(h_prev)", "self.Whn(h_prev)"),)),
    Variant("z and 1 - z swapped", ((G, NEW, "h_new = z * g + (1 - z) * h_prev"),)),
    Variant(
        "reset gate applied outside b_hn",
        ((G, "r * self.Whn(h_prev)", "r * (h_prev @ self.Whn.weight.T) + self.Whn.bias"),),
    ),
    Variant("sigmoid for the candidate", ((G, "g = torch.tanh(", "g = torch.sigmoid("),)),
    Variant(
        "update gate from the reset layers",
        ((G, UPDATE, "z = torch.sigmoid(self.Wir(x) + self.Whr(h_prev))"),),
    ),
    Variant("no update gate", ((G, NEW, "h_new = g"),)),
    Variant("torch.lerp", ((G, NEW, "h_new = torch.lerp(g, h_prev, z)"),), correct=True),
    Variant(
        "fused gates",
        (
            (
                G,
                f"{RESET}\n        {UPDATE}",
                "w_x = torch.cat([self.Wir.weight, self.Wiz.weight])  # (2H, I)\n"
                "        b_x = torch.cat([self.Wir.bias, self.Wiz.bias])\n"
                "        w_h = torch.cat([self.Whr.weight, self.Whz.weight])  # (2H, H)\n"
                "        b_h = torch.cat([self.Whr.bias, self.Whz.bias])\n"
                "        gates = torch.sigmoid(x @ w_x.T + b_x + h_prev @ w_h.T + b_h)  # (N, 2H)\n"
                "        r, z = gates.chunk(2, dim=1)",
            ),
        ),
        correct=True,
    ),
]
