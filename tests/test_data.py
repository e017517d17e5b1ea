"""cextend.utils.data: datasets, samplers, DataLoader batching, default
collate against torch 2.13's default_collate, random_split lengths as
torch's, seeded shuffles that are reproducible (not torch's permutation),
and torch's errors."""
import warnings
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import cextend as cx
from cextend.utils import data
from cextend.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                                SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, default_collate,
                                random_split)
from rng_isolation import keep_global_rng

try:
    import torch
    import torch.utils.data as tdata
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch 2.13 not installed: comparison with torch skipped")
pytestmark = pytest.mark.usefixtures(keep_global_rng.__name__)   # no global RNG state leaks out

Point = namedtuple("Point", ["x", "y"])


def dataset(n=23):
    features = cx.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    labels = cx.tensor(np.arange(n) % 4)
    return TensorDataset(features, labels)


def rows(batches):
    return [int(i) for b in batches for i in b[1].numpy()] if batches else []


def first_column(batches):
    return [int(v) // 3 for b in batches for v in b[0][:, 0].numpy()]


@pytest.mark.parametrize("n,batch_size,drop_last", [(23, 4, False), (23, 4, True), (24, 4, True), (1, 5, False),
                                                    (0, 3, False), (7, 7, False), (17, 1, True)])
def test_sequential_batches(n, batch_size, drop_last):
    loader = DataLoader(dataset(n), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    expected_count = n // batch_size if drop_last else -(-n // batch_size)
    assert len(batches) == len(loader) == expected_count
    assert first_column(batches) == list(range(expected_count * batch_size if drop_last else n))
    for b in batches[:-1]:
        assert b[0].shape == (batch_size, 3) and b[0].dtype == cx.float32 and b[1].dtype == cx.int64


def test_seeded_shuffles_are_reproducible_and_each_epoch_is_a_permutation():
    def epochs(generator, count=3):
        loader = DataLoader(dataset(), batch_size=5, shuffle=True, generator=generator)
        return [first_column(list(loader)) for _ in range(count)]

    a, b = epochs(7), epochs(7)
    assert a == b
    assert all(sorted(e) == list(range(23)) for e in a)
    assert a[0] != a[1] and a[0] != list(range(23))
    assert epochs(np.random.default_rng(3)) == epochs(np.random.default_rng(3))
    assert epochs(8) != a
    cx.manual_seed(11)
    c = epochs(None)
    cx.manual_seed(11)
    assert epochs(None) == c
    with pytest.raises(TypeError, match="generator must be None, an int seed or a numpy.random.Generator"):
        list(DataLoader(dataset(), shuffle=True, generator="seed"))


def test_shuffle_with_drop_last_keeps_full_batches_only():
    batches = list(DataLoader(dataset(), batch_size=5, shuffle=True, drop_last=True, generator=1))
    assert len(batches) == 4 and all(b[0].shape[0] == 5 for b in batches)
    assert len(set(first_column(batches))) == 20


def test_samplers_and_batch_samplers():
    ds = dataset(10)
    loader = DataLoader(ds, batch_size=3, sampler=list(reversed(range(10))))
    assert first_column(list(loader)) == list(reversed(range(10)))
    loader = DataLoader(ds, batch_sampler=[[0, 1], [5], [9, 8, 7]])
    assert [b[0].shape[0] for b in loader] == [2, 1, 3] and first_column(list(loader)) == [0, 1, 5, 9, 8, 7]
    assert list(SequentialSampler(ds)) == list(range(10))
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    sampler = RandomSampler(ds, replacement=True, num_samples=25, generator=0)
    drawn = list(sampler)
    assert len(drawn) == len(sampler) == 25 and all(0 <= i < 10 for i in drawn)
    longer = list(RandomSampler(ds, num_samples=25, generator=0))
    assert len(longer) == 25 and sorted(longer[:10]) == list(range(10)) and sorted(longer[10:20]) == list(range(10))
    subset = list(SubsetRandomSampler([3, 5, 7], generator=0))
    assert sorted(subset) == [3, 5, 7]


def test_batch_size_none_passes_samples_through_converted():
    samples = list(DataLoader([np.arange(3), (np.float64(1.5), "a")], batch_size=None))
    assert isinstance(samples[0], cx.Tensor) and samples[0].dtype == cx.int64
    assert isinstance(samples[1], list) and isinstance(samples[1][0], cx.Tensor) and samples[1][1] == "a"


def test_iterable_datasets_batch_in_order():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    batches = list(DataLoader(Stream(), batch_size=4))
    assert [b.numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(DataLoader(Stream(), batch_size=4)) == 3
    assert len(list(DataLoader(Stream(), batch_size=4, drop_last=True))) == 2
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_dataset_getitems_is_used_for_a_batch():
    class Batched(Dataset):
        calls = 0

        def __getitem__(self, i):
            raise AssertionError("per-item access not expected")

        def __getitems__(self, indices):
            Batched.calls += 1
            return [float(i) for i in indices]

        def __len__(self):
            return 6

    batches = list(DataLoader(Batched(), batch_size=4))
    assert Batched.calls == 2 and batches[0].dtype == cx.float64 and batches[1].numpy().tolist() == [4.0, 5.0]


def test_workers_are_run_in_process_with_a_warning():
    with pytest.warns(UserWarning, match="num_workers=2 is ignored"):
        loader = DataLoader(dataset(), batch_size=5, num_workers=2)
    assert first_column(list(loader)) == list(range(23))
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(dataset(), num_workers=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(dataset(), pin_memory=True)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
                                    dict(batch_sampler=[[0]], shuffle=True), dict(batch_sampler=[[0]], drop_last=True),
                                    dict(batch_size=None, drop_last=True), dict(timeout=-1),
                                    dict(prefetch_factor=2), dict(persistent_workers=True), dict(batch_size=0),
                                    dict(batch_size=-3), dict(drop_last=1)])
def test_loader_argument_errors_equal_torch(kwargs):
    with pytest.raises(Exception) as theirs:
        tdata.DataLoader(tdata.TensorDataset(torch.zeros(4)), **kwargs)
    with pytest.raises(Exception) as ours:
        DataLoader(TensorDataset(cx.zeros(4)), **kwargs)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(replacement=1), dict(num_samples=0), dict(num_samples=2.5)])
