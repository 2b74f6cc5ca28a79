"""Variants of ``3_transformer``: mistakes students make in the attention layers, the encoder
and the decoder, and other correct ways to write them."""

from autograder.quality.variants import Variant

NOTEBOOK = "3_transformer"
A, C = "scaled_dot_attention", "causal_attention"
E, D = "transformer_encoder", "transformer_decoder"
TWO_D = "        if queries.dim() == 2:\n            queries = queries.unsqueeze(1)  # (N, 1, H)\n"
SCORES = "scores = self.scaling_factor * torch.bmm(k, q.transpose(1, 2))  # (N, S, k)"
RETURN = "return context, attention_weights"
MASK = "later_keys = torch.tril(torch.ones_like(scores[0]), diagonal=-1)"
ENC_ATTEND = "self.self_attentions[i](annotations, annotations, annotations)"
EMBED = "annotations = self.embedding(inputs) + self.positional_encodings[:seq_len]"
DEC_SELF = "self.self_attentions[i](contexts, contexts, contexts)"
DEC_CROSS = "residual_contexts, annotations, annotations\n"
DEC_CROSS_RESIDUAL = "residual_contexts = residual_contexts + new_contexts  # (N, T, H)"
UNIFORM = (  # an attention layer that computes nothing: zero context, uniform weights
    "return queries * 0, torch.full((keys.shape[0], keys.shape[1], queries.shape[1]), "
    "1.0 / keys.shape[1])"
)
DEC_BLOCK = (
    (
        "            new_contexts, _ = self.self_attentions[i](contexts, contexts, contexts)"
        "  # (N, T, H)\n"
    )
    + """            residual_contexts = contexts + new_contexts  # (N, T, H)
            new_contexts, encoder_attention_weights = self.encoder_attentions[i](
                residual_contexts, annotations, annotations
            )  # (N, T, H), (N, S, T)
            residual_contexts = residual_contexts + new_contexts  # (N, T, H)"""
)
DEC_NOTHING = """            residual_contexts = contexts  # (N, T, H)
            n, s, t = annotations.shape[0], annotations.shape[1], contexts.shape[1]
            encoder_attention_weights = torch.full((n, s, t), 1.0 / s)  # (N, S, T)"""
DO_NOTHING = (
    (A, RETURN, UNIFORM),
    (C, RETURN, UNIFORM),
    (
        E,
        "residual_annotations = annotations + new_annotations",
        "residual_annotations = annotations",
    ),
    (D, DEC_BLOCK, DEC_NOTHING),
)
DEC_END = "        return self.out(contexts), encoder_attention_list"
# The given names the judges use, rebound after the given cells to lookalikes: stand-ins that
# keep the student's layers, a Seq2Seq whose logits are zeros. The judges build them from the
# course's source, so no point moves.
REBOUND = """


def with_stand_ins(model):
    return model


class ZeroSeq2Seq(train.Seq2Seq):
    def forward(self, src, tgt_in):
        logits, maps = super().forward(src, tgt_in)
        return logits * 0, maps


train.Seq2Seq = ZeroSeq2Seq
"""

