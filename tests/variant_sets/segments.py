"""Variants of ``6b_segment_attention``: mistakes students make in ``segment_keys_mask``,
``SegmentAttention.forward`` and ``ClsAttention.forward`` (a leaking mask, the block mask or the
masking of some queries left out, as LaMBERT's report says its masking was "at some parts"
omitted, [CLS] read from the tokens...), and other correct ways to write them (a dense mask over
the flat sequence, einsum, another order of the keys)."""

from autograder.quality.variants import Variant

NOTEBOOK = "6b_segment_attention"
K, A, C = "segment_keys_mask", "segment_attention", "cls_attention"

ANY = "segment_mask = token_mask.any(dim=2)"
EXPAND = "segment_keys = segment_mask[:, None, :].expand(b, s, s)"
JOIN = "return torch.cat([token_mask, segment_keys], dim=2)"

EVERY = "every_segment = segments[:, None, :, :].expand(b, s, s, d)"
KEYS = "keys = torch.cat([tokens, every_segment], dim=2)"
CALL = """        context, _ = masked_attention(
            self.Q(queries), self.K(keys), self.V(keys), key_mask[:, :, None, :]
        )  # (B, S, M + 1, d)"""
RETURN = "return context[:, :, :m], context[:, :, m]"
BODY = f"""        queries = torch.cat([tokens, segments[:, :, None, :]], dim=2)  # (B, S, M + 1, d)
        {EVERY}  # (B, S, S, d)
        {KEYS}  # (B, S, M + S, d)
{CALL}
        {RETURN}"""


def with_mask(edit: str) -> str:
    """The solution's call of masked_attention with a (B, S, M + 1, M + S) mask edited first."""
    return (
        "        mask = key_mask[:, :, None, :].expand(b, s, m + 1, m + s).clone()\n"
        f"        {edit}\n"
        "        context, _ = masked_attention(self.Q(queries), self.K(keys), self.V(keys), mask)"
    )


CLS_KEYS = "keys = torch.cat([cls[:, None, :], segments], dim=1)"
CLS_MASK = "mask = torch.cat([itself, token_mask.any(dim=2)], dim=1)"

# A do-nothing answer: each piece a stub of the right shape (zeros), computing nothing.
DO_NOTHING = (
    (K, JOIN, "return torch.zeros(b, s, m + s, dtype=torch.bool)"),
    (A, RETURN, "return torch.zeros_like(tokens), torch.zeros_like(segments)"),
    (C, "return context[:, 0]", "return torch.zeros_like(cls)"),
)

