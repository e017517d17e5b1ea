"""cextend against torch on generated programs (the differential tester,
tests/difftest), and tests of the tester itself.

DIFFTEST_PROGRAMS programs from a fixed seed: all 2000 by default (make
test-all, CI), the first 500 in make test (program i depends only on the
seed and i, so those are a prefix); `make fuzz` runs many more from a fresh
seed.
"""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: the differential tester runs "
                                            "programs in torch 2.13 and cextend side by side")

import cextend  # noqa: E402
from difftest import allowlist  # noqa: E402
from difftest.outcome import Describer, compare  # noqa: E402
from difftest.program import Stmt  # noqa: E402
from difftest.run import run_many  # noqa: E402
from difftest.session import Finding  # noqa: E402

SEED = 20260
PROGRAMS = int(os.environ.get("DIFFTEST_PROGRAMS", "2000"))


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _known_keys():
    from difftest import known
    return [key for _, _, _, _, keys in known.GROUPS for key in keys]


@pytest.mark.parametrize("key", _known_keys())
def test_every_known_disagreement_is_fixed_or_documented(key, one_thread):
    """DISAGREEMENTS.md's repros (found by past fuzz runs) stay fixed: each
    agrees with torch, or is a documented deviation or a torch bug the
    generator steers around."""
    import warnings
    from difftest import known
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        finding = known.replay(known.REPROS[key], torch, cextend)
    assert known.status(key, finding) != "disagrees", finding.explain()


def test_disagreements_md_is_the_generated_list(one_thread):
    """DISAGREEMENTS.md is `python -m difftest.known --markdown`: only what
    is still allowed or avoided, the same on every CPU."""
    import warnings
    from difftest import known
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = known.markdown(torch, cextend)
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "DISAGREEMENTS.md")) as f:
        assert f.read() == generated, ("DISAGREEMENTS.md is stale: regenerate it with "
                                       "PYTHONPATH=tests python -m difftest.known --markdown > DISAGREEMENTS.md")
    assert "fixed (torch and cextend agree)" not in generated


def test_generated_programs_agree_with_torch(one_thread):
    summary = run_many(torch, cextend, SEED, PROGRAMS)
    print(summary.report(repros=False))
    assert not summary.generator_errors, summary.report()
    assert summary.failed == 0, summary.report()
    assert summary.programs == PROGRAMS


# -- the tester itself ----------------------------------------------------------------

def _differences(t_value, c_value):
    return compare("x", Describer(torch)(t_value), Describer(cextend)(c_value))


def test_comparison_sees_values_nan_positions_dtype_shape_and_grad_metadata():
    a = np.array([1.0, np.nan, -np.inf, 0.5], np.float32)
    assert _differences(torch.tensor(a), cextend.tensor(a)) == []
    ulp = np.nextafter(np.float32(0.5), np.float32(1))
    assert _differences(torch.tensor(a), cextend.tensor(np.array([1, np.nan, -np.inf, ulp], np.float32))) == []
    for other, field in ((np.array([1.0, np.nan, -np.inf, 0.75], np.float32), "values"),
                         (np.array([1.0, 0.0, -np.inf, 0.5], np.float32), "values"),
                         (np.array([1.0, np.nan, np.inf, 0.5], np.float32), "values"),
                         (a.astype(np.float64), "dtype"), (a[:3], "shape")):
        found = _differences(torch.tensor(a), cextend.tensor(other))
        assert [d.field for d in found] == [field], (other, found)
    found = _differences(torch.tensor(a, requires_grad=True), cextend.tensor(a))
    assert [d.field for d in found] == ["requires_grad"]
    t = torch.tensor([2.0], requires_grad=True)
    (t * 3).sum().backward()
    c = cextend.tensor([2.0], requires_grad=True)
    (c * 2).sum().backward()
    assert [(d.path, d.field) for d in _differences(t, c)] == [("x.grad", "values")]
    assert [d.field for d in _differences(torch.tensor([1, 2]), cextend.tensor([1, 3]))] == ["values"]


def test_comparison_sees_the_sign_of_zeros():
    a = np.array([0.0, -0.0, 1.0], np.float32)
    assert _differences(torch.tensor(a), cextend.tensor(a)) == []
    found = _differences(torch.tensor(a), cextend.tensor(np.array([0.0, 0.0, 1.0], np.float32)))
    assert [d.field for d in found] == ["zero sign"]
    assert _differences(torch.tensor([0, 1]), cextend.tensor([0, 1])) == []


