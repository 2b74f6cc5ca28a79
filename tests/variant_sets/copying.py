"""Variants of ``5b_copying_subwords``: mistakes students make in ``copy_mixture`` and
``learn_bpe``, and other correct ways to write them."""

from autograder.quality.variants import Variant

NOTEBOOK = "5b_copying_subwords"
C, L = "copy_mixture", "learn_bpe"
COPY = "p_copy = torch.zeros_like(p_vocab).scatter_add(2, index, attention.transpose(1, 2))"
MIX = "return p_gen * p_vocab + (1 - p_gen) * p_copy"
COUNT = "pair_counts[pair] += word_counts[word]"
BEST = "best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))"
START = "words = {word: list(subwords.split_word(word)) for word in word_counts}"
MERGE = """            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            words[word] = merged"""
DO_NOTHING = (  # no copying at all, and no merges learnt
    (C, MIX, "return p_vocab"),
    (L, START, "return []\n    " + START),
)
# The given names the judges use, rebound after the given cells: the judges build them from the
# course's source, so no point moves.
REBOUND = """


class Broken(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("a given name rebound")


PointerGeneratorDecoder = AdditiveAttention = CopyEncoder = GRUEncoder = Broken
train.Seq2Seq = Broken
"""

VARIANTS = [
    Variant("the given models rebound", ((C, MIX, MIX + REBOUND),), correct=True),
    Variant("every answer a stub of the right shape", DO_NOTHING, points=0.0, do_nothing=True),
    # --- copy_mixture
    Variant(
        "copy: p_gen and 1 - p_gen swapped",
        ((C, MIX, "return (1 - p_gen) * p_vocab + p_gen * p_copy"),),
    ),
    Variant(
        "copy: scatter (repeated tokens overwritten)",
        ((C, COPY, COPY.replace(".scatter_add(", ".scatter(")),),
    ),
    Variant(
        "copy: attention reshaped instead of transposed",
        ((C, COPY, COPY.replace("attention.transpose(1, 2)", "attention.reshape(n, t, -1)")),),
    ),
    Variant(
        "copy: the copy part not weighted by 1 - p_gen",
        ((C, MIX, "return p_gen * p_vocab + p_copy"),),
    ),
    Variant(
        "copy: attention detached",
        (
            (
                C,
                COPY,
                COPY.replace("attention.transpose(1, 2)", "attention.detach().transpose(1, 2)"),
            ),
        ),
    ),
    Variant(
        "copy: positions copied as if they were tokens",
        (
            (
                C,
                COPY,
                "p_copy = torch.nn.functional.pad(attention.transpose(1, 2), "
                "(0, p_vocab.shape[2] - src.shape[1]))",
            ),
        ),
    ),
    Variant(
        "copy: nothing copied (p_vocab returned, p_gen unused)",
        ((C, MIX, "return p_vocab"),),
    ),
    # --- learn_bpe
    Variant("bpe: word counts ignored", ((L, COUNT, "pair_counts[pair] += 1"),)),
    Variant(
        "bpe: ties to the first pair met",
        ((L, BEST, "best = max(pair_counts, key=pair_counts.get)"),),
    ),
    Variant(
        "bpe: ties to the largest pair",
        ((L, BEST, "best = max(pair_counts, key=lambda pair: (pair_counts[pair], pair))"),),
    ),
    Variant(
        "bpe: no end-of-word marker",
        ((L, START, "words = {word: list(word) for word in word_counts}"),),
    ),
    Variant(
        "bpe: str.replace on the joined symbols",
        (
            (
                L,
                MERGE,
                '            joined = " ".join(symbols).replace(" ".join(best), "".join(best))\n'
                '            words[word] = joined.split(" ")',
            ),
        ),
    ),
    Variant(
        "bpe: overlapping merges",
        ((L, MERGE, MERGE.replace("                    i += 2", "                    i += 1")),),
    ),
    Variant(
        "bpe: no early stop (min of nothing)",
        ((L, "        if not pair_counts:\n            break\n", ""),),
    ),
    Variant(
        "bpe: one merge fewer",
        ((L, "for _ in range(num_merges):", "for _ in range(num_merges - 1):"),),
    ),
    # --- other correct answers
    Variant(
        "copy: one-hot and bmm",
        (
            (
                C,
                COPY,
                "one_hot = torch.nn.functional.one_hot(src, p_vocab.shape[2]).to(p_vocab.dtype)\n"
                "    p_copy = torch.bmm(attention.transpose(1, 2), one_hot)  # (N, T, V)",
            ),
        ),
        correct=True,
    ),
    Variant(
        "copy: einsum and torch.lerp",
        (
            (
                C,
                COPY,
                "one_hot = torch.nn.functional.one_hot(src, p_vocab.shape[2]).float()\n"
                '    p_copy = torch.einsum("nst,nsv->ntv", attention, one_hot)',
            ),
            (C, MIX, "return torch.lerp(p_copy, p_vocab, p_gen)"),
        ),
        correct=True,
    ),
    Variant(
        "copy: in-place scatter_add_",
        (
            (
                C,
                COPY,
                "p_copy = torch.zeros_like(p_vocab)\n"
                "    p_copy.scatter_add_(2, index, attention.transpose(1, 2))",
            ),
        ),
        correct=True,
    ),
    Variant(
        "bpe: sorted pairs",
        ((L, BEST, "best = sorted(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]"),),
        correct=True,
    ),
    Variant(
        "bpe: regular expression on the joined symbols (Sennrich et al.)",
        (
            (
                L,
                MERGE,
                "            import re\n\n"
                '            pair = re.escape(" ".join(best))\n'
                '            pattern = re.compile(r"(?<!\\S)" + pair + r"(?!\\S)")\n'
                '            joined = pattern.sub("".join(best), " ".join(symbols))\n'
                '            words[word] = joined.split(" ")',
            ),
        ),
        correct=True,
    ),
]