def test_random_sampler_errors_equal_torch(kwargs):
    with pytest.raises(Exception) as theirs:
        tdata.RandomSampler(range(4), **kwargs)
    with pytest.raises(Exception) as ours:
        RandomSampler(range(4), **kwargs)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def to_torch(value):
    if isinstance(value, cx.Tensor):
        return torch.from_numpy(value.numpy().copy())
    if isinstance(value, Point):
        return Point(*(to_torch(v) for v in value))
    if isinstance(value, OrderedDict):
        return OrderedDict((k, to_torch(v)) for k, v in value.items())
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(v) for v in value)
    return value


def same_structure(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, cx.Tensor)
        assert ours.dtype.name == str(theirs.dtype).split(".")[1] and tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        return
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for k in theirs:
            same_structure(ours[k], theirs[k])
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same_structure(a, b)
    else:
        assert ours == theirs


SAMPLE_BATCHES = {
    "tensors": [cx.tensor([1.0, 2.0]), cx.tensor([3.0, 4.0])],
    "scalars": [1, 2, 3],
    "floats": [0.5, 1.5],
    "bools": [True, False],
    "strings": ["a", "b"],
    "numpy": [np.arange(3), np.arange(3, 6)],
    "numpy scalars": [np.float32(1.5), np.float32(2.5)],
    "tuples": [(cx.ones(2), 1, "x"), (cx.zeros(2), 2, "y")],
    "lists": [[1, 2.0], [3, 4.0]],
    "dicts": [{"a": cx.ones(1), "b": [1, 2]}, {"a": cx.zeros(1), "b": [3, 4]}],
    "ordered": [OrderedDict([("z", 1), ("a", 2.0)]), OrderedDict([("z", 3), ("a", 4.0)])],
    "namedtuples": [Point(1.0, cx.ones(2)), Point(2.0, cx.zeros(2))],
    "int tensors": [cx.tensor([1, 2]), cx.tensor([3, 4])],
    "0-d": [cx.tensor(1.0), cx.tensor(2.0)],
}