def test_programs_use_out_and_the_tables_call_functions():
    """out= forms (with outs of other shapes and dtypes) and the op table's
    call(lib, ...) functions appear in generated programs, and their repros
    define the call functions they use."""
    from difftest.program import definitions
    from difftest.run import generate_and_run
    import warnings
    out_forms, calls = 0, []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for i in range(150):
            stmts = generate_and_run((3, i), torch, cextend).stmts
            out_forms += sum(", out=" in s.code for s in stmts)
            calls += [s for s in stmts if "call_" in s.code and "(torch, " in s.code]
    assert out_forms > 0
    assert calls and all(definitions([s]) for s in calls)


def test_call_functions_print_as_standalone_sources():
    """A repro defines each call_NAME it uses from calls.SOURCES alone (closures
    written out): that definition must call the op as the table's call does."""
    from cextend._ops.registry import OPS, Const
    from difftest import calls
    rng = np.random.default_rng(0)

    def tensor(a):
        if isinstance(a, np.ndarray):
            return torch.tensor(a)
        return torch.tensor(a.array) if isinstance(a, Const) else a
    checked = 0
    for info in OPS.values():
        if info.call is None or info.samples is None:
            continue
        name = calls.program_name(info)
        namespace = {}
        exec(calls.SOURCES[name], namespace)
        sample = next(iter(info.samples(rng)))
        args = [tensor(a) for a in sample.args]
        kwargs = {k: tensor(v) for k, v in sample.kwargs.items()}
        torch.manual_seed(0)
        expected = info.call(torch, *args, **kwargs)
        torch.manual_seed(0)
        got = namespace[name](torch, *args, **kwargs)
        first = (lambda r: r[0] if isinstance(r, tuple) else r)
        assert torch.equal(first(expected), first(got)), name
        checked += 1
    assert checked == len(calls.CALLS)


def test_a_deviation_never_excuses_a_different_number():
    anything = [allowlist.Deviation("catch-all", "test", lambda code, t, c, history, value=None: True)]
    stmt = Stmt("v1 = v0 * 2", "arith")
    differs = compare("v1", Describer(torch)(torch.tensor([1.0])), Describer(cextend)(cextend.tensor([2.0])))
    assert allowlist.excuse(Finding(0, stmt, "state", differences=differs), anything) is None
    assert allowlist.excuse(Finding(0, stmt, "error", RuntimeError("x"), RuntimeError("y")), anything) is None
    one_raised = Finding(0, stmt, "error", RuntimeError("torch only"), None)
    assert allowlist.excuse(one_raised, anything) is anything[0]


def test_a_planted_bug_is_found_and_shrunk(monkeypatch, one_thread):
    """A wrong `+` in cextend must be reported, as a program of a few statements."""
    add = cextend.Tensor.__add__

    def wrong_add(self, other):
        result = add(self, other)
        return result * 2 if result.dtype == cextend.float32 and result.numel() else result
    monkeypatch.setattr(cextend.Tensor, "__add__", wrong_add)
    summary = run_many(torch, cextend, 1, 60)
    assert summary.failed > 0
    def body(repro):
        """The program's statements, up to the one marked (the explanation follows it)."""
        lines = repro.split("nan, inf = float('nan'), float('inf')\n")[1].split("# <-- disagreement")[0]
        return [line for line in lines.splitlines() if line.startswith("v")]
    repro = next(repro for count, first, repro in summary.groups.values()
                 if any(" + " in line for line in body(repro)))
    assert len(body(repro)) <= 4, repro


def _parity_section(heading):
    """The text of docs/torch-parity.md under `## heading`, up to the next heading."""
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "docs", "torch-parity.md")) as f:
        page = f.read()
    assert "\n## %s\n" % heading in page, heading
    return page.split("\n## %s\n" % heading, 1)[1].split("\n#", 1)[0]


def test_every_documented_deviation_is_in_the_docs():
    different = _parity_section("Deliberately different")
    for deviation in allowlist.ALLOWED:
        assert deviation.name.lower() in different.lower(), deviation.name
    unspecified = _parity_section("Unspecified")
    for entry in allowlist.UNSPECIFIED:
        for op in entry.ops:
            assert "`%s`" % op in unspecified, op


def test_unspecified_choices_cover_only_the_index_output():
    stmt = Stmt("v1 = v0.topk(2)", "op", "topk")
    indices = compare("v1", Describer(torch)(torch.tensor([0, 1])), Describer(cextend)(cextend.tensor([1, 0])))
    assert [d.path for d in indices] == ["v1"]
    at_index = [type(d)("v1[1]", d.field, d.torch, d.cextend) for d in indices]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=at_index)) is not None
    at_values = [type(d)("v1[0]", d.field, d.torch, d.cextend) for d in indices]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=at_values)) is None
    other_op = Finding(0, Stmt("v1 = v0.max(0)", "op", "max"), "state", differences=at_index)
    assert allowlist.unspecified(other_op) is None