VARIANTS = [
    Variant("every piece a stub of zeros", DO_NOTHING, points=0.0, do_nothing=True),
    # --- segment_keys_mask
    Variant(
        "mask: segments of padding only not masked",
        ((K, ANY, "segment_mask = torch.ones_like(token_mask[:, :, 0])"),),
    ),
    Variant("mask: a segment counts only when full (all)", ((K, ANY, ANY.replace("any", "all")),)),
    Variant(
        "mask: segment flags along the wrong axis (each segment its own flag S times)",
        ((K, EXPAND, "segment_keys = segment_mask[:, :, None].expand(b, s, s)"),),
    ),
    Variant(
        "mask: padding tokens readable (a leaking mask)",
        ((K, JOIN, "return torch.cat([torch.ones_like(token_mask), segment_keys], dim=2)"),),
    ),
    Variant(
        "mask: the segments before the tokens",
        ((K, JOIN, "return torch.cat([segment_keys, token_mask], dim=2)"),),
    ),
    # --- SegmentAttention.forward
    Variant(
        "attention: the block mask omitted, tokens read every token of the input",
        (
            (
                A,
                KEYS,
                "all_tokens = tokens.reshape(b, 1, s * m, d).expand(b, s, s * m, d)\n"
                "        keys = torch.cat([all_tokens, every_segment], dim=2)\n"
                "        token_keys = key_mask[:, :, :m].reshape(b, 1, s * m).expand(b, s, s * m)\n"
                "        key_mask = torch.cat([token_keys, key_mask[:, :, m:]], dim=2)",
            ),
        ),
    ),
    Variant(
        "attention: the key mask not applied",
        ((A, "key_mask[:, :, None, :]", "torch.ones_like(key_mask)[:, :, None, :]"),),
    ),
    Variant(
        "attention: masking left out for the segment queries",
        (
            (
                A,
                RETURN,
                "unmasked, _ = masked_attention(\n"
                "            self.Q(queries), self.K(keys), self.V(keys),\n"
                "            torch.ones_like(key_mask)[:, :, None, :],\n"
                "        )\n"
                "        return context[:, :, :m], unmasked[:, :, m]",
            ),
        ),
    ),
    Variant(
        "attention: each segment reads its own embedding S times",
        ((A, EVERY, "every_segment = segments[:, :, None, :].expand(b, s, s, d)"),),
    ),
    Variant(
        "attention: tokens do not read the segment embeddings",
        ((A, CALL, with_mask("mask[:, :, :m, m:] = False")),),
    ),
    Variant(
        "attention: the segment embedding does not read its tokens",
        ((A, CALL, with_mask("mask[:, :, m, :m] = False")),),
    ),
    Variant("attention: values not projected", ((A, "self.V(keys)", "keys"),)),
    # --- ClsAttention.forward
    Variant(
        "cls: [CLS] from the tokens instead of the segments",
        (
            (C, CLS_KEYS, "keys = torch.cat([cls[:, None, :], tokens.flatten(1, 2)], dim=1)"),
            (C, CLS_MASK, "mask = torch.cat([itself, token_mask.flatten(1, 2)], dim=1)"),
        ),
    ),
    Variant(
        "cls: [CLS] from the tokens and the segments",
        (
            (
                C,
                CLS_KEYS,
                "keys = torch.cat([cls[:, None, :], segments, tokens.flatten(1, 2)], dim=1)",
            ),
            (
                C,
                CLS_MASK,
                "mask = torch.cat([itself, token_mask.any(dim=2), token_mask.flatten(1, 2)], 1)",
            ),
        ),
    ),
    Variant(
        "cls: [CLS] does not read itself",
        (
            (C, CLS_KEYS, "keys = segments"),
            (C, CLS_MASK, "mask = token_mask.any(dim=2)"),
        ),
    ),
    Variant(
        "cls: segments of padding only not masked",
        (
            (
                C,
                CLS_MASK,
                "mask = torch.cat([itself, torch.ones_like(token_mask[:, :, 0])], dim=1)",
            ),
        ),
    ),
    Variant(  # lost 0.05 while the [CLS] flow checks held only full segments
        "cls: a segment counts only when full (all)",
        ((C, CLS_MASK, CLS_MASK.replace("any", "all")),),
        points=0.9,
    ),
    Variant(  # like "all" on the chains' masks (padding at the end): partly padded segments
        "cls: a segment counts when its last token is real",
        ((C, CLS_MASK, "mask = torch.cat([itself, token_mask[:, :, -1]], dim=1)"),),
        points=0.9,
    ),
    Variant(
        "cls: the mean of the segments, no attention",
        ((C, "return context[:, 0]", "return segments.mean(dim=1)"),),
    ),
    # --- other correct answers
    Variant(
        "mask: expand written as repeat",
        ((K, EXPAND, "segment_keys = segment_mask.unsqueeze(1).repeat(1, s, 1)"),),
        correct=True,
    ),
    Variant(
        "attention: a dense mask over the flat sequence (right, but no saving)",
        (
            (
                A,
                BODY,
                "        n = s * m\n"
                "        flat = torch.cat([tokens.reshape(b, n, d), segments], dim=1)\n"
                "        owner = torch.arange(s).repeat_interleave(m)\n"
                "        owner = torch.cat([owner, torch.arange(s)])  # each vector's segment\n"
                "        same = owner[:, None] == owner[None, :n]  # (n + S, n)\n"
                "        token_ok = key_mask[:, :, :m].reshape(b, 1, n)  # (B, 1, n)\n"
                "        segment_ok = key_mask[:, :1, m:].expand(b, n + s, s)  # (B, n + S, S)\n"
                "        dense = torch.cat([same[None] & token_ok, segment_ok], dim=2)\n"
                "        q, k, v = self.Q(flat), self.K(flat), self.V(flat)\n"
                "        out, _ = masked_attention(q, k, v, dense)\n"
                "        return out[:, :n].reshape(b, s, m, d), out[:, n:]",
            ),
        ),
        correct=True,
    ),
    Variant(
        "attention: einsum and a softmax written out",
        (
            (
                A,
                CALL,
                "        q, k, v = self.Q(queries), self.K(keys), self.V(keys)\n"
                '        scores = torch.einsum("bsqd,bskd->bsqk", q, k) / math.sqrt(d)\n'
                '        scores = scores.masked_fill(~key_mask[:, :, None, :], float("-inf"))\n'
                '        context = torch.einsum("bsqk,bskd->bsqd", scores.softmax(dim=-1), v)',
            ),
        ),
        correct=True,
    ),
    Variant(
        "attention: the segment embeddings first among the keys",
        (
            (A, KEYS, "keys = torch.cat([every_segment, tokens], dim=2)"),
            (
                A,
                "key_mask[:, :, None, :]",
                "torch.cat([key_mask[:, :, m:], key_mask[:, :, :m]], dim=2)[:, :, None, :]",
            ),
        ),
        correct=True,
    ),
    Variant(
        "cls: [CLS] last among the keys",
        (
            (C, CLS_KEYS, "keys = torch.cat([segments, cls[:, None, :]], dim=1)"),
            (C, CLS_MASK, "mask = torch.cat([token_mask.any(dim=2), itself], dim=1)"),
        ),
        correct=True,
    ),
]
