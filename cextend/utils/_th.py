"""The TH shim's Python half: cdef and C glue for create_extension's
modules, the check that every TH function a source calls exists, and the
conversion of cextend Tensors to TH tensor structs and back.

A Tensor (or numpy array) passed where a header declares `THFloatTensor *`
becomes a heap TH tensor whose storage borrows the array's memory (the
struct is made by C, as TH's were, so C may retain and release it as TH
code did).  After the call the Tensor follows what C did to the struct:
a resize within the lent memory becomes a new view of it, storage that C
allocated is adopted (freed by Python, once), a view of another argument
becomes a view of that argument's array.  Every struct made for a call is
released when the call ends, including when a later argument fails to
convert.  A THError raised by the shim becomes a RuntimeError.
"""
import os
import re

import numpy as np
from cffi import FFI
from cextend.tensor import Tensor, _wrap

# name -> (storage name, C element type, dtype)
TYPES = {
    "THFloatTensor": ("THFloatStorage", "float", np.dtype(np.float32)),
    "THDoubleTensor": ("THDoubleStorage", "double", np.dtype(np.float64)),
    "THLongTensor": ("THLongStorage", "int64_t", np.dtype(np.int64)),
    "THIntTensor": ("THIntStorage", "int32_t", np.dtype(np.int32)),
    "THByteTensor": ("THByteStorage", "uint8_t", np.dtype(np.uint8)),
}
MAX_DIMS = 8
OWNS_DATA = 1

_STRUCTS = ("typedef struct {storage} {{ {real} *data; int64_t size; int refcount; int flags; }} {storage};\n"
            "typedef struct {name} {{ int64_t size[{dims}]; int64_t stride[{dims}]; int nDimension; "
            "{storage} *storage; ptrdiff_t storageOffset; int refcount; int flags; }} {name};\n"
            "{name} *cextend_th_wrap_{name}({real} *data, int64_t span, int ndim, const int64_t *size, "
            "const int64_t *stride);\n"
            "void {name}_free({name} *t);\n")
CDEF = ("char *cextend_th_error_buffer(void);\n"
        "int cextend_th_live_objects(void);\n" +
        "".join(_STRUCTS.format(name=name, storage=storage, real=real, dims=MAX_DIMS)
                for name, (storage, real, _) in TYPES.items()))
THC_CDEF = ("typedef struct THCudaStorage { float *data; int64_t size; int refcount; int flags; } THCudaStorage;\n"
            "typedef struct THCudaTensor { int64_t size[%d]; int64_t stride[%d]; int nDimension; "
            "THCudaStorage *storage; ptrdiff_t storageOffset; int refcount; int flags; } THCudaTensor;\n"
            "typedef struct THCState { int device; } THCState;\n" % (MAX_DIMS, MAX_DIMS))

_WRAP = """
{name} *cextend_th_wrap_{name}({real} *data, int64_t span, int ndim, const int64_t *size, const int64_t *stride)
{{
    /* A TH tensor (and storage) over memory Python lends for one call. */
    {name} *t = {name}_new();
    if (!t)
        return NULL;
    if (!(t->storage = {storage}_new())) {{
        {name}_free(t);
        return NULL;
    }}
    t->storage->data = data;
    t->storage->size = span;
    t->nDimension = ndim;
    for (int d = 0; d < ndim; ++d) {{
        t->size[d] = size[d];
        t->stride[d] = stride[d];
    }}
    return t;
}}
"""
SOURCE = ("#include <setjmp.h>\n"
          "#include <stdatomic.h>\n"
          "#include <TH/TH.h>\n"
          "static _Thread_local char cextend_th_error_message[CEXTEND_TH_ERROR_SIZE];\n"
          "char *cextend_th_error_buffer(void) { return cextend_th_error_message; }\n"
          "static _Thread_local jmp_buf *cextend_th_jump;\n"
          "void cextend_th_unwind(void) { if (cextend_th_jump) longjmp(*cextend_th_jump, 1); }\n"
          "static atomic_int cextend_th_live;\n"
          "void cextend_th_track(int delta) { atomic_fetch_add(&cextend_th_live, delta); }\n"
          "int cextend_th_live_objects(void) { return atomic_load(&cextend_th_live); }\n" +
          "".join(_WRAP.format(name=name, storage=storage, real=real) for name, (storage, real, _) in TYPES.items()))


