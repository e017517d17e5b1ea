"""Build _ext/my_lib from src/ (run: python build.py)."""
from cextend.utils.ffi import create_extension

ffi = create_extension(
    '_ext.my_lib',
    headers=['src/my_lib.h'],
    sources=['src/my_lib.c'],
    relative_to=__file__,
)

if __name__ == '__main__':
    ffi.build()
