"""Variants of ``4_bert``: mistakes students make in ``BertMLP`` and ``multiclass_mcc``, and other
correct ways to write them."""

from autograder.quality.variants import Variant

NOTEBOOK = "4_bert"
B = "bert_mlp"
M = "mcc"

ENCODE = "states = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state"
CLS = "logits = self.head(states[:, 0])"
LOSS = "return F.cross_entropy(logits, labels), logits"
HEAD = """self.head = nn.Sequential(
            nn.Dropout(0.1),
            nn.Linear(hidden, 256),
            nn.GELU(),
            nn.Linear(256, 64),
            nn.GELU(),
            nn.Linear(64, num_labels),
        )"""
FREEZE = """        if freeze_bert:
            for param in self.bert.parameters():
                param.requires_grad = False"""
RETURN = "return float(numerator / denominator) if denominator > 0 else 0.0"
MCC_BODY = """    c = torch.as_tensor(confusion, dtype=torch.float64)  # (K, K)
    s = c.sum()
    correct = c.trace()
    t = c.sum(dim=1)  # (K,) true examples of each class
    p = c.sum(dim=0)  # (K,) predictions of each class
    numerator = correct * s - p @ t
    denominator = torch.sqrt((s**2 - p @ p) * (s**2 - t @ t))
    return float(numerator / denominator) if denominator > 0 else 0.0"""
DO_NOTHING = (  # logits of the right shape that read nothing; an MCC that is always 0
    (B, CLS, "logits = torch.zeros(states.shape[0], 3, requires_grad=True)"),
    (M, MCC_BODY, "    return 0.0"),
)
# The given names the judges use, rebound after the given cells: the judges build them from the
# course's source, so no point moves.
REBOUND = """


def tiny_bert(*args, **kwargs):
    raise RuntimeError("a given name rebound")


StubEncoder = tiny_bert
sys = None
"""
RELU_NAMED_GELU = """self.head = nn.Sequential(
            nn.Dropout(0.1),
            nn.Linear(hidden, 128),
            type("GELU", (nn.ReLU,), {})(),  # BertMLPExample's head, its ReLU named GELU
            nn.Linear(128, num_labels),
        )"""

