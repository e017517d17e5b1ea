"""The README's code blocks run as written (issue 16.3 and 16.9).

The blocks run in document order, each as a script with this Python, in one
scratch folder shared by the whole README (a later block sees the files an
earlier one wrote, as a reader following along would).  An HTML comment on
the line before a block, invisible on the rendered page, says what to do:

    <!-- file: PATH -->         write the block to PATH; a .py file then runs (`python PATH`)
    <!-- not run: REASON -->    leave it: shell commands, an excerpt, needs a GPU, ...
    <!-- needs torch -->        run it only where torch is installed

An unmarked ```python block runs; any other unmarked block fails
test_every_block_is_run_or_says_why_not, so nothing is skipped silently.
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.M | re.S)
_MARKER = re.compile(r"<!--\s*(file:\s*(?P<file>\S+)|not run:\s*(?P<reason>.+?)|(?P<torch>needs torch))\s*-->")


class Block:
    def __init__(self, line, lang, body, marker):
        self.line, self.lang, self.body, self.marker = line, lang, body, marker

    @property
    def action(self):
        """'file', 'skip', 'torch', 'run', or None when the README does not say."""
        if self.marker is not None:
            if self.marker.group("file"):
                return "file"
            return "skip" if self.marker.group("reason") else "torch"
        return "run" if self.lang == "python" else None

    def __repr__(self):
        return "README.md:%d (```%s)" % (self.line, self.lang)


def readme_blocks(text):
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        body = textwrap.dedent(match.group("body"))
        blocks.append(Block(line, match.group("lang"), body, marker))
    return blocks


with open(README) as _f:
    BLOCKS = readme_blocks(_f.read())


def test_the_readme_has_blocks_of_every_kind():
    """The parser sees the README as it is (a broken fence would hide blocks)."""
    actions = {block.action for block in BLOCKS}
    assert {"run", "file", "skip", "torch"} <= actions, BLOCKS
    assert sum(block.action == "run" for block in BLOCKS) >= 5


def test_every_block_is_run_or_says_why_not():
    unmarked = [block for block in BLOCKS if block.action is None]
    assert not unmarked, ("mark these with <!-- not run: why --> or <!-- file: PATH --> "
                          "(see tests/test_readme.py): %s" % unmarked)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


def _run(argv, cwd, block):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    result = subprocess.run(argv, cwd=str(cwd), capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, "%r failed:\n%s\n%s" % (block, result.stdout[-3000:], result.stderr[-3000:])


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.action in ("run", "file", "torch")], ids=repr)
def test_block_runs(block, scratch):
    if block.action == "torch":
        pytest.importorskip("torch", reason="this README block uses torch, which is not installed")
    if block.action == "file":
        path = scratch / block.marker.group("file")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.body)
        if path.suffix == ".py":
            _run([sys.executable, str(path.relative_to(scratch))], scratch, block)
        return
    script = scratch / ("readme_line_%d.py" % block.line)
    script.write_text(block.body)
    _run([sys.executable, script.name], scratch, block)


def test_make_help_lists_every_target_as_the_readme_shows():
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split()
    result = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listed = re.findall(r"^make (\S+)", result.stdout, re.M)
    assert sorted(listed) == sorted(t for t in phony if t != "help"), (listed, phony)
    shown = [b for b in BLOCKS if b.marker is not None and "make output" in (b.marker.group("reason") or "")]
    assert len(shown) == 1 and shown[0].body == result.stdout, "README's make targets block is stale"