def test_unspecified_choices_cover_the_values_out_among_signed_zeros():
    # kthvalue of a row holding 0.0 and -0.0: which one (and which index)
    # comes back is the tie's choice, also when written through out=
    stmt = Stmt("v7 = torch.kthvalue(v4, 3, 1, True, out=(v5, v6))", "op", "kthvalue out=")
    values = compare("v5", Describer(torch)(torch.tensor([0.0])), Describer(cextend)(cextend.tensor([-0.0])))
    indices = compare("v6", Describer(torch)(torch.tensor([1])), Describer(cextend)(cextend.tensor([2])))
    assert [d.field for d in values] == ["zero sign"]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=values + indices)) is not None
    elsewhere = [type(d)("v4", d.field, d.torch, d.cextend) for d in values]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=elsewhere)) is None


def test_unspecified_matches_value_names_exactly():
    # the target v1's zero sign is the op's choice; v10's is not v1's
    stmt = Stmt("v1 = torch.amax(v0, 0)", "op", "amax")
    sign = compare("v1", Describer(torch)(torch.tensor([0.0])), Describer(cextend)(cextend.tensor([-0.0])))
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=sign)) is not None
    for other in ("v10", "v1x", "v11.grad"):
        renamed = [type(d)(other, d.field, d.torch, d.cextend) for d in sign]
        assert allowlist.unspecified(Finding(0, stmt, "state", differences=renamed)) is None, other
    within = [type(d)("v1[0]", d.field, d.torch, d.cextend) for d in sign]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=within)) is not None


_WRITES_THEN_RAISES = ("if torch.__name__ == %r:\n    v0.add_(1)\n"
                       "raise RuntimeError('checked after writing')")


@pytest.mark.parametrize("writer", ["cextend", "torch", "both"])
def test_a_state_change_where_both_raised_fails_only_when_cextend_alone_changed(writer):
    """Both raising is not a contract for what a half-done statement left,
    except that cextend must not change state where torch raised and left
    everything alone (a check made after a write)."""
    from difftest.session import Session
    session = Session(torch, cextend)
    assert session.step(Stmt("v0 = torch.tensor([1.0, 2.0])", "leaf")) == (None, None)
    code = _WRITES_THEN_RAISES % writer if writer != "both" else \
        "v0.add_(1)\nraise RuntimeError('checked after writing')"
    hard, soft = session.step(Stmt(code, "op", "writes then raises"))
    if writer == "cextend":
        assert hard is not None and hard.kind == "state-after-error" and soft is None
        assert [d.path for d in hard.differences] == ["v0"]
    elif writer == "torch":
        assert hard is None and soft.kind == "soft-state"
    else:
        assert hard is None and soft is None      # both wrote the same: nothing differs


@pytest.mark.parametrize("code", ["v2 = v0.mul_(v1)", "v0[[0, 0]] = v1", "v2 = torch.sum(v1, 0, out=v0)"])
def test_the_overlap_deviation_checks_that_memory_is_really_shared(code):
    """The deviation excuses cextend's refusal only where the written tensor
    shares memory with what the statement reads: asked through the operands,
    not through cextend's own message."""
    overlap = next(d for d in allowlist.ALLOWED if d.name.startswith("in-place op on memory it reads"))
    base = cextend.zeros(3, 3)
    error = RuntimeError("any message")
    for v1, shared in ((base.t()[0], True), (cextend.zeros(3, 3)[0], False)):
        namespace = {"torch": cextend, "v0": base, "v1": v1}
        finding = Finding(0, Stmt(code, "op"), "error", None, error,
                          value=lambda expr, ns=namespace: eval(expr, ns))
        assert (allowlist.excuse(finding, [overlap]) is overlap) == shared, (code, shared)


def test_unspecified_zero_sign_covers_an_in_place_receiver():
    stmt = Stmt("v8 = v6.clamp_max_(v7)", "op", "clamp_max_")
    sign = compare("v6", Describer(torch)(torch.tensor([0.0])), Describer(cextend)(cextend.tensor([-0.0])))
    both = sign + [type(d)("v8", d.field, d.torch, d.cextend) for d in sign]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=both)) is not None
    # the in-place write reaches the receiver's base and other views too
    other = [type(d)("v5", d.field, d.torch, d.cextend) for d in sign]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=other)) is not None
    plain = Stmt("v8 = v6.clamp_max(v7)", "op", "clamp_max")
    assert allowlist.unspecified(Finding(0, plain, "state", differences=other)) is None


