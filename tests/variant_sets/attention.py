"""Variants of ``2_additive_attention``: mistakes students make in
``RNNAttentionDecoder.forward``, and other correct ways to write it."""

from autograder.quality.variants import Variant

NOTEBOOK = "2_additive_attention"
D = "rnn_attention_decoder"
ATTEND = """            context, weights = self.attention(
                hidden, annotations, annotations
            )  # (N, 1, H), (N, S, 1)"""
CONCAT = "torch.cat([embed_current, context.squeeze(1)], dim=1)"
STEP = "hidden = self.rnn(embed_and_context, hidden)  # (N, H)"
WEIGHTS = "attention_weights = torch.cat(all_weights, dim=2)  # (N, S, T)"
END = "        return self.out(hiddens), attention_weights  # (N, T, V), (N, S, T)"
NO_ATTENTION = (  # a decoder without attention: uniform weights, no context
    D,
    ATTEND,
    "            n, s = annotations.shape[:2]\n"
    "            weights = torch.full((n, s, 1), 1.0 / s)  # (N, S, 1)\n"
    "            context = torch.zeros_like(annotations[:, :1])  # (N, 1, H)",
)
# The given names the judges use, rebound after the given cells to lookalikes that cheat (a
# Seq2Seq that reads the teacher-forced targets ahead) or break: the judges build them from the
# course's source, so no point moves.
CHEATS = """


class PeekingSeq2Seq(train.Seq2Seq):
    \"\"\"The given Seq2Seq, but step t also reads the target of step t + 1.\"\"\"

    def forward(self, src, tgt_in):
        logits, weights = super().forward(src, tgt_in)
        ahead = torch.roll(tgt_in, -1, dims=1)  # tgt_in[t + 1] = tgt_out[t]
        return logits + 20.0 * nn.functional.one_hot(ahead, logits.shape[-1]), weights


train.Seq2Seq = PeekingSeq2Seq
"""
BROKEN = """


class Broken(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("a given name rebound")


GRUEncoder = Broken
train.Seq2Seq = Broken
"""

VARIANTS = [
    Variant("a decoder without attention", (NO_ATTENTION,), points=0.0, do_nothing=True),
    Variant(
        "a decoder without attention, the given Seq2Seq rebound to one that peeks",
        (NO_ATTENTION, (D, END, END + CHEATS)),
        points=0.0,
    ),
    Variant("the given encoder and Seq2Seq rebound", ((D, END, END + BROKEN),), correct=True),
    Variant(
        "query is the new state (attends after the cell)",
        (
            (D, ATTEND + "\n", ""),
            (
                D,
                STEP,
                "hidden = self.rnn(torch.cat([embed_current, embed_current * 0], dim=1), hidden)\n"
                "            context, weights = self.attention(hidden, annotations, annotations)",
            ),
            (D, "            embed_and_context = " + CONCAT + "  # (N, 2H)\n", ""),
        ),
    ),
    Variant(
        "context and embedding swapped",
        ((D, CONCAT, "torch.cat([context.squeeze(1), embed_current], dim=1)"),),
    ),
    Variant(
        "hidden_init ignored",
        ((D, "hidden = hidden_init  # (N, H)", "hidden = torch.zeros_like(hidden_init)"),),
    ),
    Variant(
        "weights laid out (N, T, S)",
        ((D, WEIGHTS, "attention_weights = torch.cat(all_weights, dim=2).transpose(1, 2)"),),
    ),
    Variant(
        "first annotation as the query",
        (
            (
                D,
                "hidden, annotations, annotations\n",
                "annotations[:, 0], annotations, annotations\n",
            ),
        ),
    ),
    Variant(
        "context left out of the cell",
        ((D, CONCAT, "torch.cat([embed_current, torch.zeros_like(embed_current)], dim=1)"),),
    ),
    Variant(  # forward unchanged: only the gradients (checked against the reference) tell
        "state detached between steps (no backpropagation through time)",
        ((D, STEP, "hidden = self.rnn(embed_and_context, hidden.detach())  # (N, H)"),),
    ),
    Variant(  # forward unchanged: no gradient reaches the attention nor the annotations
        "context detached",
        ((D, CONCAT, "torch.cat([embed_current, context.squeeze(1).detach()], dim=1)"),),
    ),
    Variant(
        "preallocated tensors",
        (
            (
                D,
                "all_hiddens, all_weights = [], []",
                "n, steps = inputs.shape\n"
                "        all_hiddens = embedded.new_zeros(n, steps, self.hidden_size)\n"
                "        all_weights = embedded.new_zeros(n, annotations.shape[1], steps)",
            ),
            (D, "all_hiddens.append(hidden)", "all_hiddens[:, t] = hidden"),
            (D, "all_weights.append(weights)", "all_weights[:, :, t] = weights[:, :, 0]"),
            (D, "hiddens = torch.stack(all_hiddens, dim=1)  # (N, T, H)", "hiddens = all_hiddens"),
            (D, WEIGHTS, "attention_weights = all_weights"),
        ),
        correct=True,
    ),
    Variant(
        "stack instead of cat",
        (
            (
                D,
                WEIGHTS,
                "attention_weights = torch.stack([w[:, :, 0] for w in all_weights], dim=2)",
            ),
        ),
        correct=True,
    ),
    Variant(
        "embedding looked up at every step",
        ((D, "embed_current = embedded[:, t, :]", "embed_current = self.embedding(inputs[:, t])"),),
        correct=True,
    ),
]
