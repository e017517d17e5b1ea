"""pip install --no-build-isolation . -- builds my_package._ext.my_lib from src/ with cffi.

A src layout: the package lives in src/my_package, so running the tests from
this folder imports the installed package (with its compiled module), never
the source folder.
"""
from setuptools import setup

setup(
    name="my_package",
    version="0.1.0",
    description="An example of cextend's package-shaped extension",
    package_dir={"": "src"},
    # build.py writes src/my_package/_ext/my_lib/ when setuptools runs it.
    packages=["my_package", "my_package.functions", "my_package.modules",
              "my_package._ext", "my_package._ext.my_lib"],
    install_requires=["cextend", "cffi>=1.15"],
    cffi_modules=["build.py:ffi"],
)
