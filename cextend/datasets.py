"""Small real datasets shipped with cextend (see cextend/data/README.md)."""
import gzip
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def load_digits(dtype=np.float32):
    """The UCI 8x8 handwritten digits: (images, labels).

    images: (1797, 64) in `dtype`, pixel values scaled from 0..16 to 0..1;
    labels: (1797,) int64 in 0..9.  CC BY 4.0, Alpaydin & Kaynak (1998).
    """
    with gzip.open(os.path.join(_DATA, "digits.csv.gz"), "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    images = (table[:, :64] / 16.0).astype(dtype)
    labels = table[:, 64].astype(np.int64)
    return images, labels


def train_test_split(n, test_fraction, seed):
    """Index arrays (train, test): a seeded, class-agnostic shuffle split."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * (1 - test_fraction)))
    return order[:cut], order[cut:]
