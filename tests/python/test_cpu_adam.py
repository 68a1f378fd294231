"""opforge_ops.cpu_adam: the optimizer against torch.optim.Adam/AdamW, the functional form
against a plain formula, every SIMD level the CPU has against the scalar one."""
import os
import subprocess
import sys

import numpy as np
import pytest

from opforge_ops import cpu_adam


def levels():
    """The levels this CPU runs: each machine's own (x86-64: scalar, avx2, avx512; aarch64: scalar,
    neon, sve), up to the best one."""
    best = cpu_adam.best_simd_level()
    ok = []
    for name in cpu_adam.SIMD_LEVELS:
        try:
            cpu_adam.set_simd_level(name)
        except ValueError:
            continue
        ok.append(name)
    cpu_adam.set_simd_level(best)
    return ok


@pytest.fixture(autouse=True)
def restore_level():
    yield
    cpu_adam.set_simd_level(cpu_adam.best_simd_level())


def test_simd_level_is_reported_and_can_be_forced_by_environment():
    assert cpu_adam.simd_level() in cpu_adam.SIMD_LEVELS
    code = 'from opforge_ops import cpu_adam; print(cpu_adam.simd_level())'
    env = dict(os.environ, OPFORGE_CPU_ADAM_SIMD='scalar')
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == 'scalar'


def reference(p, grads, lr, b1, b2, eps, wd, adamw):
    p = p.astype(np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if adamw:
            p *= 1 - lr * wd
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p -= lr / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
    return p


@pytest.mark.parametrize('adamw', [False, True])
def test_functional_numpy_every_level_vs_formula_and_scalar(adamw):
    rng = np.random.default_rng(0)
    n, steps = 10_001, 100
    p0 = rng.standard_normal(n).astype(np.float32)
    grads = [(0.1 * rng.standard_normal(n)).astype(np.float32) for _ in range(steps)]
    hyper = dict(lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.05, adamw=adamw)
    ref = reference(p0, grads, 1e-2, 0.9, 0.99, 1e-8, 0.05, adamw)
    results = {}
    for level in levels():
        cpu_adam.set_simd_level(level)
        p, m, v = p0.copy(), np.zeros(n, np.float32), np.zeros(n, np.float32)
        for t, g in enumerate(grads, 1):
            cpu_adam.adam_step(p, g, m, v, step=t, **hyper)
        np.testing.assert_allclose(p, ref, atol=2e-5, rtol=0)
        results[level] = p
    for level, p in results.items():
        np.testing.assert_allclose(p, results['scalar'], rtol=1e-5, atol=1e-5, err_msg=level)


@pytest.mark.parametrize('adamw_mode', [False, True])
def test_optimizer_matches_torch(adamw_mode):
    torch = pytest.importorskip('torch')
    torch.manual_seed(0)
    shapes = [(64, 33), (1,), (1000,)]
    ours = [torch.randn(s, requires_grad=True) for s in shapes]
    theirs = [p.detach().clone().requires_grad_(True) for p in ours]
    opt = cpu_adam.CPUAdam(ours, lr=1e-2, weight_decay=0.1, adamw_mode=adamw_mode)
    ref_cls = torch.optim.AdamW if adamw_mode else torch.optim.Adam
    ref = ref_cls(theirs, lr=1e-2, weight_decay=0.1)
    for _ in range(50):
        grads = [torch.randn(s) * 0.1 for s in shapes]
        for p, q, g in zip(ours, theirs, grads):
            p.grad = g.clone()
            q.grad = g.clone()
        opt.step()
        ref.step()
    for p, q in zip(ours, theirs):
        torch.testing.assert_close(p, q, atol=2e-5, rtol=1e-5)
    assert isinstance(opt, torch.optim.Optimizer)


def test_optimizer_writes_half_copies():
    torch = pytest.importorskip('torch')
    p = torch.randn(1001, requires_grad=True)
    q = torch.randn(17, requires_grad=True)
    opt = cpu_adam.CPUAdam([p, q], lr=1e-3)
    p.grad = torch.randn(1001)
    q.grad = torch.randn(17)
    halves = [torch.empty(1001, dtype=torch.float16), torch.empty(17, dtype=torch.bfloat16)]
    opt.step(half_params=halves)
    assert torch.equal(halves[0], p.detach().half())
    assert torch.equal(halves[1], q.detach().bfloat16())


def test_bad_arguments_are_clear():
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match='float32'):
        cpu_adam.adam_step(a.astype(np.float64), a, a.copy(), a.copy(), step=1)
    with pytest.raises(ValueError, match='step must be >= 1'):
        cpu_adam.adam_step(a, a.copy(), a.copy(), a.copy(), step=0)
    with pytest.raises(ValueError, match='differ in size'):
        cpu_adam.adam_step(a, np.zeros(3, np.float32), a.copy(), a.copy(), step=1)


@pytest.mark.parametrize('op', ['cpu_adam', 'utils'])
def test_library_does_not_link_openmp(op):
    from opforge_ops import _native
    out = subprocess.run(['readelf', '-d', _native.find(op)], capture_output=True, text=True,
                         check=True).stdout
    needed = [line for line in out.splitlines() if '(NEEDED)' in line]
    assert needed and not any('gomp' in line or 'libaio' in line for line in needed), needed
