"""Variants of ``5a_decoding``: mistakes students make in ``DotAttention``,
``MultiplicativeAttention`` and ``beam_search``, and other correct ways to write them."""

from autograder.quality.variants import Variant

NOTEBOOK = "5a_decoding"
D, M, B = "dot_attention", "multiplicative_attention", "beam_search"
DOT_SCORES = "scores = torch.bmm(keys, queries.unsqueeze(2))  # (N, S, 1): e_i = h_i . s"
WEIGHTS = "attention_weights = self.softmax(scores)  # (N, S, 1)"
CONTEXT = "context = torch.bmm(attention_weights.transpose(1, 2), values)  # (N, 1, H)"
W_KEYS = "transformed_keys = self.W(keys)  # (N, S, H): W h_i"
W_SCORES = "scores = torch.bmm(transformed_keys, queries.unsqueeze(2))  # (N, S, 1): s^T W h_i"
INIT = "log_probs[:, 0] = 0.0  # one hypothesis per word at first: <SOS>"
PENALTY = "penalty = ((5 + step) / 6) ** alpha  # lp of a hypothesis of `step` tokens"
FINISH = "elif new_tokens[i][j] == vocab.EOS_ID or step == max_len:"
BEST = "best = [max(hyps, key=lambda h: h[0]) for hyps in finished]"
KEEP = "keep = b - len(finished[i])  # the word keeps as many extensions as it lacks"
TOPK = "top, index = extensions.topk(b, dim=1)  # (N, B), the best first"
FIRST = "n, b = src.shape[0], beam_size"
GREEDY = """rows = decode.greedy_decode(model, src, max_len)[0].tolist()  # the library's greedy
    best = [r[: r.index(vocab.EOS_ID) + 1] if vocab.EOS_ID in r else r for r in rows]
    scores = [  # their log-probabilities by teacher forcing, divided by lp(Y): right for them
        sequence_log_prob(model, src[i : i + 1], ids) / ((5 + len(ids)) / 6) ** alpha
        for i, ids in enumerate(best)
    ]
    return best, torch.tensor(scores)
    """
UNIFORM = "attention_weights = torch.full_like(scores, 1.0 / scores.shape[1])  # (N, S, 1)"
MEAN = "context = values.mean(dim=1, keepdim=True)  # (N, 1, H)"
DO_NOTHING = (  # uniform attention, and a beam search that returns <EOS> at once
    (D, WEIGHTS, UNIFORM),
    (D, CONTEXT, MEAN),
    (M, WEIGHTS, UNIFORM),
    (M, CONTEXT, MEAN),
    (B, FIRST, "return [[vocab.EOS_ID]] * src.shape[0], torch.zeros(src.shape[0])\n    " + FIRST),
)
BEAM_END = "    return [ids for _, ids in best], torch.tensor([score for score, _ in best])"
# The given names the judges use, rebound after the given cells: the judges build them from the
# course's source, so no point moves.
REBOUND = """


class Broken(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("a given name rebound")


GRUEncoder = LuongAttentionDecoder = AdditiveAttention = lookup_model = Broken
train.Seq2Seq = Broken
"""