_GUARDED = """
static {result_decl}
{{
    /* TH's THError jumps here (cextend_th_unwind): the call returns at once, as under TH. */
    jmp_buf here;
    jmp_buf *outer = cextend_th_jump;
    cextend_th_jump = &here;
    if (setjmp(here)) {{
        cextend_th_jump = outer;
        {failed}
    }}
    {call}
    cextend_th_jump = outer;
    {done}
}}
#define {name} cextend_th_guarded_{name}
"""


def guarded_calls(cdef, names):
    """C wrappers that give each function of `names` (declared in cdef) a setjmp point for
    THError, and #defines that make the cffi module call them instead of the function."""
    parser = FFI()
    parser.cdef(cdef)
    chunks = []
    for name in names:
        declared = parser._parser._declarations.get("function " + name)
        if declared is None or declared[0].ellipsis:
            continue                    # a variadic function cannot be forwarded; it keeps TH's old behaviour
        function = declared[0]
        params = [arg.get_c_name(" x%d" % i) for i, arg in enumerate(function.args)]
        arguments = ", ".join("x%d" % i for i in range(len(params)))
        void = function.result.get_c_name("") == "void"
        chunks.append(_GUARDED.format(
            name=name,
            result_decl=function.result.get_c_name(" cextend_th_guarded_%s(%s)" % (name, ", ".join(params) or
                                                                                     "void")),
            failed="return;" if void else "%s; memset(&zero, 0, sizeof zero); return zero;"
                   % function.result.get_c_name(" zero"),
            call="%s(%s);" % (name, arguments) if void else "%s = %s(%s);" % (
                function.result.get_c_name(" result"), name, arguments),
            done="return;" if void else "return result;"))
    return "".join(chunks)


# -- which TH functions a source may call ----------------------------------------------

def _include_dir():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")


def provided_functions(with_cuda=False):
    """Every TH function the shim defines, read from the headers themselves."""
    include = _include_dir()
    with open(os.path.join(include, "TH", "TH.h")) as f:
        th = f.read()
    names = set(re.findall(r"\b(TH\w+|cextend_th_\w+)\s*\(", th))
    for suffix in re.findall(r"\bName##_(\w+)\s*\(", th):
        names.update(name + "_" + suffix for name in TYPES)
    for suffix in re.findall(r"\bSName##_(\w+)\s*\(", th):
        names.update(storage + "_" + suffix for storage, _, _ in TYPES.values())
    if with_cuda:
        with open(os.path.join(include, "THC", "THC.h")) as f:
            names.update(re.findall(r"\b(THCuda\w+)\s*\(", f.read()))
    return names


_TH_NAME = re.compile(r"\b(TH(?:Cuda|[A-Z][a-z]+)?(?:Tensor|Storage)(?:_\w+)?)\b")


def _strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def check_sources(paths, with_cuda=False):
    """Raise, naming them, if the sources use TH types or functions the shim
    does not provide: a build-time error instead of a failed import."""
    functions = provided_functions(with_cuda)
    types = set(TYPES) | {storage for storage, _, _ in TYPES.values()}
    if with_cuda:
        types |= {"THCudaTensor", "THCudaStorage"}
    missing = {}
    for path in paths:
        with open(path) as f:
            text = _strip_comments_and_strings(f.read())
        for line_number, line in enumerate(text.splitlines(), 1):
            for match in _TH_NAME.finditer(line):
                word = match.group(1)
                known = word in functions if "_" in word else word in types
                if not known:
                    missing.setdefault(word, "%s:%d" % (os.path.basename(path), line_number))
    if missing:
        raise RuntimeError(
            "cextend's TH shim does not provide %s (used at %s). It provides, for the TH "
            "{Float,Double,Long,Int,Byte}Tensor types: %s; see cextend/include/TH/TH.h." % (
                ", ".join(sorted(missing)), ", ".join(missing[w] for w in sorted(missing)),
                ", ".join(sorted({f.split("_", 1)[1] for f in functions
                                  if f.startswith("THFloatTensor_")}))))


