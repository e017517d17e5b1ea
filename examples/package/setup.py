"""pip install . -- builds my_package._ext.my_lib from src/ with cffi."""
from setuptools import setup

setup(
    name="my_package",
    version="0.1.0",
    description="An example of cextend's package-shaped extension",
    # build.py creates my_package/_ext/my_lib/ when setuptools imports it.
    packages=["my_package", "my_package.functions", "my_package.modules",
              "my_package._ext", "my_package._ext.my_lib"],
    setup_requires=["cffi>=1.15"],
    install_requires=["cextend", "cffi>=1.15"],
    cffi_modules=["build.py:ffi"],
)
