"""Adam/AdamW steps on the CPU: fp32 parameters, gradients and moments updated in place by the
native library, vectorised with the best SIMD level of the running CPU (AVX-512 or AVX2+FMA on
x86-64, SVE or NEON on aarch64, else scalar, chosen at run time; ``simd_level()`` says which,
``OPFORGE_CPU_ADAM_SIMD`` forces one) and spread over the usable cores.

- ``CPUAdam``: a ``torch.optim.Optimizer`` over torch CPU tensors (torch is imported only when the
  class is first used), like DeepSpeed's ``DeepSpeedCPUAdam`` — ``adamw_mode=True`` gives decoupled
  weight decay, and ``step(half_params=...)`` also writes fp16/bf16 copies of the new parameters.
- ``adam_step``: the functional form over numpy arrays (or torch tensors).
"""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Sequence

from . import _native
from ._buffers import Buffer, host_buffer, is_numpy_array, is_torch_tensor

# CPUAdam comes from the module's __getattr__ (made when first asked for: it imports torch).
__all__ = ['CPUAdam', 'adam_step', 'simd_level', 'set_simd_level', 'best_simd_level', 'SIMD_LEVELS']  # noqa: F822

ABI_VERSION = 1
SIMD_LEVELS = ('scalar', 'avx2', 'avx512', 'neon', 'sve')  # the C enum's order
_ADAMW, _NO_BIAS_CORRECTION, _HALF_FP16, _HALF_BF16 = 1, 2, 4, 8

_log = logging.getLogger(__name__)


def _declare(lib: ctypes.CDLL) -> None:
    f, i, u64, vp = ctypes.c_float, ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p
    lib.opforge_cpu_adam_last_error.restype = ctypes.c_char_p
    lib.opforge_cpu_adam_simd_name.restype = ctypes.c_char_p
    lib.opforge_cpu_adam_simd_name.argtypes = [i]
    lib.opforge_cpu_adam_set_simd_level.argtypes = [i]
    lib.opforge_cpu_adam_step.argtypes = [vp, vp, vp, vp, u64, ctypes.c_int64, f, f, f, f, f, i, vp, i]
    _log.info('opforge cpu_adam: SIMD level %s (best on this CPU: %s)',
              _simd_name(lib, lib.opforge_cpu_adam_simd_level()),
              _simd_name(lib, lib.opforge_cpu_adam_best_simd_level()))


_library = _native.OpLibrary('cpu_adam', ABI_VERSION, _declare)


def _simd_name(lib: ctypes.CDLL, level: int) -> str:
    return str(lib.opforge_cpu_adam_simd_name(level).decode())


def simd_level() -> str:
    """The SIMD level steps use: 'avx512', 'avx2', 'sve', 'neon' or 'scalar'."""
    lib = _library()
    return _simd_name(lib, lib.opforge_cpu_adam_simd_level())


def best_simd_level() -> str:
    """The best level the running CPU supports."""
    lib = _library()
    return _simd_name(lib, lib.opforge_cpu_adam_best_simd_level())


def set_simd_level(name: str) -> None:
    """Forces a level for this process (tests, benchmarks); ValueError if the CPU lacks it."""
    lib = _library()
    if name not in SIMD_LEVELS:
        raise ValueError(f'unknown SIMD level {name!r}; one of {SIMD_LEVELS}')
    if lib.opforge_cpu_adam_set_simd_level(SIMD_LEVELS.index(name)) != 0:
        raise ValueError(_library.error(lib))


def _fp32(x: Any, what: str) -> Buffer:
    if is_torch_tensor(x):
        import torch
        if x.dtype != torch.float32:
            raise TypeError(f'{what} must be float32, got {x.dtype}')
    elif is_numpy_array(x):
        if str(x.dtype) != 'float32':
            raise TypeError(f'{what} must be float32, got {x.dtype}')
    else:
        raise TypeError(f'{what} must be a numpy array or a torch CPU tensor, got {type(x).__name__}')
    return host_buffer(x, writable=what != 'grads')


def _half_flag(half_out: Any, half_dtype: str | None) -> int:
    dtype = str(half_out.dtype).replace('torch.', '')
    if half_dtype is None:
        half_dtype = {'float16': 'fp16', 'bfloat16': 'bf16'}.get(dtype)
    if half_dtype not in ('fp16', 'bf16'):
        raise TypeError(f'half_out of dtype {dtype}: pass half_dtype="fp16" or "bf16"')
    if dtype not in ('float16', 'bfloat16', 'uint16', 'int16'):
        raise TypeError(f'half_out must hold 16-bit values, got {dtype}')
    return _HALF_FP16 if half_dtype == 'fp16' else _HALF_BF16