# -- Tensors <-> TH structs -------------------------------------------------------------

_FREE = None


def _libc_free():
    global _FREE
    if _FREE is None:
        libc_ffi = FFI()
        libc_ffi.cdef("void free(void *);")
        libc = libc_ffi.dlopen(None)
        _FREE = lambda address: libc.free(libc_ffi.cast("void *", address))  # noqa: E731
    return _FREE


class CallState:
    """The TH structs made for one call, what memory they borrow, and the
    storages whose C-allocated data Python adopted during the sync."""

    def __init__(self, ffi, lib):
        self.ffi, self.lib = ffi, lib
        self.arguments = []          # ThArgument, in order
        self.lent = {}               # address of the first element -> (array, span in elements)
        self.adopted = {}            # storage address -> numpy array over the adopted data

    def release(self):
        """Drop this call's references to its structs (C frees what is unshared)
        and to the arrays: no cycle keeps adopted memory alive until a GC."""
        for argument in self.arguments:
            argument.release()
        self.arguments = []
        self.lent.clear()
        self.adopted.clear()


class ThArgument:
    def __init__(self, state, plan, value, position, function):
        self.state, self.value, self.position, self.function = state, value, position, function
        self.what = "argument %d" % position
        _, dtype, self.type_name, const = plan
        self.const = const
        array = value._data if isinstance(value, Tensor) else value
        if array.dtype != dtype:
            raise TypeError("%s(): argument %d must be a %s tensor (a %s *), got %s"
                            % (function, position, dtype.name, self.type_name, array.dtype))
        if array.ndim > MAX_DIMS:
            raise ValueError("%s(): argument %d has %d dimensions; TH tensors have at most %d"
                             % (function, position, array.ndim, MAX_DIMS))
        itemsize = array.itemsize
        if array.size and (not array.flags.aligned or any(s < 0 or s % itemsize for s in array.strides)):
            raise ValueError("%s(): argument %d: TH tensors need aligned data and non-negative strides; "
                             "call .contiguous() first" % (function, position))
        if not const and array.size and not array.flags.writeable:
            raise ValueError("%s(): argument %d is a read-only array passed as a (non-const) %s *"
                             % (function, position, self.type_name))
        self.array = array
        ffi, lib = state.ffi, state.lib
        real = TYPES[self.type_name][1]
        if array.size == 0:         # TH's empty tensor: no dimensions, no data
            shape, strides, span, data = (), (), 0, ffi.NULL
        else:
            shape = array.shape if array.ndim else (1,)
            strides = tuple(s // itemsize for s in array.strides) if array.ndim else (1,)
            span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
            data = ffi.cast(real + " *", array.ctypes.data)
            state.lent.setdefault(int(ffi.cast("uintptr_t", data)), (array, span))
        self.passed = (shape, strides)
        self.struct = getattr(lib, "cextend_th_wrap_" + self.type_name)(data, span, len(shape), list(shape) or [0],
                                                                        list(strides) or [0])
        if self.struct == ffi.NULL:
            raise MemoryError("%s(): cannot allocate a TH tensor for argument %d" % (function, position))
        self.storage = self.struct.storage
        self.data = data

    def release(self):
        if self.struct is not None:
            getattr(self.state.lib, self.type_name + "_free")(self.struct)
            self.struct = None

    def sync_back(self):
        """Make the Tensor what C made of the struct (see the module docstring)."""
        t = self.struct
        ndim = t.nDimension
        shape = tuple(t.size[d] for d in range(ndim))
        strides = tuple(t.stride[d] for d in range(ndim))
        storage = t.storage
        unchanged = (storage == self.storage and storage.data == self.data and t.storageOffset == 0 and
                     not storage.flags & OWNS_DATA and (shape, strides) == self.passed)
        if unchanged:
            # Writes through the data are not tracked (headers of the era rarely
            # say const, and bumping every input would fail saved tensors).
            return
        new = self._view(shape, strides)
        if not isinstance(self.value, Tensor):
            raise RuntimeError("%s(): argument %d was resized by the C code; pass a cextend Tensor (e.g. "
                               "x.new()) to receive resized results" % (self.function, self.position))
        self.value._data = new
        self.value._bump_version()

    def _view(self, shape, strides):
        """A numpy array of the struct's geometry over the memory it now uses."""
        ffi, t, dtype = self.state.ffi, self.struct, self.array.dtype
        count = int(np.prod(shape)) if shape else 0
        if count == 0 or t.storage == ffi.NULL or t.storage.data == ffi.NULL:
            return np.empty(shape if shape else (0,), dtype)
        storage = t.storage
        reach = int(t.storageOffset) + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        if int(t.storageOffset) < 0 or min(strides) < 0 or reach > storage.size:
            raise RuntimeError("%s(): %s: the C code left a TH tensor outside its storage"
                               % (self.function, self.what))
        adopted = self.state.adopted.get(int(ffi.cast("uintptr_t", storage)))
        if adopted is not None:
            base = adopted
        elif storage.flags & OWNS_DATA:
            base = self._adopt(storage)
        else:
            lent = self.state.lent.get(int(ffi.cast("uintptr_t", storage.data)))
            if lent is None or lent[0].dtype != dtype:
                raise RuntimeError("%s(): %s: the C code pointed a TH tensor at memory cextend "
                                   "did not lend it" % (self.function, self.what))
            array, span = lent
            base = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(dtype.itemsize,))
        base = base[int(t.storageOffset):]
        return np.lib.stride_tricks.as_strided(base, shape=shape, strides=[s * dtype.itemsize for s in strides])

    def _adopt(self, storage):
        """Python takes C-allocated storage data over, once per storage."""
        ffi, dtype = self.state.ffi, self.array.dtype
        key = int(ffi.cast("uintptr_t", storage))
        if key not in self.state.adopted:
            free = _libc_free()
            address = int(ffi.cast("uintptr_t", storage.data))
            owner = ffi.gc(ffi.cast("char *", storage.data), lambda _, address=address: free(address))
            storage.flags &= ~OWNS_DATA             # freed by Python from now on
            self.state.adopted[key] = np.frombuffer(ffi.buffer(owner, int(storage.size) * dtype.itemsize),
                                                    dtype=dtype)
        return self.state.adopted[key]


def returned_tensor(state, type_name, struct, function):
    """The Tensor a C function returned as a TH tensor pointer (as torch.utils.ffi gave back).

    Under TH the caller owned the returned reference: the Tensor takes over
    (or views) the memory, and the reference is released."""
    result = ThArgument.__new__(ThArgument)
    result.state, result.struct, result.function, result.what = state, struct, function, "the returned tensor"
    result.type_name = type_name
    result.array = np.empty(0, TYPES[type_name][2])
    try:
        ndim = struct.nDimension
        array = result._view(tuple(struct.size[d] for d in range(ndim)), tuple(struct.stride[d] for d in range(ndim)))
    finally:
        getattr(state.lib, type_name + "_free")(struct)
    return _wrap(array)


def take_error(ffi, lib):
    """The pending THError message of this thread ("" if none), cleared."""
    buffer = lib.cextend_th_error_buffer()
    message = ffi.string(buffer).decode("utf-8", "replace")
    buffer[0] = b"\0"
    return message
