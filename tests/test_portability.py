"""The C sources build for a non-x86 target: only the portable kernels exist there."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.long_run           # every C source through a cross compiler; `make test-all` (CI) runs it
@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None,
                    reason="aarch64-linux-gnu-gcc not installed (Debian: gcc-aarch64-linux-gnu)")
def test_c_sources_compile_for_aarch64():
    result = subprocess.run(["make", "--no-print-directory", "cross-check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    symbols = subprocess.run(["aarch64-linux-gnu-nm", os.path.join(ROOT, "build", "cross", "avx512.o")],
                             capture_output=True, text=True).stdout
    assert "ukernel_avx512" not in symbols          # x86 kernels compile to nothing there
