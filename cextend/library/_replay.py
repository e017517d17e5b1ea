"""Replay recorded C calls in a process of their own: run as a script, not imported.

    LD_PRELOAD=<libasan> python _replay.py JOB.pickle      (mode "asan")
    python _replay.py JOB.pickle                           (modes "guard-end", "guard-start")

JOB (written by cextend.library._sanitize) names the libraries and the
calls: symbol plus arguments, each a buffer's bytes, a reference to an
earlier argument's buffer, NULL, or a scalar.  Before each call a line
`cextend-replay: call N` goes to stderr, so the parent can say which call
a report came from.

Under ASan every buffer is malloc'ed at exactly its recorded size, so a
write one element past it lands in ASan's red zone.  Without the
sanitizer's runtime, every buffer gets pages of its own with an
inaccessible page on each side, placed against the page after it
("guard-end": any access past the end faults) or the page before it
("guard-start": any access before the start faults); a fault is reported
as `cextend-fault:` with the address, the buffer it missed and the
instruction's library and offset, for addr2line.

Only the standard library and cffi are imported: the process stays small
and carries no cextend state.
"""
import importlib.util
import mmap
import os
import pickle
import platform
import sys

from cffi import FFI

_LIBC = """
void *malloc(size_t size); void free(void *p);
void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset);
int mprotect(void *addr, size_t len, int prot);
typedef struct { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; } Dl_info;
int dladdr(const void *addr, Dl_info *info);
struct cextend_sigaction { void (*handler)(int, void *, void *); unsigned long mask[16]; unsigned int flags;
                           void (*restorer)(void); };
int sigaction(int signum, const struct cextend_sigaction *act, void *oldact);
"""
_PROT_NONE, _PROT_READ_WRITE = 0, 3
_MAP_PRIVATE_ANONYMOUS = 0x22
_SA_SIGINFO, _SA_RESETHAND = 4, 0x80000000
_SIGBUS, _SIGSEGV = 7, 11
_live_buffers = []          # (address, nbytes, argument number, description) of the call running now


class _GuardedHeap:
    """Buffers with an inaccessible page on each side (modes guard-end and guard-start)."""

    def __init__(self, ffi, libc, at_end):
        self.ffi, self.libc, self.at_end = ffi, libc, at_end
        self.page = mmap.PAGESIZE

    def allocate(self, nbytes):
        pages = (nbytes + self.page - 1) // self.page
        length = (pages + 2) * self.page
        base = self.libc.mmap(self.ffi.NULL, length, _PROT_READ_WRITE, _MAP_PRIVATE_ANONYMOUS, -1, 0)
        start = int(self.ffi.cast("uintptr_t", base))
        if start == 2 ** 64 - 1:
            raise MemoryError("mmap of %d bytes failed" % length)
        self.libc.mprotect(base, self.page, _PROT_NONE)
        self.libc.mprotect(self.ffi.cast("char *", base) + (pages + 1) * self.page, self.page, _PROT_NONE)
        first = start + self.page
        return first + pages * self.page - nbytes if self.at_end else first

    def release(self, address):
        pass                # the process is short-lived; unmapping buys nothing


class _Malloc:
    def __init__(self, ffi, libc):
        self.ffi, self.libc = ffi, libc

    def allocate(self, nbytes):
        return int(self.ffi.cast("uintptr_t", self.libc.malloc(nbytes)))

    def release(self, address):
        self.libc.free(self.ffi.cast("void *", address))


def _install_fault_report(ffi, libc):
    """On SIGSEGV/SIGBUS: one `cextend-fault:` line (address, nearest buffer, instruction), then exit."""
    @ffi.callback("void(int, void *, void *)")
    def on_fault(signum, info, context):
        address = ffi.cast("uintptr_t *", info)[2]                   # siginfo_t.si_addr (x86-64)
        gregs = ffi.cast("unsigned long long *", context) + 5           # ucontext_t.uc_mcontext.gregs
        pc, write = gregs[16], gregs[19] & 2                            # REG_RIP; REG_ERR's write bit
        found = ffi.new("Dl_info *")
        where = "unknown code"
        if libc.dladdr(ffi.cast("void *", pc), found) and found.dli_fname != ffi.NULL:
            where = "%s+0x%x" % (ffi.string(found.dli_fname).decode("utf-8", "replace"),
                                 pc - int(ffi.cast("uintptr_t", found.dli_fbase)))
        sys.stderr.write("cextend-fault: %s %s at address 0x%x (%s) by %s\n" % (
            "SIGSEGV" if signum == _SIGSEGV else "SIGBUS", "WRITE" if write else "READ", address,
            _nearest_buffer(address), where))
        sys.stderr.flush()
        os._exit(3)

    action = ffi.new("struct cextend_sigaction *")
    action.handler = on_fault
    action.flags = _SA_SIGINFO | _SA_RESETHAND
    for number in (_SIGSEGV, _SIGBUS):
        libc.sigaction(number, action, ffi.NULL)
    return on_fault         # the caller keeps it alive


def _nearest_buffer(address):
    best = None
    for start, nbytes, position, description in _live_buffers:
        if address >= start + nbytes:
            distance = address - (start + nbytes)
            text = "just past the end" if distance == 0 else "%d bytes past the end" % distance
        elif address < start:
            distance = start - address
            text = "%d bytes before the start" % distance
        else:
            return "inside argument %d (%s)" % (position, description)
        if best is None or distance < best[0]:
            best = (distance, "%s of argument %d (%s)" % (text, position, description))
    return best[1] if best else "no buffer near it"


def main(job_path):
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    libc_ffi = FFI()
    libc_ffi.cdef(_LIBC)
    libc = libc_ffi.dlopen(None)            # under ASan, malloc is ASan's: the runtime is preloaded
    mode = job.get("mode", "asan")
    if mode == "asan":
        heap = _Malloc(libc_ffi, libc)
    else:
        heap = _GuardedHeap(libc_ffi, libc, at_end=(mode == "guard-end"))
        if sys.platform.startswith("linux") and platform.machine() == "x86_64":   # the struct offsets read
            handler = _install_fault_report(libc_ffi, libc)     # noqa: F841 (kept alive until exit)
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
        del _live_buffers[:]
        for position, arg in enumerate(args, 1):
            kind = arg[0]
            if kind == "buffer":
                _, item, data, nbytes = arg
                address = heap.allocate(nbytes)
                libc_ffi.memmove(libc_ffi.cast("void *", address), data, nbytes)
                owned.append(address)
                _live_buffers.append((address, nbytes, position, "%s *, %d bytes" % (item, nbytes)))
                c_args.append(module.ffi.cast(item + " *", address))
            elif kind == "same":
                c_args.append(c_args[arg[1]])
            elif kind == "null":
                c_args.append(module.ffi.NULL)
            else:
                c_args.append(arg[1])
        getattr(module.lib, symbol)(*c_args)
        for address in owned:
            heap.release(address)
    sys.stderr.write("cextend-replay: %d calls replayed cleanly\n" % total)


if __name__ == "__main__":
    main(sys.argv[1])