VARIANTS = [
    Variant(
        "the given tiny_bert, StubEncoder and sys rebound",
        ((M, RETURN, RETURN + REBOUND),),
        correct=True,
    ),
    Variant(
        "BertMLPExample's head, its ReLU a subclass named GELU",
        ((B, HEAD, RELU_NAMED_GELU),),
        points=0.45,
    ),
    Variant(
        "freeze flags that lie: the encoder unfrozen at the first forward",
        ((B, ENCODE, "self.bert.requires_grad_(True)\n        " + ENCODE),),
        points=0.44,
    ),
    Variant("every answer a stub of the right shape", DO_NOTHING, points=0.0, do_nothing=True),
    # --- BertMLP: which hidden state the head reads, and the mask
    Variant(
        "logits from the mean of all positions",
        ((B, CLS, "logits = self.head(states.mean(dim=1))"),),
    ),
    Variant("logits from the last position", ((B, CLS, "logits = self.head(states[:, -1])"),)),
    Variant(
        "attention mask not passed to the encoder",
        ((B, ENCODE, "states = self.bert(input_ids=input_ids).last_hidden_state"),),
    ),
    # --- the loss
    Variant(
        "loss from softmax probabilities",
        ((B, LOSS, "return F.cross_entropy(logits.softmax(dim=-1), labels), logits"),),
    ),
    Variant(
        "loss summed instead of averaged",
        ((B, LOSS, 'return F.cross_entropy(logits, labels, reduction="sum"), logits'),),
    ),
    Variant(
        "loss against other logits (the last position's)",
        ((B, LOSS, "return F.cross_entropy(self.head(states[:, -1]), labels), logits"),),
    ),
    Variant(
        "loss of detached logits (no gradient)",
        ((B, LOSS, "return F.cross_entropy(logits.detach(), labels), logits"),),
    ),
    Variant(
        "only the logits returned when labels are given",
        ((B, "if labels is None:\n            return logits\n        " + LOSS, "return logits"),),
    ),
    Variant(
        "(logits, loss) instead of (loss, logits)",
        ((B, LOSS, "return logits, F.cross_entropy(logits, labels)"),),
    ),
    # --- freezing
    Variant(
        "freeze_bert freezes nothing", ((B, FREEZE, "        self.freeze_bert = freeze_bert"),)
    ),
    Variant(
        "freeze_bert freezes the head too",
        ((B, "for param in self.bert.parameters():", "for param in self.parameters():"),),
    ),
    Variant(
        "the encoder always frozen",
        (
            (
                B,
                FREEZE,
                "        for param in self.bert.parameters():\n"
                "            param.requires_grad = False",
            ),
        ),
    ),
    # Freezing is judged by what training does (issue 37): no gradient of the loss reaches an
    # encoder run without gradients, so no optimizer moves it: frozen, whatever its flags say.
    Variant(
        "freeze_bert runs the encoder without gradients instead of freezing its parameters",
        (
            (B, FREEZE, "        self.freeze_bert = freeze_bert"),
            (
                B,
                ENCODE,
                "with torch.set_grad_enabled(not self.freeze_bert):\n            " + ENCODE,
            ),
        ),
        correct=True,
    ),
    # --- the head
    Variant(
        "hidden size hard-coded to 384 (the bundled BERT's)",
        ((B, "hidden = bert.config.hidden_size", "hidden = 384"),),
    ),
    Variant(
        "a head identical to BertLinear's",
        ((B, HEAD, "self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(hidden, num_labels))"),),
    ),
    Variant(
        "a head identical to BertMLPExample's",
        (
            (
                B,
                HEAD,
                "self.head = nn.Sequential(\n"
                "            nn.Dropout(0.1), nn.Linear(hidden, 128), nn.ReLU(), "
                "nn.Linear(128, num_labels)\n"
                "        )",
            ),
        ),
    ),
    Variant(
        "num_labels ignored (always 3)", ((B, "nn.Linear(64, num_labels)", "nn.Linear(64, 3)"),)
    ),
    # --- multiclass_mcc
    Variant(
        "MCC with t @ t for p @ t",
        ((M, "numerator = correct * s - p @ t", "numerator = correct * s - t @ t"),),
    ),
    Variant(
        "MCC with row sums for both t and p",
        ((M, "p = c.sum(dim=0)  # (K,) predictions", "p = c.sum(dim=1)  # (K,) predictions"),),
    ),
    Variant(
        "MCC divides by a zero denominator (NaN)",
        ((M, RETURN, "return float(numerator / denominator)"),),
    ),
    Variant(
        "MCC returns a tensor",
        ((M, RETURN, "return numerator / denominator if denominator > 0 else torch.tensor(0.0)"),),
    ),
    Variant(
        "MCC returns a NumPy array",
        ((M, RETURN, "return (numerator / denominator).numpy() if denominator > 0 else 0.0"),),
    ),
    Variant(
        "MCC without the factor s in the numerator",
        ((M, "numerator = correct * s - p @ t", "numerator = correct - p @ t"),),
    ),
    Variant("MCC always 0.0 (a stub)", ((M, MCC_BODY, "    return 0.0"),)),
    # --- other correct answers
    Variant(
        "a tanh head of other widths",
        (
            (
                B,
                HEAD,
                "self.head = nn.Sequential(\n"
                "            nn.Dropout(0.2), nn.Linear(hidden, 32), nn.Tanh(), "
                "nn.Linear(32, num_labels)\n"
                "        )",
            ),
        ),
        correct=True,
    ),
    Variant(
        "one hidden layer of 128 GELU units (the example with another activation)",
        (
            (
                B,
                HEAD,
                "self.head = nn.Sequential(\n"
                "            nn.Dropout(0.1), nn.Linear(hidden, 128), nn.GELU(), "
                "nn.Linear(128, num_labels)\n"
                "        )",
            ),
        ),
        correct=True,
    ),
    Variant(
        "encoder output by index, mask passed by position",
        ((B, ENCODE, "states = self.bert(input_ids, attention_mask)[0]"),),
        correct=True,
    ),
    Variant(
        "nn.CrossEntropyLoss() module",
        ((B, LOSS, "return nn.CrossEntropyLoss()(logits, labels), logits"),),
        correct=True,
    ),
    Variant(
        "bert.requires_grad_(False)",
        ((B, FREEZE, "        if freeze_bert:\n            self.bert.requires_grad_(False)"),),
        correct=True,
    ),
    Variant(
        "MCC with NumPy",
        (
            (
                M,
                MCC_BODY,
                "    import numpy as np\n\n"
                "    c = np.asarray(confusion, dtype=np.float64)\n"
                "    s, correct = c.sum(), np.trace(c)\n"
                "    t, p = c.sum(axis=1), c.sum(axis=0)\n"
                "    cov_tp = correct * s - t @ p\n"
                "    cov_pp, cov_tt = s * s - p @ p, s * s - t @ t\n"
                "    if cov_pp * cov_tt == 0:\n"
                "        return 0.0\n"
                "    return float(cov_tp / np.sqrt(cov_pp * cov_tt))",
            ),
        ),
        correct=True,
    ),
    Variant(
        "MCC of the transposed matrix (R_K is symmetric)",
        (
            (
                M,
                "c = torch.as_tensor(confusion, dtype=torch.float64)",
                "c = torch.as_tensor(confusion).double().T",
            ),
        ),
        correct=True,
    ),
    Variant(
        "MCC in float32",
        (
            (
                M,
                "c = torch.as_tensor(confusion, dtype=torch.float64)",
                "c = torch.as_tensor(confusion).float()",
            ),
        ),
        correct=True,
    ),
]
