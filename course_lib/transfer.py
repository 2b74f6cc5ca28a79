"""Transfer from translation (Part 6a, CoVe): the data and the bookkeeping around it.

McCann et al. (2017) trained an encoder-decoder to translate, then fed the encoder's states to
other tasks as contextual word vectors (CoVe). Here, at the scale of a CPU:

- **the translation task**: verbal arithmetic written in words, translated to digits,
  ``"four minus ten plus two" -> "4-10+2"`` (:func:`expression_pairs`, 1 to 4 numbers). Sources
  are words (:data:`WORDS`, ``<pad>`` = 0), targets characters (:data:`DIGIT_TOKENS`, with their
  own ``<SOS>`` and ``<EOS>``); :func:`translation_batches` makes the batches that
  :func:`course_lib.train.fit` trains any :class:`~course_lib.train.Seq2Seq` on, and
  :func:`translate` decodes greedily;
- **the downstream task**: Part 4's sign of ``A op B`` (:mod:`course_lib.arithmetic`), as
  padded word ids: :func:`sign_batches` (dicts ``words (N, L)``, ``mask (N, L)``,
  ``labels (N,)``), :func:`sign_loss` for ``fit``, :func:`sign_scores` (accuracy overall and on
  the expressions whose order decides the sign);
- **the frozen BERT of Part 4 as an encoder of word ids** (:class:`BertWordStates`);
- **a table over seeds**: :func:`seed_spread` runs one experiment per seed and keeps the mean
  and the spread, :func:`paired_difference` compares two rows seed by seed (the differences and
  the standard error of their mean), :func:`markdown_table` prints the rows.

The feature extractor and the classifier are the notebook's exercises: none of them is here.
Shapes: N batch, L words, S source length, T target length, H hidden.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .arithmetic import NUMBER_WORDS, OPERATORS, Example
from .batching import Batch

WORDS: tuple[str, ...] = ("<pad>", *NUMBER_WORDS, *OPERATORS)  # the source vocabulary
PAD_ID = 0
WORD_TO_ID = {word: i for i, word in enumerate(WORDS)}
DIGIT_TOKENS: tuple[str, ...] = (*"0123456789+-", "<SOS>", "<EOS>")  # the target vocabulary
DIGIT_SOS_ID, DIGIT_EOS_ID = len(DIGIT_TOKENS) - 2, len(DIGIT_TOKENS) - 1
_SYMBOL = {"plus": "+", "minus": "-"}
_NUMBER = {word: str(value) for value, word in enumerate(NUMBER_WORDS)}


# --- the translation task -----------------------------------------------------------------


def digits_of(text: str) -> str:
    """The expression in digits: ``digits_of("four minus ten plus two") == "4-10+2"``.

    Raises ``ValueError`` on an unknown word or when numbers and operators do not alternate."""
    words = text.split()
    if not words or len(words) % 2 == 0:
        raise ValueError(f"expected numbers and operators in turn, got {text!r}")
    out = []
    for i, word in enumerate(words):
        table = _NUMBER if i % 2 == 0 else _SYMBOL
        if word not in table:
            kind = "number word" if i % 2 == 0 else "operator"
            raise ValueError(f"expected a {kind} at position {i} of {text!r}, got {word!r}")
        out.append(table[word])
    return "".join(out)


def expression_pairs(n: int, max_terms: int = 4, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct (words, digits) pairs of expressions with 1 to ``max_terms`` numbers,
    e.g. ``("four minus ten", "4-10")``; deterministic for a seed."""
    count = sum(20**k * 2 ** (k - 1) for k in range(1, max_terms + 1))
    if not 0 < n <= count:
        raise ValueError(f"n must be between 1 and {count} for max_terms={max_terms}, got {n}")
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < n:
        terms = rng.randint(1, max_terms)
        words = [rng.choice(NUMBER_WORDS)]
        for _ in range(terms - 1):
            words += [rng.choice(OPERATORS), rng.choice(NUMBER_WORDS)]
        seen.setdefault(" ".join(words))
    return [(text, digits_of(text)) for text in seen]


