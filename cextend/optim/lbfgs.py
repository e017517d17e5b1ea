"""LBFGS: torch.optim.LBFGS (limited-memory BFGS, optional strong-Wolfe line search).

The algorithm is torch 2.13's step for step: the two-loop recursion over
the last `history_size` curvature pairs (a pair is kept only when y.s >
1e-10), the first step min(1, 1 / |g|_1) * lr, the stopping tests
(tolerance_grad on max |g|, tolerance_change on the directional
derivative, the step and the loss change, max_iter, max_eval), and the
strong-Wolfe line search with cubic interpolation (bracketing, then zoom).

All parameters are flattened into one vector (in parameter order) as
torch's does.  The scalars of the recursion (y.s, H_diag, the ro and al
coefficients, the step t) are numpy scalars of the parameters' dtype,
which round as torch's 0-d tensors do; sums and dot products are numpy's
(BLAS), and the line search's square root is correctly rounded, so single
values may differ from torch's in the last bit (torch's sums are its
BLAS's, and its square root of a float64 tensor is its vendor's: MKL's on
an Intel CPU is within an ulp, not always the nearest double).
"""
import numpy as np

from cextend.autograd.grad_mode import enable_grad
from cextend.optim import _inplace as F
from cextend.optim.optimizer import Optimizer
from cextend.tensor import Tensor, _wrap


def _dot(a, b):
    """The dot product of two flat vectors (numpy's BLAS; torch's is MKL's or OpenBLAS's, which
    may sum in another order)."""
    return np.dot(a, b)


def _l1(v):
    """sum(|v|), for the first step's length."""
    return np.abs(v).sum()


def _sqrt(x):
    """The square root in the cubic interpolation, correctly rounded."""
    return np.sqrt(x)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = _sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along d from x for a step t meeting the strong Wolfe conditions.

    Returns (loss, flat gradient, t, function evaluations).
    """
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)

    # bracket an interval containing a point satisfying the Wolfe criteria
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        # next step
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

    if ls_iter == max_ls:       # the bracketing ran out of evaluations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: refine the bracket until a point satisfies the criteria
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # a t too close to a boundary (twice running, or on it) moves 0.1 of the bracket inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Armijo condition not met, or not lower than the lowest point
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True         # the Wolfe conditions hold
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # the old high becomes the new low
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            # the new point becomes the new low
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _to_state(value):
    """State as torch keeps it: arrays (not copied) and numpy scalars as cextend Tensors."""
    if isinstance(value, np.ndarray):
        return _wrap(value)
    if isinstance(value, np.generic):
        return _wrap(np.array(value))
    if isinstance(value, list):
        return [_to_state(v) for v in value]
    return value


def _from_state(value):
    if isinstance(value, Tensor):
        data = value._data
        return data[()] if data.ndim == 0 else data     # 0-d: a numpy scalar
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    return value


_HISTORY_KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


class LBFGS(Optimizer):
    """L-BFGS (torch.optim.LBFGS): one parameter group; step(closure) re-evaluates the loss.

    lr: the step length (scaled by min(1, 1/|g|_1) on the very first
    iteration); max_iter iterations and at most max_eval (default
    max_iter * 5 // 4) loss evaluations per step(); tolerance_grad and
    tolerance_change stop early; history_size curvature pairs are kept;
    line_search_fn None (fixed steps) or "strong_wolfe".

    The state (func_evals, n_iter, the direction, step, history, previous
    gradient and loss) is kept as torch's: on the first parameter.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def __setstate__(self, state):
        super().__setstate__(state)
        if self.param_groups:
            self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(np.zeros(p.numel(), dtype=p._data.dtype))
            else:
                views.append(np.asarray(p.grad._data).reshape(-1))
        return np.concatenate(views, 0)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            numel = p.numel()
            F.add_(p._data, update[offset:offset + numel].reshape(p._data.shape), alpha=step_size)
            p._bump_version()
            offset += numel
        if offset != self._numel():
            raise AssertionError("Expected offset {} to equal {}".format(offset, self._numel()))

    def _clone_param(self):
        return [np.array(p._data) for p in self._params]

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            p._data[...] = data
            p._bump_version()

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure):
        """One optimisation step: up to max_iter L-BFGS iterations.

        closure: re-evaluates the model (gradients included) and returns the
        loss; it runs with grad enabled.  Returns the loss of the first
        evaluation.
        """
        if len(self.param_groups) != 1:
            raise AssertionError("Expected exactly one param_group, but got {}".format(len(self.param_groups)))

        errors = np.geterr()        # the closure runs with the caller's floating-point settings

        def evaluate():
            with np.errstate(**errors), enable_grad():
                return closure()

        with np.errstate(all="ignore"):         # torch's arithmetic is silent (1 / 0 is inf)
            return self._step(evaluate)

    def _step(self, evaluate):
        group = self.param_groups[0]
        lr = F.scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # LBFGS's state is global, kept on the first parameter (as torch does, for load_state_dict)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max(initial=-np.inf) <= tolerance_grad:
            return orig_loss

        d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss = (
            _from_state(state.get(key)) for key in _HISTORY_KEYS)

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # -- the descent direction --------------------------------------------------
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:       # drop the oldest pair
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / _dot(y, y)        # scale of the initial inverse Hessian
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = _from_state(state["al"])
                # the two-loop recursion, in one buffer
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    F.add_(q, old_dirs[i], alpha=-al[i])
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    F.add_(r, old_stps[i], alpha=al[i] - be_i)
                state["al"] = _to_state(al)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # -- the step length ---------------------------------------------------------
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / _l1(flat_grad)) * lr
            else:
                t = lr

            gtd = _dot(flat_grad, d)        # the directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max(initial=-np.inf) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # re-evaluated except on the last iteration (useless in a stochastic setting)
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max(initial=-np.inf) <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # -- the stopping tests ------------------------------------------------------
            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if np.abs(d * t).max(initial=-np.inf) <= tolerance_change:     # no progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        for key, value in zip(_HISTORY_KEYS, (d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss)):
            state[key] = _to_state(value)
        return orig_loss
