"""course_lib: the shared library of assignment a3 (attention-based NMT and BERT).

It holds data, batching, the training loop, decoding, metrics and plots. It never holds the
code students write (GRU cell, attention, transformer layers, BERT heads): those live in the
notebooks under ``solutions/`` and ``assignments/``.

Modules, by domain:

- :mod:`course_lib.env`        device, seeds, quick mode, Colab detection
- :mod:`course_lib.piglatin`   Pig-Latin rules and the word-pair dataset
- :mod:`course_lib.vocab`      the 29-token character vocabulary
- :mod:`course_lib.batching`   length-bucketed and padded batches
- :mod:`course_lib.train`      the one training API (``fit``) for every model
- :mod:`course_lib.decode`     greedy batched translation
- :mod:`course_lib.metrics`    accuracy, character error rate, perplexity, MCC
- :mod:`course_lib.viz`        loss curves, attention heatmaps, confusion matrices
- :mod:`course_lib.arithmetic` the verbal arithmetic dataset
- :mod:`course_lib.bert`       loading a pretrained BERT offline, tokenising, classifier training
- :mod:`course_lib.models`     given (not student-written) encoders, decoders and attention
- :mod:`course_lib.subwords`   corpora and helpers for the byte-pair encoding of Part 5
- :mod:`course_lib.longtext`   long inputs: chains of verbal arithmetic in segments (Part 6b)
- :mod:`course_lib.cost`       time and memory against input length, log-log fits (Part 6b)
- :mod:`course_lib.remote`     the kernel's dispatcher that answers the graded tests
- :mod:`course_lib.wire`       plain data between the grader and the kernel
- :mod:`course_lib.judging`    the checks that decide a graded test, outside that kernel
"""

__version__ = "0.1.0"
