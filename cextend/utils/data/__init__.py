"""Datasets and batch loading with torch.utils.data's interface (main process only)."""
from cextend.utils.data._collate import default_collate, default_convert
from cextend.utils.data.dataloader import DataLoader
from cextend.utils.data.dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from cextend.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                                        SubsetRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "DataLoader",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler",
           "default_collate", "default_convert"]