VARIANTS = [
    Variant(
        "the given stand-ins and Seq2Seq rebound", ((D, DEC_END, DEC_END + REBOUND),), correct=True
    ),
    Variant("every answer a stub of the right shape", DO_NOTHING, points=0.0, do_nothing=True),
    # ScaledDotAttention
    Variant("attention: no 2-D branch", ((A, TWO_D, ""),)),
    Variant(
        "attention: weights returned (N, k, S)",
        ((A, RETURN, "return context, attention_weights.transpose(1, 2)"),),
    ),
    Variant(
        "attention: no 1/sqrt(H) scaling", ((A, "self.scaling_factor * torch.bmm", "torch.bmm"),)
    ),
    Variant(
        "attention: softmax over the queries",
        ((A, "self.softmax(scores)  # (N, S, k)", "torch.softmax(scores, dim=2)"),),
    ),
    Variant("attention: keys projected by Q", ((A, "k = self.K(keys)", "k = self.Q(keys)"),)),
    Variant(
        "attention: context summed over the queries",
        (
            (
                A,
                RETURN,
                "return context.sum(dim=1, keepdim=True).expand_as(context), attention_weights",
            ),
        ),
    ),
    Variant(
        "attention: einsum",
        (
            (A, SCORES, "scores = torch.einsum('nsh,nkh->nsk', k, q) / self.hidden_size**0.5"),
            (
                A,
                "context = torch.bmm(attention_weights.transpose(1, 2), v)",
                "context = torch.einsum('nsk,nsh->nkh', attention_weights, v)",
            ),
        ),
        correct=True,
    ),
    # CausalScaledDotAttention
    Variant(
        "causal: no mask",
        ((C, "self.softmax(scores + self.neg_inf * later_keys)", "self.softmax(scores)"),),
    ),
    Variant("causal: mask hides the diagonal too", ((C, MASK, MASK.replace("-1", "0")),)),
    Variant(
        "causal: mask the wrong way",
        ((C, MASK, "later_keys = torch.triu(torch.ones_like(scores[0]), diagonal=1)"),),
    ),
    Variant(
        "causal: weights returned (N, k, S)",
        ((C, RETURN, "return context, attention_weights.transpose(1, 2)"),),
    ),
    Variant(
        "causal: masked_fill with -inf",
        (
            (
                C,
                "attention_weights = self.softmax(scores + self.neg_inf * later_keys)",
                "attention_weights = self.softmax(scores.masked_fill(later_keys.bool(), "
                "float('-inf')))",
            ),
        ),
        correct=True,
    ),
    Variant(
        "causal: context from the unmasked weights (the weights returned are masked)",
        (
            (
                C,
                "context = torch.bmm(attention_weights.transpose(1, 2), v)",
                "context = torch.bmm(self.softmax(scores).transpose(1, 2), v)",
            ),
        ),
    ),
    # TransformerEncoder
    Variant(
        "encoder: no residual around the attention",
        (
            (
                E,
                "residual_annotations = annotations + new_annotations",
                "residual_annotations = new_annotations",
            ),
        ),
    ),
    Variant(
        "encoder: attention over the embeddings in every layer",
        (
            (E, ENC_ATTEND, "self.self_attentions[i](embedded, embedded, embedded)"),
            (
                E,
                EMBED,
                EMBED + "\n        embedded = annotations",
            ),
        ),
    ),
    Variant(
        "encoder: residual added in place (the forward is right, its backward fails)",
        (
            (
                E,
                "residual_annotations = annotations + new_annotations",
                "annotations += new_annotations\n            residual_annotations = annotations",
            ),
        ),
    ),
    Variant(
        "encoder: attention called with keyword arguments",
        (
            (
                E,
                ENC_ATTEND,
                ENC_ATTEND.replace(
                    "(annotations, annotations, annotations)",
                    "(queries=annotations, keys=annotations, values=annotations)",
                ),
            ),
        ),
        correct=True,
    ),
    # TransformerDecoder
    Variant(
        "decoder: the attention to the encoder asks with the states before the self-attention",
        ((D, DEC_CROSS, "contexts, annotations, annotations\n"),),
    ),
    Variant(
        "decoder: non-causal self-attention (the encoder-attention layer)",
        ((D, DEC_SELF, "self.encoder_attentions[i](contexts, contexts, contexts)"),),
    ),
    Variant(
        "decoder: annotations as the queries",
        ((D, DEC_CROSS, "annotations, residual_contexts, residual_contexts\n"),),
    ),
    Variant(
        "decoder: no residual around the attention to the encoder",
        ((D, DEC_CROSS_RESIDUAL, "residual_contexts = new_contexts  # (N, T, H)"),),
    ),
    Variant(
        "decoder: attends to the encoder in the first layer only",
        (
            (
                D,
                DEC_CROSS_RESIDUAL,
                DEC_CROSS_RESIDUAL.replace("+ new_contexts", "+ new_contexts * (i == 0)"),
            ),
        ),
    ),
    Variant(
        "decoder: residual added in place (the forward is right, its backward fails)",
        ((D, DEC_CROSS_RESIDUAL, "residual_contexts += new_contexts  # (N, T, H)"),),
    ),
]
