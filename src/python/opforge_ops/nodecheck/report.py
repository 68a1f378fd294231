"""The check's result as data (the `--json` report) and as text (what rank 0 prints); both come
from the same dict.

The report's ``gpus`` list has the shape of ``opforge doctor --json``'s (index, name, capability,
uuid), one entry per GPU of the cluster, so ``opforge plan RECIPE --nodes nodecheck.json`` reads
a whole cluster from one nodecheck report as from one doctor report per node.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from . import bandwidth as bw
from .consistency import rank_list
from .launch import Launch

SCHEMA = 'opforge-nodecheck/1'


def build(launch: Launch, backend: str, ranks: list[dict[str, Any]], table: dict[str, Any] | None,
          failures: list[str], warnings: list[str]) -> dict[str, Any]:
    gpus: list[dict[str, Any]] = []
    for f in ranks:
        g = f.get('gpu')
        if g and not any(x['host'] == f['host'] and x['index'] == g['index'] for x in gpus):
            gpus.append({'index': g['index'], 'name': g['name'], 'capability': g['capability'],
                         'uuid': g.get('uuid', ''), 'host': f['host'], 'rank': f['rank']})
    steps: dict[str, set[str]] = {}
    for f in ranks:
        for s in f['steps']:
            steps.setdefault(s['name'], set()).add(s['status'])
    collectives = {}
    for name, statuses in steps.items():
        collectives[name] = 'failed' if 'failed' in statuses else \
            'skipped' if statuses == {'skipped'} else 'passed'
    ok = not failures
    return {
        'schema': SCHEMA, 'ok': ok,
        'verdict': 'OK' if ok else 'FAIL: ' + '; '.join(failures),
        'failures': failures, 'warnings': warnings,
        'launcher': launch.launcher, 'backend': backend, 'world_size': launch.world_size,
        'endpoint': launch.endpoint, 'hosts': sorted({f['host'] for f in ranks}),
        'steps': collectives, 'ranks': ranks, 'gpus': gpus, 'bandwidth': table,
    }


def rank_line(f: dict[str, Any]) -> str:
    g = f.get('gpu')
    gpu = f"{g['name']} (cc {g['capability']}, {g['memory_bytes'] / 2**30:.0f} GiB)" if g else 'no GPU'
    lib = f['opforge_ops'].get('overflow_library') or {}
    images = ','.join(lib.get('images') or []) or lib.get('error', 'none')
    holds = {True: 'holds this GPU', False: 'LACKS this GPU', None: ''}[lib.get('holds_gpu_arch')]
    mem = f.get('memory_touch') or {}
    st = f.get('selftest') or {}
    return (f"rank {f['rank']}/{f['world_size']} {f['host']} local {f['local_rank']}: {gpu}; "
            f"Linux {f['kernel']}; torch {f['torch']} CUDA {f['cuda'] or '-'} NCCL {f['nccl'] or '-'}"
            f"{' driver ' + f['driver'] if f.get('driver') else ''}; "
            f"opforge_ops {f['opforge_ops'].get('version')} (overflow: {images}{' ' + holds if holds else ''}); "
            f"memory {'ok' if mem.get('ok') else 'FAILED'}; selftest {st.get('status')}"
            f"{' (' + st['detail'] + ')' if st.get('detail') else ''}")


def table_lines(table: dict[str, Any] | None, backend: str) -> list[str]:
    if not table:
        return []
    if 'skipped' in table:
        return [f"bandwidth: skipped ({table['skipped']})"]
    out = [f"bandwidth ({backend}, {table['ranks']} ranks; nccl-tests algbw/busbw in GB/s, time per "
           f"call in us, mean over ranks):",
           f"{'size':>8}  {'all_reduce time':>15} {'algbw':>8} {'busbw':>8}  "
           f"{'all_gather time':>15} {'algbw':>8} {'busbw':>8}"]
    for ar, ag in zip(table['all_reduce'], table['all_gather']):
        out.append(f"{bw.human(ar['bytes']):>8}  {ar['time_us']:>15.1f} {ar['algbw_gbps']:>8.3f} "
                   f"{ar['busbw_gbps']:>8.3f}  {ag['time_us']:>15.1f} {ag['algbw_gbps']:>8.3f} "
                   f"{ag['busbw_gbps']:>8.3f}")
    return out


def text(rep: dict[str, Any]) -> list[str]:
    lines = [rank_line(f) for f in rep['ranks']]
    by_status: dict[str, list[str]] = {}
    for name in ('barrier', 'all_reduce', 'all_gather', 'broadcast', 'reduce_scatter'):
        status = rep['steps'].get(name, 'missing')
        detail = ''
        if status == 'skipped':
            detail = next((s['detail'] for f in rep['ranks'] for s in f['steps'] if s['name'] == name), '')
        by_status.setdefault(status, []).append(name + (f' ({detail})' if detail else ''))
    n = rep['world_size']
    lines.append(f"collectives ({rep['backend']}, {n} rank{'' if n == 1 else 's'}, results checked): " +
                 '; '.join(f"{k}: {', '.join(by_status[k])}"
                           for k in ('passed', 'skipped', 'failed', 'missing') if k in by_status))
    lines += table_lines(rep.get('bandwidth'), rep['backend'])
    lines += [f'WARNING: {w}' for w in rep['warnings']]
    lines.append(rep['verdict'])
    return lines


def _atomic_write(path: str, data: dict[str, Any]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.nodecheck-', suffix='.json')
    try:
        with os.fdopen(fd, 'w') as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write('\n')
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: str | None, rep: dict[str, Any]) -> None:
    if path:
        _atomic_write(path, rep)


def write_failure(path: str | None, launch: Launch, step: str, lines: list[str],
                  steps: list[dict[str, Any]]) -> None:
    """The report of a check that stopped early: the reasons, no cluster facts."""
    if path:
        _atomic_write(path, {'schema': SCHEMA, 'ok': False, 'verdict': 'FAIL: ' + '; '.join(lines),
                             'failures': lines, 'warnings': [], 'failed_step': step,
                             'launcher': launch.launcher, 'world_size': launch.world_size,
                             'endpoint': launch.endpoint, 'ranks': [], 'gpus': [],
                             'steps_of_reporting_rank': steps, 'reporting_rank': launch.rank})


__all__ = ['build', 'text', 'write_json', 'write_failure', 'rank_list']
