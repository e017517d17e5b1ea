#!/usr/bin/env bash
# A newcomer's install-and-build path on one Python interpreter, in a fresh
# virtual environment, following the README's commands:
#   pip install '<this checkout>[ffi]' pytest   (ffi: setuptools, for create_extension)
#   cextend-new-op NAME && cd NAME && python build.py && python -m pytest
#   examples/script: python build.py && python -m pytest test.py
#   examples/package: python -m pip install --no-build-isolation . && python -m pytest test.py
#   python -m cextend.demo (a short run) from outside the checkout
# Usage: .ci/fresh_python.sh PYTHON   (e.g. python3.12)
set -euo pipefail
python=$1
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== $("$python" --version 2>&1): install cextend into a fresh venv"
"$python" -m venv "$work/venv"
export PATH="$work/venv/bin:$PATH"
unset PYTHONPATH VIRTUAL_ENV
pip install --quiet --disable-pip-version-check "$root[ffi]" pytest
cd "$work"      # outside the checkout: the installed copy is the one imported
python -c "import cextend, sys; print('cextend', cextend.__version__, 'on Python', sys.version.split()[0])"

echo "== scaffold, build and test a new op"
cextend-new-op ci_square
(cd ci_square && python build.py && python -m pytest -q -p no:cacheprovider)

echo "== examples/script: python build.py && python -m pytest test.py"
cp -r "$root/examples/script" script
(cd script && python build.py && python -m pytest -q -p no:cacheprovider test.py)

echo "== examples/package: python -m pip install --no-build-isolation . && python -m pytest test.py"
cp -r "$root/examples/package" package
(cd package && python -m pip install --quiet --disable-pip-version-check --no-build-isolation . \
    && python -m pytest -q -p no:cacheprovider test.py)

echo "== a short demo"
python -m cextend.demo --epochs 2 --timing-rounds 1 --min-accuracy 50 | tail -4
python -m cextend.demo --model cnn --epochs 1 --skip-checks --timing-rounds 0 --min-accuracy 50 | tail -2
