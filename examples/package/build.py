"""The cffi builder setup.py uses (cffi_modules=["build.py:ffi"]).

With package=True, create_extension writes the Python wrapper into the
package (src/my_package/_ext/my_lib/, found through the src layout) and
setuptools compiles the C into it.
"""
from cextend.utils.ffi import create_extension

ffi = create_extension(
    'my_package._ext.my_lib',
    package=True,
    headers=['src/my_lib.h'],
    sources=['src/my_lib.c'],
    relative_to=__file__,
)

if __name__ == '__main__':
    ffi.build()
