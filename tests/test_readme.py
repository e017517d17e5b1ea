"""README.md and docs/*.md: their code blocks run as written, their links
resolve, and the README's table of contents reaches every page of docs/.

Each document's blocks run in document order, each as a script with this
Python, in a scratch folder of that document's own (a later block sees the
files an earlier one wrote, as a reader following along would; no document
sees another's).  An HTML comment on the line before a block, invisible on
the rendered page, says what to do:

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
import unicodedata

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
DOCUMENTS = ["README.md"] + sorted("docs/" + name for name in os.listdir(DOCS) if name.endswith(".md"))

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.M | re.S)
_MARKER = re.compile(r"<!--\s*(file:\s*(?P<file>\S+)|not run:\s*(?P<reason>.+?)|(?P<torch>needs torch))\s*-->")


class Block:
    def __init__(self, document, line, lang, body, marker):
        self.document, self.line, self.lang, self.body, self.marker = document, line, lang, body, marker

    @property
    def action(self):
        """'file', 'skip', 'torch', 'run', or None when the document does not say."""
        if self.marker is not None:
            if self.marker.group("file"):
                return "file"
            return "skip" if self.marker.group("reason") else "torch"
        return "run" if self.lang == "python" else None

    def __repr__(self):
        return "%s:%d (```%s)" % (self.document, self.line, self.lang)


def read(document):
    with open(os.path.join(ROOT, document)) as f:
        return f.read()


def code_blocks(document, text):
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        body = textwrap.dedent(match.group("body"))
        blocks.append(Block(document, line, match.group("lang"), body, marker))
    return blocks


BLOCKS = {document: code_blocks(document, read(document)) for document in DOCUMENTS}
ALL_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks]


def test_the_documents_have_blocks_of_every_kind():
    """The parser sees the documents as they are (a broken fence would hide blocks)."""
    assert len(DOCUMENTS) >= 8, DOCUMENTS
    assert {"run", "file", "skip", "torch"} <= {block.action for block in ALL_BLOCKS}, ALL_BLOCKS
    assert sum(block.action == "run" for block in BLOCKS["README.md"]) >= 3, BLOCKS["README.md"]
    for document, blocks in BLOCKS.items():
        assert any(block.action in ("run", "file") for block in blocks), "%s runs no code" % document


def test_every_block_is_run_or_says_why_not():
    unmarked = [block for block in ALL_BLOCKS if block.action is None]
    assert not unmarked, ("mark these with <!-- not run: why --> or <!-- file: PATH --> "
                          "(see tests/test_readme.py): %s" % unmarked)


def _torch_installed():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _run(argv, cwd, block):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    result = subprocess.run(argv, cwd=str(cwd), capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, "%r failed:\n%s\n%s" % (block, result.stdout[-3000:], result.stderr[-3000:])


@pytest.mark.parametrize("document", DOCUMENTS)
def test_blocks_run(document, tmp_path):
    """Every block of one document, in order, in the document's scratch folder."""
    torch = _torch_installed()
    not_run = []
    for block in BLOCKS[document]:
        if block.action == "skip" or (block.action == "torch" and not torch):
            if block.action == "torch":
                not_run.append(block)
            continue
        if block.action == "file":
            path = tmp_path / block.marker.group("file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body)
            if path.suffix == ".py":
                _run([sys.executable, str(path.relative_to(tmp_path))], tmp_path, block)
            continue
        script = tmp_path / ("block_line_%d.py" % block.line)
        script.write_text(block.body)
        _run([sys.executable, script.name], tmp_path, block)
    if not_run:
        pytest.skip("%d block(s) need torch, which is not installed (the others ran): %s" % (len(not_run), not_run))


# -- links ------------------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(text):
    """The text outside code blocks and inline code, where links live."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def links(text):
    return _LINK.findall(prose(text))


def anchors(text):
    """GitHub's anchors for a page's headings: lower case, punctuation
    dropped, spaces as hyphens, a repeated heading numbered -1, -2, ..."""
    seen, found = {}, set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", _FENCE.sub("", text), re.M):
        slug = "".join(c for c in heading.lower()
                       if c in " -_" or unicodedata.category(c)[0] in "LN").replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else "%s-%d" % (slug, count))
    return found


def test_anchors_follow_githubs_rule():
    text = "# cextend\n## Torch parity: the rules\n```\n# not a heading\n```\n## `make` targets\n## Torch parity: the rules\n"
    assert anchors(text) == {"cextend", "torch-parity-the-rules", "make-targets", "torch-parity-the-rules-1"}


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_resolves(document):
    text = read(document)
    relative = [target for target in links(text) if not re.match(r"[a-z]+:", target)]
    assert relative, "%s links nowhere" % document
    for target in relative:
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(ROOT, os.path.dirname(document), path or os.path.basename(document)))
        assert resolved.startswith(ROOT + os.sep) and os.path.exists(resolved), (document, target)
        if anchor:
            assert resolved.endswith(".md"), (document, target)
            with open(resolved) as f:
                assert anchor in anchors(f.read()), (document, target, "no such heading")


def test_the_readme_contents_reach_every_docs_page():
    readme = read("README.md")
    contents = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    listed = {os.path.normpath(target.partition("#")[0]) for target in links(contents)}
    pages = {document for document in DOCUMENTS if document.startswith("docs/")}
    assert pages <= listed, sorted(pages - listed)
    assert listed <= pages, sorted(listed - pages)


def test_every_docs_page_links_back_to_the_readme():
    for document in DOCUMENTS[1:]:
        assert "../README.md" in links(read(document)), document


# -- make help --------------------------------------------------------------------------------

def test_make_help_lists_every_target_as_the_docs_show():
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split()
    result = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listed = re.findall(r"^make (\S+)", result.stdout, re.M)
    assert sorted(listed) == sorted(t for t in phony if t != "help"), (listed, phony)
    shown = [b for b in ALL_BLOCKS if b.marker is not None and "make output" in (b.marker.group("reason") or "")]
    assert len(shown) == 1 and shown[0].body == result.stdout, "the make targets block is stale: %s" % shown
