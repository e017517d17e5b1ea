"""DataLoader: batches from a dataset, in the main process.

torch's DataLoader semantics for batch_size, shuffle, sampler,
batch_sampler, drop_last, collate_fn (default: default_collate) and
generator, on map-style and iterable datasets.  Loading happens in the
calling process: num_workers > 0 is accepted for ported scripts but warns
and runs in-process (worker_init_fn, prefetch_factor and
persistent_workers then do nothing); pin_memory does nothing (no pinned
host memory here).
"""
import warnings

from cextend.utils.data._collate import default_collate, default_convert
from cextend.utils.data.dataset import IterableDataset
from cextend.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler


class DataLoader:
    """Iterate over dataset in batches.

    generator: shuffles draw from it -- None (cextend's global generator,
    seeded by cextend.manual_seed), a cextend.Generator, an int seed, or a
    numpy Generator.  A
    seeded loader repeats the same sequence of epochs; the permutations are
    not torch's.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers "
                             "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0:
            warnings.warn("cextend's DataLoader loads batches in the main process: num_workers=%d is ignored "
                          "(and so are worker_init_fn, prefetch_factor and persistent_workers)" % num_workers,
                          UserWarning, stacklevel=2)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 "shuffle={}".format(shuffle))
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 "sampler={}".format(sampler))
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 "but got batch_sampler={}".format(batch_sampler))
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and self._dataset_kind == "map":
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and self._dataset_kind == "map":
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_size is not None and self._dataset_kind == "iterable":
            BatchSampler([], batch_size, drop_last)           # the same argument checks
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._dataset_kind == "iterable" and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self._dataset_kind == "iterable":
            return self._iter_stream()
        return self._iter_map()

    def _iter_map(self):
        getitems = getattr(self.dataset, "__getitems__", None)
        for index in self._index_sampler:
            if self._auto_collation:
                data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
            else:
                data = self.dataset[index]
            yield self.collate_fn(data)

    def _iter_stream(self):
        if not self._auto_collation:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