def adam_step(params: Any, grads: Any, exp_avg: Any, exp_avg_sq: Any, *, step: int, lr: float = 1e-3,
              betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
              adamw: bool = False, bias_correction: bool = True, half_out: Any = None,
              half_dtype: str | None = None, threads: int = 0) -> None:
    """One Adam (adamw=True: AdamW) step, in place on `params`, `exp_avg`, `exp_avg_sq`.

    Arrays: float32, contiguous, of one size. `step` is the 1-based step number. `half_out`
    (optional, same size): float16 gets an IEEE fp16 copy of the new parameters; a uint16 array
    with half_dtype='bf16' (or a torch bfloat16 tensor) a bfloat16 copy.
    """
    lib = _library()
    p, nbytes, kp = _fp32(params, 'params')
    g, gb, kg = _fp32(grads, 'grads')
    m, mb, km = _fp32(exp_avg, 'exp_avg')
    v, vb, kv = _fp32(exp_avg_sq, 'exp_avg_sq')
    if not nbytes == gb == mb == vb:
        raise ValueError(f'params, grads, exp_avg, exp_avg_sq differ in size: {nbytes}, {gb}, {mb}, {vb} bytes')
    n = nbytes // 4
    flags = (_ADAMW if adamw else 0) | (0 if bias_correction else _NO_BIAS_CORRECTION)
    h: int | None = None
    kh: object = None
    if half_out is not None:
        flags |= _half_flag(half_out, half_dtype)
        h, hb, kh = host_buffer(half_out, writable=True)
        if hb != 2 * n:
            raise ValueError(f'half_out has {hb} bytes, {2 * n} needed')
    rc = lib.opforge_cpu_adam_step(p, g, m, v, n, int(step), lr, betas[0], betas[1], eps,
                                   weight_decay, flags, h, threads)
    del kp, kg, km, kv, kh
    if rc != 0:
        raise ValueError(_library.error(lib))


def _make_optimizer() -> type:
    import torch

    class CPUAdam(torch.optim.Optimizer):
        """Adam/AdamW over fp32 torch CPU tensors, stepped by the native library.

        Same hyper-parameters as DeepSpeed's DeepSpeedCPUAdam: lr, bias_correction, betas, eps,
        weight_decay, adamw_mode (True: decoupled weight decay as torch.optim.AdamW; False: L2 added
        to the gradient as torch.optim.Adam). threads=0 uses every usable core.
        """

        def __init__(self, params: Any, lr: float = 1e-3, bias_correction: bool = True,
                     betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                     weight_decay: float = 0.0, adamw_mode: bool = True, threads: int = 0) -> None:
            if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
                raise ValueError('lr, eps and weight_decay must be >= 0')
            if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
                raise ValueError(f'betas must lie in [0, 1): {betas}')
            defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps,
                            weight_decay=weight_decay, adamw_mode=adamw_mode)
            super().__init__(params, defaults)
            self.threads = threads
            _library()

        @torch.no_grad()
        def step(self, closure: Any = None, half_params: Sequence[Any] | None = None) -> Any:
            """One step for every parameter with a gradient. half_params: optional list (same
            order as the parameters of all groups) of fp16/bf16 tensors to receive copies."""
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            index = 0
            for group in self.param_groups:
                for p in group['params']:
                    half = half_params[index] if half_params is not None else None
                    index += 1
                    if p.grad is None:
                        continue
                    if p.grad.is_sparse:
                        raise RuntimeError('CPUAdam does not support sparse gradients')
                    if p.dtype != torch.float32 or p.device.type != 'cpu' or not p.is_contiguous():
                        raise TypeError('CPUAdam needs contiguous float32 CPU parameters')
                    state = self.state[p]
                    if not state:
                        state['step'] = 0
                        state['exp_avg'] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                        state['exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    state['step'] += 1
                    grad = p.grad.contiguous()
                    if grad.dtype != torch.float32:
                        grad = grad.float()
                    adam_step(p, grad, state['exp_avg'], state['exp_avg_sq'], step=state['step'],
                              lr=group['lr'], betas=group['betas'], eps=group['eps'],
                              weight_decay=group['weight_decay'], adamw=group['adamw_mode'],
                              bias_correction=group['bias_correction'], half_out=half,
                              threads=self.threads)
            return loss

    CPUAdam.__module__ = __name__
    return CPUAdam


_optimizer_class: type | None = None


def __getattr__(name: str) -> Any:
    # PEP 562: the optimizer class subclasses torch.optim.Optimizer, so it is made (and torch
    # imported) only when someone asks for it.
    global _optimizer_class
    if name == 'CPUAdam':
        if _optimizer_class is None:
            _optimizer_class = _make_optimizer()
        return _optimizer_class
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
