"""setuptools entry point: the cffi module is built from ffi_build.py.

Metadata lives in pyproject.toml; this file only wires in cffi_modules,
which pyproject.toml cannot express.
"""
from setuptools import setup

setup(cffi_modules=["ffi_build.py:ffibuilder"])
