"""Variants of ``1_gru``: mistakes students make in ``MyGRUCell.forward``, and other correct
ways to write it."""

from autograder.variants import Variant

NOTEBOOK = "1_gru"
G = "my_gru_cell"
RESET = "r = torch.sigmoid(self.Wir(x) + self.Whr(h_prev))  # reset gate (N, H)"
UPDATE = "z = torch.sigmoid(self.Wiz(x) + self.Whz(h_prev))  # update gate (N, H)"
NEW = "h_new = (1 - z) * g + z * h_prev"

VARIANTS = [
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
