"""Samplers: the order in which a DataLoader visits a map-style dataset."""
import numbers

from cextend.utils.data._rng import numpy_generator, sampler_stream


class Sampler:
    """Base class: __iter__ yields dataset indices (and __len__ gives how many, when known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch (or num_samples draws with replacement).

    generator: None draws each epoch's permutation from cextend's global
    generator (reproducible after cextend.manual_seed), a cextend.Generator
    from that generator (advancing it, as torch's); an int seed or a numpy
    Generator gives this sampler its own stream (a new permutation each
    epoch, the same sequence of epochs for the same seed).
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        self._rng = sampler_stream(generator)
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement={}".format(self.replacement))
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got num_samples={}"
                             .format(self.num_samples))

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = self._rng if self._rng is not None else numpy_generator(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator
        self._rng = sampler_stream(generator)

    def __iter__(self):
        rng = self._rng if self._rng is not None else numpy_generator(self.generator)
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got batch_size={}".format(batch_size))
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got drop_last={}".format(drop_last))
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