def word_ids(texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Word ids ``(N, L)`` (padded with ``<pad>`` = 0 to the longest text) and the mask
    ``(N, L)`` (bool, True at real words) of ``texts``."""
    if not texts:
        raise ValueError("expected at least one text")
    rows = []
    for text in texts:
        unknown = [w for w in text.split() if w not in WORD_TO_ID or w == WORDS[PAD_ID]]
        if unknown or not text.split():
            raise ValueError(f"cannot encode {text!r}: unknown words {unknown}")
        rows.append([WORD_TO_ID[w] for w in text.split()])
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    return ids, ids != PAD_ID


def _digit_ids(digits: str) -> list[int]:
    return [DIGIT_TOKENS.index(c) for c in digits]


def translation_batches(
    pairs: Sequence[tuple[str, str]], batch_size: int = 64, seed: int = 0
) -> list[Batch]:
    """Batches of (words, digits) pairs for ``fit`` with ``seq2seq_loss``, grouped by length
    (no padding): ``src (N, S)`` word ids, ``tgt_in (N, T)`` ``<SOS>`` + digits, ``tgt_out (N,
    T)`` digits + ``<EOS>``. Deterministic for a seed."""
    pairs = list(pairs)
    random.Random(seed).shuffle(pairs)
    groups: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    for text, digits in pairs:
        groups[(len(text.split()), len(digits))].append((text, digits))
    batches = []
    for key in sorted(groups):
        group = groups[key]
        for start in range(0, len(group), batch_size):
            chunk = group[start : start + batch_size]
            src, _ = word_ids([text for text, _ in chunk])  # (N, S)
            tgt = torch.tensor([_digit_ids(d) for _, d in chunk])  # (N, T - 1)
            column = torch.full((len(chunk), 1), DIGIT_SOS_ID)
            tgt_in = torch.cat([column, tgt], dim=1)  # (N, T)
            tgt_out = torch.cat([tgt, column.fill_(DIGIT_EOS_ID)], dim=1)  # (N, T)
            batches.append(
                Batch(
                    src=src,
                    tgt_in=tgt_in,
                    tgt_out=tgt_out,
                    src_mask=torch.ones_like(src, dtype=torch.bool),
                    tgt_mask=torch.ones_like(tgt_out, dtype=torch.bool),
                    sources=[t for t, _ in chunk],
                    targets=[d for _, d in chunk],
                )
            )
    return batches


@torch.no_grad()
def translate(model: nn.Module, texts: Sequence[str], max_len: int = 16) -> list[str]:
    """Greedy translation of ``texts`` (word expressions) into digits by a trained
    :class:`~course_lib.train.Seq2Seq`; texts of one length are decoded together."""
    model.eval()
    device = next(model.parameters()).device
    out: dict[int, str] = {}
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        by_length[len(text.split())].append(i)
    for indices in by_length.values():
        src, _ = word_ids([texts[i] for i in indices])
        annotations, hidden = model.encoder(src.to(device))  # (N, S, H), (N, H)
        tgt = torch.full((len(indices), 1), DIGIT_SOS_ID, device=device)
        for _ in range(max_len):
            logits, _ = model.decoder(tgt, annotations, hidden)  # (N, t, V)
            tgt = torch.cat([tgt, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
            if bool((tgt == DIGIT_EOS_ID).any(dim=1).all()):
                break
        for i, row in zip(indices, tgt[:, 1:].tolist(), strict=True):
            chars = []
            for token in row:
                if token == DIGIT_EOS_ID:
                    break
                chars.append(DIGIT_TOKENS[token] if token != DIGIT_SOS_ID else "?")
            out[i] = "".join(chars)
    return [out[i] for i in range(len(texts))]


# --- the downstream task: the sign of A op B ------------------------------------------------


def order_decides(text: str) -> bool:
    """Whether swapping the two numbers of ``A op B`` changes its sign (``A minus B``, A != B):
    a classifier that ignores word order cannot get both of such a pair right."""
    a, op, b = text.split()
    return op == "minus" and a != b


def sign_batches(
    examples: Sequence[Example], batch_size: int = 32, shuffle: bool = True, seed: int = 0
) -> list[dict[str, torch.Tensor]]:
    """Batches of Part 4's expressions as dicts: ``words (N, L)`` ids, ``mask (N, L)`` bool,
    ``labels (N,)`` (0 negative, 1 zero, 2 positive). Deterministic for a seed."""
    examples = list(examples)
    if shuffle:
        random.Random(seed).shuffle(examples)
    batches = []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start : start + batch_size]
        words, mask = word_ids([ex.text for ex in chunk])
        labels = torch.tensor([ex.label for ex in chunk])
        batches.append({"words": words, "mask": mask, "labels": labels})
    return batches


def sign_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Loss function for :func:`course_lib.train.fit`: the loss the classifier returns,
    ``model(words, mask, labels=labels) -> (loss, logits)``, and the batch size."""
    loss, _ = model(batch["words"], batch["mask"], labels=batch["labels"])
    return loss, len(batch["labels"])


@torch.no_grad()
def sign_scores(model: nn.Module, examples: Sequence[Example]) -> dict[str, float]:
    """``accuracy`` of ``model(words, mask) -> logits (N, 3)`` on ``examples``, and
    ``order_accuracy``: on those of them whose order decides the sign (:func:`order_decides`)."""
    model.eval()
    device = next(model.parameters()).device
    words, mask = word_ids([ex.text for ex in examples])
    predicted = model(words.to(device), mask.to(device)).argmax(dim=-1).cpu()  # (N,)
    right = predicted == torch.tensor([ex.label for ex in examples])
    ordered = torch.tensor([order_decides(ex.text) for ex in examples])
    return {
        "accuracy": float(right.float().mean()),
        "order_accuracy": float(right[ordered].float().mean()) if ordered.any() else math.nan,
    }


# --- BERT (Part 4) as an encoder of word ids -------------------------------------------------


class BertWordStates(nn.Module):
    """A frozen BERT read as an encoder of the word ids of :data:`WORDS`: ``words (N, L)`` ->
    ``states (N, L, H)`` (the last layer's state of each word, zero at ``<pad>``) and
    ``cls (N, H)`` (the state of ``[CLS]``), like the encoders of :mod:`course_lib.models`.

    Each row is sent as ``[CLS] w_1 ... w_n [SEP]`` (every word of :data:`WORDS` is one word
    piece of the uncased BERT vocabulary), with BERT's attention mask over the padding. BERT is
    frozen, so the states of a row never change: each distinct row is computed once and kept
    (a classifier trained for many epochs on 640 expressions runs BERT on each only once)."""

    def __init__(self, bert: nn.Module, tokenizer) -> None:
        super().__init__()
        self.bert = bert.eval().requires_grad_(False)
        pieces = [tokenizer.convert_tokens_to_ids(w) for w in WORDS[1:]]
        if tokenizer.unk_token_id in pieces:
            raise ValueError("a word of WORDS is not one word piece of this tokenizer")
        ids = torch.tensor([tokenizer.pad_token_id, *pieces])
        self.register_buffer("piece_of_word", ids, persistent=False)  # (len(WORDS),)
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad_id = tokenizer.pad_token_id
        self._kept: dict[tuple[int, ...], tuple[torch.Tensor, torch.Tensor]] = {}

    def train(self, mode: bool = True) -> BertWordStates:
        super().train(mode)
        self.bert.eval()  # frozen: dropout stays off
        return self

    @torch.no_grad()
    def forward(self, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [tuple(row) for row in words.tolist()]
        new = sorted({row for row in rows if row not in self._kept})
        if new:
            states, cls = self._run(torch.tensor(new, device=words.device))
            for i, row in enumerate(new):
                self._kept[row] = (states[i], cls[i])
        states = torch.stack([self._kept[row][0] for row in rows])  # (N, L, H)
        return states, torch.stack([self._kept[row][1] for row in rows])  # (N, H)

    def _run(self, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n, length = words.shape
        real = words != PAD_ID  # (N, L)
        ids = torch.full((n, length + 2), self.pad_id, device=words.device)  # (N, L + 2)
        ids[:, 0] = self.cls_id
        ids[:, 1:-1] = self.piece_of_word[words]
        ids[torch.arange(n), real.sum(dim=1) + 1] = self.sep_id  # after the last word
        attention = torch.zeros_like(ids)
        attention[:, 0] = 1
        attention[:, 1:-1] = real.long()
        attention[torch.arange(n), real.sum(dim=1) + 1] = 1
        states = self.bert(input_ids=ids, attention_mask=attention).last_hidden_state
        words_states = states[:, 1:-1] * real.unsqueeze(-1)  # (N, L, H)
        return words_states, states[:, 0]


# --- a table over seeds -------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """One number measured once per seed: the values, their mean and standard deviation."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float:
        """Sample standard deviation (0 for a single seed)."""
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    def __str__(self) -> str:
        return f"{self.mean:.3f} ± {self.std:.3f}"


def seed_spread(run: Callable[[int], dict[str, float]], seeds: Sequence[int]) -> dict[str, Spread]:
    """Run ``run(seed)`` for each seed (it returns named numbers, the same names every time)
    and gather each number over the seeds: ``{name: Spread}``."""
    if not seeds:
        raise ValueError("expected at least one seed")
    found: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        for name, value in run(seed).items():
            found[name].append(float(value))
    counts = {len(values) for values in found.values()}
    if counts != {len(seeds)}:
        raise ValueError("every run must return the same names")
    return {name: Spread(tuple(values)) for name, values in found.items()}


@dataclass(frozen=True)
class Difference:
    """One row of a table minus another, seed by seed: the rows ran with the same seeds, so
    each seed gives one difference (paired). ``stderr`` is the standard error of their mean,
    ``std / sqrt(seeds)``: a mean difference within about two standard errors of zero is not
    told apart from zero by these seeds."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def stderr(self) -> float:
        """Standard error of the mean difference (``nan`` for a single seed: it is unknown)."""
        if len(self.values) < 2:
            return math.nan
        return statistics.stdev(self.values) / math.sqrt(len(self.values))

    def __str__(self) -> str:
        return f"{self.mean:+.3f} ± {self.stderr:.3f}"


def paired_difference(first: Spread, second: Spread) -> Difference:
    """``first - second`` seed by seed, for two rows measured with the same seeds in the same
    order (``seed_spread`` with the same ``seeds``)."""
    if len(first.values) != len(second.values):
        raise ValueError(
            f"the rows hold {len(first.values)} and {len(second.values)} seeds: pair the same seeds"
        )
    return Difference(tuple(a - b for a, b in zip(first.values, second.values, strict=True)))


def markdown_table(rows: Sequence[dict[str, object]], columns: Sequence[str] = ()) -> str:
    """Rows (dicts) as a Markdown table, floats with 3 digits. ``columns``: the keys shown, in
    order (default: those of the first row); with ``columns``, no rows make a header alone."""
    keys = list(columns) or (list(rows[0]) if rows else [])
    if not keys:
        raise ValueError("expected at least one row, or the columns")

    def show(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(show(row.get(k, "")) for k in keys) + " |" for row in rows]
    return "\n".join(lines)
