"""Differences across the ranks' facts: what makes a cluster not ready (failures) and what makes
it slower or riskier than it should be (warnings). Pure: tests feed it any cluster."""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable, Sequence

# Linux before 5.5 can hang multi-process training (the kernel-version warning that accelerate
# prints, "below the recommended minimum of 5.5.0").
MIN_KERNEL = (5, 5)


def rank_list(ranks: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> 'ranks 0-2, 5'; [3] -> 'rank 3'."""
    rs = sorted(ranks)
    parts, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f'{rs[i]}-{rs[j]}')
        i = j + 1
    return ('rank ' if len(rs) == 1 else 'ranks ') + ', '.join(parts)


def kernel_version(release: str) -> tuple[int, int]:
    m = re.match(r'(\d+)\.(\d+)', release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def build_identity(build: dict[str, Any]) -> str:
    """What tells two opforge_ops builds apart: the wheel version (which carries the commit),
    the source commit and the arch list."""
    return json.dumps({k: build.get(k) for k in ('version', 'source_commit', 'arch_list', 'ops')},
                      sort_keys=True)


def _build_text(b: dict[str, Any]) -> str:
    extra = [f"commit {b['source_commit'][:12]}" if b.get('source_commit') else '',
             f"arch {';'.join(b['arch_list'])}" if b.get('arch_list') else '']
    extra = [e for e in extra if e]
    return (b.get('version') or '?') + (f" ({', '.join(extra)})" if extra else '')


def _fact_text(f: dict[str, Any], key: str) -> str:
    return str(f.get(key))


def _groups(facts: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for f in facts:
        out.setdefault(key(f), []).append(f['rank'])
    return out


def _differ(what: str, groups: dict[str, list[int]], show: Callable[[str], str] = lambda v: v) -> str:
    return f'{what} differ: ' + '; '.join(
        f"{rank_list(rs)} {'has' if len(rs) == 1 else 'have'} {show(v)}"
        for v, rs in sorted(groups.items(), key=lambda kv: kv[1][0]))


def check(facts: Sequence[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(failures, warnings) for the facts of every rank (dicts as facts.collect returns). Each
    failure starts with 'step consistency: ' (the step that found it)."""
    failures: list[str] = []
    warnings: list[str] = []
    builds = _groups(facts, lambda f: build_identity(f['opforge_ops']))
    if len(builds) > 1:
        failures.append(_differ('opforge_ops builds', builds,
                                lambda v: _build_text(json.loads(v))))
    for key, what in (('torch', 'torch versions'), ('cuda', 'CUDA versions (torch.version.cuda)'),
                      ('nccl', 'NCCL versions')):
        groups = _groups(facts, functools.partial(_fact_text, key=key))
        if len(groups) > 1:
            failures.append(_differ(what, groups))
    gpus = _groups([f for f in facts if f.get('gpu')], lambda f: f"{f['gpu']['name']} "
                                                             f"({f['gpu']['capability']})")
    if len(gpus) > 1:
        warnings.append(_differ('GPU kinds', gpus) +
                        '; synchronous training runs at the pace of the slowest GPU')
    if gpus and len(gpus) < len(facts) and any(not f.get('gpu') for f in facts):
        failures.append(f"{rank_list([f['rank'] for f in facts if not f.get('gpu')])} see no GPU "
                        f"while others do")
    for f in facts:
        lib = f['opforge_ops'].get('overflow_library') or {}
        if f.get('gpu') and lib.get('holds_gpu_arch') is False:
            failures.append(f"rank {f['rank']} ({f['host']}): the opforge_ops wheel has no code for "
                            f"its {f['gpu']['name']} (compute capability {f['gpu']['capability']}): "
                            f"{lib.get('path')} holds {', '.join(lib.get('images') or []) or 'none'}; "
                            f"rebuild with TORCH_CUDA_ARCH_LIST including {f['gpu']['capability']}")
    old = _groups([f for f in facts if kernel_version(f.get('kernel', '')) < MIN_KERNEL],
                  lambda f: f"{f['host']} (Linux {f.get('kernel')})")
    for host, rs in old.items():
        warnings.append(f'{host}: kernel older than {MIN_KERNEL[0]}.{MIN_KERNEL[1]} '
                        f'({rank_list(rs)}); multi-process jobs can hang there: upgrade the kernel')
    return ['step consistency: ' + f for f in failures], warnings
