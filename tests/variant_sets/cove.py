"""Variants of ``6a_cove``: mistakes students make in the frozen feature extractor and the
pieces of the biattentive classifier, and other correct ways to write them."""

from autograder.quality.variants import Variant

NOTEBOOK = "6a_cove"
X, B, P, S, N = "cove_features", "biattention", "masked_pools", "self_attentive_pooling", "bcn"
EVAL = (
    "        self.encoder.eval()  # frozen: no dropout, whatever mode the model holding it is in\n"
)
NO_GRAD = (
    "        with torch.no_grad():\n            states, _ = self.encoder(words)  # (N, L, H)\n"
)
CAT = "features = torch.cat([self.static(words), states], dim=-1)"
ZERO_PADS = "return features * mask.unsqueeze(-1)"
OVER_X = 'over_x = torch.softmax(affinity.masked_fill(~x_mask.unsqueeze(2), float("-inf")), dim=1)'
OVER_Y = 'over_y = torch.softmax(affinity.masked_fill(~y_mask.unsqueeze(1), float("-inf")), dim=2)'
MAX = 'largest = h.masked_fill(~real, float("-inf")).max(dim=1).values'
MIN = 'smallest = h.masked_fill(~real, float("inf")).min(dim=1).values'
MEAN = "mean = (h * real).sum(dim=1) / real.sum(dim=1)"
WEIGHTS = 'weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)'
POOLED = "pooled = torch.bmm(weights.unsqueeze(1), h).squeeze(1)"
INTEGRATE_X = "x_given_y = self.integrate_x(torch.cat([x, x - c_y, x * c_y], dim=-1))"
INTEGRATE_Y = "y_given_x = self.integrate_y(torch.cat([y, y - c_x, y * c_x], dim=-1))"

BCN_START = "        w = self.features(words, mask)  # (N, L, F)\n"
BCN_END = "        return F.cross_entropy(logits, labels), logits"
# A do-nothing answer: every piece a stub of the right shape (zeros), computing nothing.
DO_NOTHING = (
    (X, "self.static = static.requires_grad_(False)", "self.static = static"),
    (X, "self.encoder = encoder.requires_grad_(False)", "self.encoder = encoder"),
    (
        X,
        EVAL + NO_GRAD + f"        {CAT}  # (N, L, E + H)\n        {ZERO_PADS}",
        "        size = self.static.weight.shape[1] + self.encoder.embedding.weight.shape[1]\n"
        "        return torch.zeros(*words.shape, size)",
    ),
    (B, OVER_X, "c_x, c_y = torch.zeros_like(y), torch.zeros_like(x)"),
    (B, OVER_Y, "over_y = None"),
    (B, "c_x = torch.bmm(over_x.transpose(1, 2), x)", "pass"),
    (B, "c_y = torch.bmm(over_y, y)", "pass"),
    (P, MAX, "largest = torch.zeros_like(h[:, 0])"),
    (P, MEAN, "mean = torch.zeros_like(h[:, 0])"),
    (P, MIN, "smallest = torch.zeros_like(h[:, 0])"),
    (S, WEIGHTS, "weights = torch.zeros_like(scores)"),
    (S, POOLED, "pooled = torch.zeros_like(h[:, 0])"),
    (
        N,
        BCN_START,
        "        logits = torch.zeros(words.shape[0], self.classifier[-1].out_features)\n"
        "        if labels is None:\n"
        "            return logits\n"
        "        return F.cross_entropy(logits, labels), logits\n" + BCN_START,
    ),
)
# The given names the judges build composites from, rebound after the answers: the judges
# build them from the course's source (course.GRUEncoder...), so no point moves.
BROKEN = """


class Broken(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("a given name rebound")


GRUEncoder = StandInEncoder = StaticFeatures = Broken
"""

