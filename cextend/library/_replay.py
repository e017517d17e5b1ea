"""Replay recorded C calls against sanitizer builds: run as a script, not imported.

    LD_PRELOAD=<libasan> python _replay.py JOB.pickle

JOB (written by cextend.library._sanitize) names the sanitizer-built
libraries and the calls: symbol plus arguments, each a buffer's bytes, a
reference to an earlier argument's buffer, NULL, or a scalar.  Every buffer
is malloc'ed at exactly its recorded size (so a write one element past it
lands in ASan's red zone) and filled with the recorded bytes.  Before each
call a line `cextend-replay: call N` goes to stderr, so the parent can say
which call a sanitizer report came from.  Only the standard library and
cffi are imported: the process stays small and carries no cextend state.
"""
import importlib.util
import pickle
import sys

from cffi import FFI


def main(job_path):
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    libc_ffi = FFI()
    libc_ffi.cdef("void *malloc(size_t size); void free(void *p);")
    libc = libc_ffi.dlopen(None)            # malloc is ASan's: the runtime is preloaded
    modules = {}
    for key, (module_name, library) in job["libraries"].items():
        spec = importlib.util.spec_from_file_location(module_name, library)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[key] = module
    total = len(job["calls"])
    for number, (key, symbol, args, description) in enumerate(job["calls"], 1):
        sys.stderr.write("cextend-replay: call %d of %d: %s\n" % (number, total, description))
        sys.stderr.flush()
        module = modules[key]
        c_args, owned = [], []
        for arg in args:
            kind = arg[0]
            if kind == "buffer":
                _, item, data, nbytes = arg
                memory = libc.malloc(nbytes)
                libc_ffi.memmove(memory, data, nbytes)
                owned.append(memory)
                address = int(libc_ffi.cast("uintptr_t", memory))
                c_args.append(module.ffi.cast(item + " *", address))
            elif kind == "same":
                c_args.append(c_args[arg[1]])
            elif kind == "null":
                c_args.append(module.ffi.NULL)
            else:
                c_args.append(arg[1])
        getattr(module.lib, symbol)(*c_args)
        for memory in owned:
            libc.free(memory)
    sys.stderr.write("cextend-replay: %d calls replayed cleanly\n" % total)


if __name__ == "__main__":
    main(sys.argv[1])