@needs_torch
@pytest.mark.parametrize("name", list(SAMPLE_BATCHES))
def test_default_collate_equals_torch(name):
    batch = SAMPLE_BATCHES[name]
    same_structure(default_collate(batch), tdata.default_collate(to_torch(batch)))


@needs_torch
@pytest.mark.parametrize("batch", [[object(), object()], [[1, 2], [3]], [np.array(["a"]), np.array(["b"])]],
                         ids=["object", "ragged", "numpy-strings"])
def test_default_collate_errors_equal_torch(batch):
    with pytest.raises(Exception) as theirs:
        tdata.default_collate(batch)
    with pytest.raises(Exception) as ours:
        default_collate(batch)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.3, 0.7]), (11, [0.5, 0.5]), (7, [0.1, 0.1, 0.8]),
                                       (5, [1.0]), (3, [0.25, 0.25, 0.25, 0.25]), (0, [0, 0])])
def test_random_split_lengths_equal_torch(n, lengths):
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = tdata.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = random_split(range(n), lengths, generator=0)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]
    merged = sorted(i for s in ours for i in (s[j] for j in range(len(s))))
    assert merged == list(range(n))


@needs_torch
@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [-0.5, 1.5], [1.5, -0.5]])
def test_random_split_errors_equal_torch(lengths):
    with pytest.raises(Exception) as theirs:
        tdata.random_split(range(10), lengths)
    with pytest.raises(Exception) as ours:
        random_split(range(10), lengths)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_random_split_is_reproducible_under_a_seed():
    a = [list(s.indices) for s in random_split(range(50), [0.2, 0.3, 0.5], generator=5)]
    b = [list(s.indices) for s in random_split(range(50), [0.2, 0.3, 0.5], generator=np.random.default_rng(5))]
    assert a == b and [len(x) for x in a] == [10, 15, 25]


def test_subset_concat_and_tensor_dataset():
    ds = dataset(10)
    sub = Subset(ds, [9, 2, 4])
    assert len(sub) == 3 and int(sub[0][1].item()) == 9 % 4
    assert ds[[1, 2]][0][:, 0].numpy().tolist() == [3.0, 6.0]
    assert Subset(ds, [9, 2, 4])[[0, 2]][1].numpy().tolist() == [9 % 4, 4 % 4]
    cat = ds + dataset(5)
    assert isinstance(cat, ConcatDataset) and len(cat) == 15
    assert int(cat[12][0][0].item()) == 6 and int(cat[-1][0][0].item()) == 12
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-16]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(cx.zeros(3), cx.zeros(4))
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        Dataset()[0]
    assert data.DataLoader is DataLoader and cx.utils.data is data


def test_a_training_loop_with_everything():
    cx.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    train, valid = random_split(TensorDataset(cx.tensor(x), cx.tensor(y)), [0.75, 0.25], generator=1)
    model = cx.nn.Linear(3, 1, dtype=cx.float64)
    opt = cx.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for epoch in range(30):
        for xb, yb in DataLoader(train, batch_size=8, shuffle=True, generator=epoch):
            opt.zero_grad()
            ((model(xb) - yb) ** 2).mean().backward()
            opt.step()
    losses = [((model(xb) - yb) ** 2).mean().item() for xb, yb in DataLoader(valid, batch_size=100)]
    assert losses[0] < 1e-6