VARIANTS = [
    Variant("every piece a stub of zeros", DO_NOTHING, points=0.0, do_nothing=True),
    Variant(
        "the given encoders and StaticFeatures rebound",
        ((N, BCN_END, BCN_END + BROKEN),),
        correct=True,
    ),
    # CoVeFeatures
    Variant(
        "extractor: the encoder not frozen (it trains with the classifier)",
        (
            (X, "self.encoder = encoder.requires_grad_(False)", "self.encoder = encoder"),
            (X, NO_GRAD, "        states, _ = self.encoder(words)  # (N, L, H)\n"),
        ),
    ),
    Variant(  # it lost 0.025 before the static vectors' check weighed 0.05
        "extractor: the static vectors not frozen",
        ((X, "self.static = static.requires_grad_(False)", "self.static = static"),),
        points=0.95,
    ),
    Variant("extractor: the encoder left in training mode (dropout on)", ((X, EVAL, ""),)),
    Variant(
        "extractor: [CoVe; static], the wrong order",
        ((X, CAT, "features = torch.cat([states, self.static(words)], dim=-1)"),),
    ),
    Variant(
        "extractor: the last state at every word (a sentence vector, not CoVe)",
        (
            (
                X,
                "states, _ = self.encoder(words)  # (N, L, H)",
                "states, last = self.encoder(words)  # (N, L, H)\n"
                "            states = last.unsqueeze(1).expand_as(states)",
            ),
        ),
    ),
    Variant("extractor: padding not zeroed", ((X, ZERO_PADS, "return features"),)),
    Variant(
        "extractor: the mask inverted", ((X, ZERO_PADS, "return features * (~mask).unsqueeze(-1)"),)
    ),
    Variant(
        "extractor: train() kept in eval mode by an override of train",
        (
            (X, EVAL, ""),
            (
                X,
                "    def forward(self, words",
                "    def train(self, mode=True):\n"
                "        super().train(mode)\n"
                "        self.encoder.eval()\n"
                "        return self\n\n"
                "    def forward(self, words",
            ),
        ),
        correct=True,
    ),
    Variant(
        "extractor: detached outputs instead of frozen parameters",
        (
            (X, "self.static = static.requires_grad_(False)", "self.static = static"),
            (X, "self.encoder = encoder.requires_grad_(False)", "self.encoder = encoder"),
            (X, NO_GRAD, "        states = self.encoder(words)[0].detach()  # (N, L, H)\n"),
            (X, CAT, "features = torch.cat([self.static(words).detach(), states], dim=-1)"),
        ),
        correct=True,
    ),
    Variant(
        "extractor: masked_fill for the padding",
        ((X, ZERO_PADS, "return features.masked_fill(~mask.unsqueeze(-1), 0.0)"),),
        correct=True,
    ),
    # biattention
    Variant(
        "biattention: c_x's softmax over the positions of y",
        ((B, OVER_X, OVER_X.replace("dim=1", "dim=2")),),
    ),
    Variant(
        "biattention: c_x and c_y swapped", ((B, "    return c_x, c_y", "    return c_y, c_x"),)
    ),
    Variant(
        "biattention: no mask",
        (
            (B, OVER_X, "over_x = torch.softmax(affinity, dim=1)"),
            (B, OVER_Y, "over_y = torch.softmax(affinity, dim=2)"),
        ),
    ),
    Variant(
        "biattention: padding zeroed after the softmax (weights no longer sum to 1)",
        (
            (B, OVER_X, "over_x = torch.softmax(affinity, dim=1) * x_mask.unsqueeze(2)"),
            (B, OVER_Y, "over_y = torch.softmax(affinity, dim=2) * y_mask.unsqueeze(1)"),
        ),
    ),
    Variant(  # 0.02 (finite) + 0.03 (BCN padding: the NaN reaches every pool)
        "biattention: one mask over both axes (NaN rows at padded positions)",
        (
            (
                B,
                OVER_X,
                "both = x_mask.unsqueeze(2) & y_mask.unsqueeze(1)  # (N, Lx, Ly)\n"
                '    over_x = torch.softmax(affinity.masked_fill(~both, float("-inf")), dim=1)',
            ),
            (
                B,
                OVER_Y,
                'over_y = torch.softmax(affinity.masked_fill(~both, float("-inf")), dim=2)',
            ),
        ),
        points=0.95,
    ),
    Variant(
        "biattention: einsum and an additive -1e9 mask",
        (
            (
                B,
                "affinity = torch.bmm(x, y.transpose(1, 2))",
                "affinity = torch.einsum('nid,njd->nij', x, y)",
            ),
            (
                B,
                OVER_X,
                "over_x = torch.softmax(affinity - 1e9 * (~x_mask).unsqueeze(2).float(), dim=1)",
            ),
            (
                B,
                OVER_Y,
                "over_y = torch.softmax(affinity - 1e9 * (~y_mask).unsqueeze(1).float(), dim=2)",
            ),
            (
                B,
                "c_x = torch.bmm(over_x.transpose(1, 2), x)",
                "c_x = torch.einsum('nij,nid->njd', over_x, x)",
            ),
            (B, "c_y = torch.bmm(over_y, y)", "c_y = torch.einsum('nij,njd->nid', over_y, y)"),
        ),
        correct=True,
    ),
    # masked_pools
    Variant(
        "pools: over the feature axis instead of the positions",
        (
            (P, MAX, MAX.replace("dim=1", "dim=-1")),
            (P, MIN, MIN.replace("dim=1", "dim=-1")),
            (P, MEAN, "mean = (h * real).sum(dim=-1) / real.sum(dim=-1)"),
        ),
    ),
    Variant(
        "pools: padding not masked",
        (
            (P, MAX, "largest = h.max(dim=1).values"),
            (P, MIN, "smallest = h.min(dim=1).values"),
            (P, MEAN, "mean = h.mean(dim=1)"),
        ),
    ),
    Variant(
        "pools: the mean divided by L, padding included",
        ((P, MEAN, "mean = (h * real).sum(dim=1) / h.shape[1]"),),
    ),
    Variant(
        "pools: [max; min; mean], the wrong order",
        (
            (
                P,
                "torch.cat([largest, mean, smallest], dim=-1)",
                "torch.cat([largest, smallest, mean], dim=-1)",
            ),
        ),
    ),
    Variant(
        "pools: torch.where and amax",
        (
            (P, MAX, "largest = torch.where(real, h, -torch.inf).amax(dim=1)"),
            (P, MIN, "smallest = torch.where(real, h, torch.inf).amin(dim=1)"),
            (
                P,
                MEAN,
                "mean = torch.where(real, h, 0.0).sum(dim=1) / mask.sum(dim=1, keepdim=True)",
            ),
        ),
        correct=True,
    ),
    # SelfAttentivePooling
    Variant(
        "self pool: softmax over the batch", ((S, WEIGHTS, WEIGHTS.replace("dim=1", "dim=0")),)
    ),
    Variant(
        "self pool: padding not masked", ((S, WEIGHTS, "weights = torch.softmax(scores, dim=1)"),)
    ),
    Variant(
        "self pool: sigmoid weights (not a distribution)",
        ((S, WEIGHTS, "weights = torch.sigmoid(scores) * mask"),),
    ),
    Variant(
        "self pool: a weighted sum with einsum",
        ((S, POOLED, "pooled = torch.einsum('nl,nld->nd', weights, h)"),),
        correct=True,
    ),
    # BCN.forward
    Variant(
        "BCN: x read with c_x (and y with c_y)",
        (
            (N, INTEGRATE_X, INTEGRATE_X.replace("c_y", "c_x")),
            (N, INTEGRATE_Y, INTEGRATE_Y.replace("c_x", "c_y")),
        ),
    ),
    Variant(
        "BCN: the pools of x twice (y's left out)",
        (
            (N, "masked_pools(y_given_x, mask)", "masked_pools(x_given_y, mask)"),
            (N, "self.pool_y(y_given_x, mask)[0]", "self.pool_y(x_given_y, mask)[0]"),
        ),
    ),
    Variant(
        "BCN: the loss of the probabilities (softmax twice)",
        (
            (
                N,
                "return F.cross_entropy(logits, labels), logits",
                "return F.cross_entropy(logits.softmax(dim=-1), labels), logits",
            ),
        ),
    ),
    Variant(
        "BCN: no mask for the biattention (padding attended)",
        (
            (
                N,
                "c_x, c_y = biattention(x, y, mask, mask)",
                "c_x, c_y = biattention(x, y, torch.ones_like(mask), torch.ones_like(mask))",
            ),
        ),
    ),
    Variant(  # only the training-mode check sees it: every other check runs in eval mode
        "BCN: the classifier's dropout never applied",
        ((N, "logits = self.classifier(pooled)", "logits = self.classifier[1:](pooled)"),),
        points=0.98,
    ),
    Variant(
        "BCN: dropout applied in eval mode too",
        (
            (
                N,
                "logits = self.classifier(pooled)",
                "logits = self.classifier[1:](F.dropout(pooled, 0.1, training=True))",
            ),
        ),
        points=0.9,
    ),
    Variant(
        "BCN: the pools gathered in a loop",
        (
            (
                N,
                "        pooled = torch.cat(\n            [\n",
                "        parts = []\n"
                "        for h, pool in [(x_given_y, self.pool_x), (y_given_x, self.pool_y)]:\n"
                "            parts += [masked_pools(h, mask), pool(h, mask)[0]]\n"
                "        pooled = torch.cat(parts, dim=-1)\n"
                "        unused = torch.cat(\n            [\n",
            ),
        ),
        correct=True,
    ),
]
