"""Example package: extension-ffi's add op as a C extension built by setup.py."""
from my_package.modules.add import MyAddModule  # noqa: F401
