"""Utilities: build your own C extensions the extension-ffi way (cextend.utils.ffi)."""
