"""Variants of ``2_additive_attention``: mistakes students make in
``RNNAttentionDecoder.forward``, and other correct ways to write it."""

from autograder.variants import Variant

NOTEBOOK = "2_additive_attention"
D = "rnn_attention_decoder"
ATTEND = """            context, weights = self.attention(
                hidden, annotations, annotations
            )  # (N, 1, H), (N, S, 1)"""
CONCAT = "torch.cat([embed_current, context.squeeze(1)], dim=1)"
STEP = "hidden = self.rnn(embed_and_context, hidden)  # (N, H)"
WEIGHTS = "attention_weights = torch.cat(all_weights, dim=2)  # (N, S, T)"

VARIANTS = [
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
