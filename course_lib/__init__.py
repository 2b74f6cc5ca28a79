"""course_lib: the shared library of assignment a3 (attention-based NMT and BERT).

It holds data, batching, the training loop, decoding, metrics and plots. It never holds the
code students write (GRU cell, attention, transformer layers, BERT heads): those live in the
notebooks under ``solutions/`` and ``assignments/``.

Teaching modules, by domain (what the notebooks import):

- :mod:`course_lib.env`         device, seeds, quick mode, Colab detection
- :mod:`course_lib.piglatin`    Pig-Latin rules and the word-pair dataset
- :mod:`course_lib.vocab`       the 29-token character vocabulary
- :mod:`course_lib.batching`    length-bucketed and padded batches
- :mod:`course_lib.train`       the one training API (``fit``) for every model
- :mod:`course_lib.callbacks`   what ``fit`` calls after each epoch: attention snapshots
- :mod:`course_lib.decode`      greedy batched translation
- :mod:`course_lib.metrics`     accuracy, character error rate, perplexity, MCC
- :mod:`course_lib.viz`         loss curves, attention heatmaps, confusion matrices
- :mod:`course_lib.checks`      the assertions of the visible checks (and of the judges)
- :mod:`course_lib.results`     each notebook's results, saved and pasted for comparison
- :mod:`course_lib.models`      given (not student-written) encoders, decoders and attention
- :mod:`course_lib.arithmetic`  the verbal arithmetic dataset
- :mod:`course_lib.bert`        loading a pretrained BERT offline, tokenising, classifier training
- :mod:`course_lib.embeddings`  word embeddings in two dimensions (PCA, t-SNE) and their plot
- :mod:`course_lib.subwords`    corpora and helpers for the byte-pair encoding of Part 5
- :mod:`course_lib.transfer`    translation then transfer (CoVe, Part 6a): data and bookkeeping
- :mod:`course_lib.longtext`    long inputs: chains of verbal arithmetic in segments (Part 6b)
- :mod:`course_lib.cost`        time and memory against input length, log-log fits (Part 6b)

Apart, :mod:`course_lib.grading` (no notebook a student works in imports it): the kernel's
end of the grading protocol (``dispatch``), the plain data on the wire (``wire``) and the
checks that decide a graded test, outside the student's kernel (``judging``). It imports no
teaching module, and no teaching module imports it.
"""

__version__ = "0.1.0"