def test_padded_convolutions_steer_clear_of_non_finite_operands():
    # D62: torch's kernels disagree among themselves on 0 * inf from the padding.
    from difftest.generator import Gen
    from difftest.ops import steer_clear
    ns = {"torch": torch, "x": torch.ones(2, 1, 3), "w": torch.tensor([[[1.0, 1.0, -float("inf")]]]),
          "v": torch.ones(1, 1, 3)}
    gen = Gen(np.random.default_rng(0), ns)
    assert not steer_clear(gen, "conv1d", ["x", "w"], {"padding": 1})
    assert steer_clear(gen, "conv1d", ["x", "w"], {"padding": 0})        # no padding: no 0 * inf
    assert steer_clear(gen, "conv1d", ["x", "w"], {})
    assert steer_clear(gen, "conv1d", ["x", "v"], {"padding": 1})        # finite operands
    assert not steer_clear(gen, "conv_transpose2d", ["x", "w"], {"output_padding": 1})
    assert steer_clear(gen, "max_pool2d", ["w"], {"padding": 1})


def test_unspecified_zero_sign_covers_the_base_an_out_writes_through():
    # amax(..., out=v11) with v11 a view of v10: the tie's sign reaches v10 too
    # (seed 13101, program 43388); v10 alone differing is not the write's doing
    stmt = Stmt("v12 = torch.amax(v9, -1, out=v11)", "op", "amax out=")
    sign = compare("v11", Describer(torch)(torch.tensor([-0.0])), Describer(cextend)(cextend.tensor([0.0])))
    base = [type(d)("v10", d.field, d.torch, d.cextend) for d in sign]
    result = [type(d)("v12", d.field, d.torch, d.cextend) for d in sign]
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=base + sign + result)) is not None
    assert allowlist.unspecified(Finding(0, stmt, "state", differences=base)) is None


# -- where torch failed an INTERNAL ASSERT, cextend is checked on its own ------------------

def _gradients_hold(history, code):
    from difftest import verify
    from difftest.session import namespace
    return verify.gradients_hold(cextend, namespace, [Stmt(c, "program") for c in history], Stmt(code, "backward"))


# A custom Function whose backward is wrong (3 where the derivative is 2).
_WRONG_BACKWARD = ("class Bad(torch.autograd.Function):\n"
                   "    @staticmethod\n"
                   "    def forward(ctx, x):\n"
                   "        return x * 2\n"
                   "    @staticmethod\n"
                   "    def backward(ctx, g):\n"
                   "        return g * 3\n")


def test_finite_differences_accept_a_correct_backward():
    history = ["v0 = torch.tensor([1.5, -2.0, 0.75], dtype=torch.float64, requires_grad=True)",
               "v1 = torch.tensor([[0.5], [2.0]], requires_grad=True)",
               "v2 = (v0 * v0).sin()", "v3 = v1 * v0.float()"]
    assert _gradients_hold(history, "torch.autograd.backward([v2.sum(), v3.mean()])")
    assert _gradients_hold(history, "v2.backward(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))")


def test_finite_differences_accept_a_one_sided_derivative_at_a_kink():
    history = ["v0 = torch.tensor([0.0, -1.0, 2.0], dtype=torch.float64, requires_grad=True)", "v1 = v0.relu()"]
    assert _gradients_hold(history, "v1.sum().backward()")


def test_finite_differences_refuse_a_wrong_backward():
    history = [_WRONG_BACKWARD, "v0 = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)",
               "v1 = Bad.apply(v0)"]
    assert not _gradients_hold(history, "v1.sum().backward()")


def test_torch_internal_asserts_are_excused_only_when_cextend_holds_on_its_own():
    assert _gradients_hold(["v0 = torch.tensor(-2.75, requires_grad=True)", "v1 = True ** v0"], "v1.backward()")
    deviation = next(d for d in allowlist.ALLOWED if d.name == "torch's internal asserts")
    assert not deviation.matches("v1 = v0 * 2", RuntimeError("INTERNAL ASSERT FAILED at x.cpp"), None, (),
                                 lambda expr: cextend if expr == "torch" else None)


def test_finite_differences_check_what_autograd_grad_returns_and_replay_past_failed_statements():
    history = ["v0 = torch.tensor([[0.5, -3.0, -0.75]], dtype=torch.float64, requires_grad=True)",
               "v1 = v0.expand(2, 3)", "v2 = v1.exp_()",          # raises in both libraries: the program goes on
               "v3 = (v0 * v0).tanh()"]
    assert _gradients_hold(history, "v4 = torch.autograd.grad(v3.mean(), [v0], create_graph=True)")
    assert not _gradients_hold(history + [_WRONG_BACKWARD, "v5 = Bad.apply(v3)"], "v6 = torch.autograd.grad(v5.sum(), [v3])")
