"""The fuzz harness (tests/fuzz_api.py) in a subprocess: a crash is a signal
there and a failure here; every error must be a documented exception."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def test_public_api_survives_arbitrary_arguments():
    examples = os.environ.get("CEXTEND_FUZZ_EXAMPLES", "300")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_api.py"), "--examples", examples],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, (
        "fuzz run failed with %s\n%s\n%s" % (
            "signal %d" % -result.returncode if result.returncode < 0 else "exit %d" % result.returncode,
            result.stdout[-4000:], result.stderr[-4000:]))
    assert "0 crashes, 0 undocumented exceptions" in result.stdout