VARIANTS = [
    Variant("the given models rebound", ((B, BEAM_END, BEAM_END + REBOUND),), correct=True),
    Variant("every answer a stub of the right shape", DO_NOTHING, points=0.1, do_nothing=True),
    # --- DotAttention
    Variant(
        "dot: scores divided by sqrt(H)",
        (
            (
                D,
                DOT_SCORES,
                "scores = torch.bmm(keys, queries.unsqueeze(2)) / self.hidden_size**0.5",
            ),
        ),
    ),
    Variant(
        "dot: softmax over the batch",
        ((D, WEIGHTS, "attention_weights = torch.softmax(scores, dim=0)"),),
    ),
    Variant(
        "dot: weights returned (N, 1, S)",
        (
            (
                D,
                CONTEXT,
                CONTEXT + "\n        attention_weights = attention_weights.transpose(1, 2)",
            ),
        ),
    ),
    Variant(
        "dot: context returned (N, H)",
        ((D, CONTEXT, CONTEXT + "\n        context = context.squeeze(1)"),),
    ),
    Variant(
        "dot: the keys averaged instead of the values",
        ((D, CONTEXT, "context = torch.bmm(attention_weights.transpose(1, 2), keys)"),),
    ),
    # --- MultiplicativeAttention
    Variant(
        "multiplicative: W on the query's side (s^T W^T h_i)",
        (
            (M, W_KEYS, "transformed_keys = keys"),
            (M, "queries.unsqueeze(2))  # (N, S, 1): s^T W", "self.W(queries).unsqueeze(2))  #"),
        ),
    ),
    Variant("multiplicative: W left out", ((M, W_KEYS, "transformed_keys = keys"),)),
    Variant(
        "multiplicative: W detached",
        ((M, W_KEYS, "transformed_keys = keys @ self.W.weight.detach().T"),),
    ),
    Variant(
        "multiplicative: softmax over the last dimension",
        ((M, WEIGHTS, "attention_weights = torch.softmax(scores, dim=2)"),),
    ),
    Variant(
        "multiplicative: W applied to the values too",
        ((M, CONTEXT, "context = torch.bmm(attention_weights.transpose(1, 2), self.W(values))"),),
    ),
    # --- beam_search
    Variant("beam: B copies of <SOS> at step 1 (no -inf)", ((B, INIT, "log_probs[:, :] = 0.0"),)),
    Variant(
        "beam: repeat instead of repeat_interleave (words mixed)",
        (
            (B, "annotations.repeat_interleave(b, dim=0)", "annotations.repeat(b, 1, 1)"),
            (B, "hidden.repeat_interleave(b, dim=0)", "hidden.repeat(b, 1)"),
        ),
    ),
    Variant("beam: |Y| without the <EOS>", ((B, PENALTY, "penalty = ((4 + step) / 6) ** alpha"),)),
    Variant("beam: no length penalty", ((B, PENALTY, "penalty = 1.0"),)),
    Variant("beam: hypotheses extended past <EOS>", ((B, FINISH, "elif step == max_len:"),)),
    Variant(
        "beam: the first finished hypothesis returned",
        ((B, BEST, "best = [hyps[0] for hyps in finished]"),),
    ),
    Variant("beam: the beam never shrinks (B live hypotheses)", ((B, KEEP, "keep = b"),)),
    Variant(  # found by the audit: it kept searching once a word had B finished hypotheses
        "beam: one live hypothesis too many after a finish",
        ((B, "if j >= keep or top_list", "if j > keep or top_list"),),
    ),
    Variant(  # issue item 7: it earned 0.575 of the 0.8 beam-search points in the probe form
        "beam: greedy decoding returned (decode.greedy_decode, whatever the beam size)",
        ((B, FIRST, GREEDY + FIRST),),
    ),
    # --- other correct answers
    Variant(
        "dot: einsum",
        (
            (D, DOT_SCORES, 'scores = torch.einsum("nsh,nh->ns", keys, queries).unsqueeze(2)'),
            (
                D,
                CONTEXT,
                'context = torch.einsum("ns,nsh->nh", attention_weights[..., 0], values)[:, None]',
            ),
        ),
        correct=True,
    ),
    Variant(
        "dot: @ and torch.softmax",
        (
            (D, DOT_SCORES, "scores = keys @ queries[:, :, None]"),
            (D, WEIGHTS, "attention_weights = torch.softmax(scores, dim=1)"),
            (D, CONTEXT, "context = attention_weights.transpose(1, 2) @ values"),
        ),
        correct=True,
    ),
    Variant(
        "multiplicative: W^T applied to the query",
        (
            (M, W_KEYS, "transformed_keys = keys"),
            (
                M,
                "queries.unsqueeze(2))  # (N, S, 1): s^T W",
                "(queries @ self.W.weight).unsqueeze(2))  #",
            ),
        ),
        correct=True,
    ),
    Variant(
        "multiplicative: bilinear einsum",
        (
            (M, W_KEYS, "transformed_keys = None"),
            (
                M,
                W_SCORES,
                'scores = torch.einsum("nh,hk,nsk->ns", queries, self.W.weight, keys)[..., None]',
            ),
        ),
        correct=True,
    ),
    Variant(
        "beam: sort instead of topk, index_select",
        (
            (
                B,
                TOPK,
                "top, index = extensions.sort(dim=1, descending=True)\n"
                "        top, index = top[:, :b], index[:, :b]",
            ),
            (
                B,
                "tokens = torch.cat([tokens[rows]",
                "tokens = torch.cat([tokens.index_select(0, rows)",
            ),
        ),
        correct=True,
    ),
]
