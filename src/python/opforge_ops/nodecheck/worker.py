"""One rank of the check: rendezvous, facts, self-test, checked collectives, bandwidth, verdict.

Never hangs: every step runs under a deadline kept by a monitor thread. The ranks also share a
small state in the rendezvous store (the step each rank is at, the steps it arrived at and
finished, a heartbeat counter), so that when a step fails or times out, the ranks still running
can say which ranks are missing, where they are, and whether they are alive; the first failure
is published as `abort` and every rank then stops within a fraction of a second.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Iterator

from . import bandwidth as bw
from . import consistency, report
from . import facts as facts_mod
from .launch import LISTEN_FD_ENV, Launch

# Test-only faults, comma-separated ACTION:RANK:STEP, with ACTION kill (SIGKILL itself when the
# step starts) or sleep (never arrive at the step). Never set it in a real run.
FAULT_ENV = 'OPFORGE_NODECHECK_TEST_FAULT'
HEARTBEAT_S = 0.2
GRACE_S = 1.0  # how long a failing rank watches the others' heartbeats before it judges them


class Options:
    def __init__(self, **kw: Any) -> None:
        self.timeout: float = kw.get('timeout', 60.0)
        self.rendezvous_timeout: float = kw.get('rendezvous_timeout', 120.0)
        self.quick: bool = kw.get('quick', False)
        self.json_path: str | None = kw.get('json_path')
        self.min_bytes: int = kw.get('min_bytes', 8)
        self.max_bytes: int | None = kw.get('max_bytes')
        self.factor: int = kw.get('factor', 2)
        self.backend: str = kw.get('backend', 'auto')
        self.touch_bytes: int = kw.get('touch_bytes', 64 << 20)


def _faults(rank: int) -> dict[str, str]:
    out = {}
    for item in filter(None, os.environ.get(FAULT_ENV, '').split(',')):
        action, r, step = item.split(':', 2)
        if int(r) == rank:
            out[step] = action
    return out


def _say(text: str) -> None:
    sys.stdout.write(text + '\n')
    sys.stdout.flush()


class Monitor:
    """The deadlines, the heartbeat and the failure protocol of one rank."""

    def __init__(self, launch: Launch, opts: Options) -> None:
        self.launch = launch
        self.rank, self.world = launch.rank, launch.world_size
        self.opts = opts
        self.store: Any = None  # the check's own namespace in the rendezvous store
        self.step: str | None = None
        self.deadline = 0.0
        self.step_timeout = opts.timeout
        self.started = time.monotonic()
        self._failing = threading.Lock()
        self._faults = _faults(self.rank)
        self.steps: list[dict[str, Any]] = []
        self.is_store_host = False
        self.finished = False  # set once the verdict is known: the threads stop watching

    # --- store helpers (never block: a missing key reads as None) ---
    def _get(self, key: str) -> str | None:
        if self.store is None or not self.store.check([key]):
            return None
        return self.store.get(key).decode()

    def _set(self, key: str, value: str = '1') -> None:
        if self.store is not None:
            self.store.set(key, value)

    def _counter(self, key: str) -> int:
        return int(self.store.add(key, 0))

    # --- threads ---
    def start(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # inherited by every thread
        threading.Thread(target=self._watch, daemon=True, name='nodecheck-monitor').start()
        threading.Thread(target=self._sigterm, daemon=True, name='nodecheck-sigterm').start()

    def attach(self, store: Any) -> None:
        self.store = store
        threading.Thread(target=self._heartbeat, daemon=True, name='nodecheck-heartbeat').start()

    def _heartbeat(self) -> None:
        key = f'hb/{self.rank}'
        while not self.finished:
            try:
                self.store.add(key, 1)
            except Exception:
                return  # the store is gone (the monitor says so); torch would log every retry
            time.sleep(HEARTBEAT_S)

    def _sigterm(self) -> None:
        signal.sigwait({signal.SIGTERM})
        self.fail(self.step or 'start', 'terminated by the launcher (SIGTERM), usually because '
                                        'another rank exited')

    def _watch(self) -> None:
        while not self.finished:
            time.sleep(HEARTBEAT_S)
            step = self.step
            if step and time.monotonic() > self.deadline:
                if step == 'rendezvous' and self.store is None:
                    self.fail(step, _describe(TimeoutError(f'no answer within {self.step_timeout:g} s'),
                                              self.launch, step))
                self.fail(step, f'this rank did not finish the step within its deadline '
                                f'({self.step_timeout:g} s)')
            if self.store is None:
                continue
            try:
                abort = self._get('abort')
            except Exception as e:
                if self.finished:
                    return
                self.fail(step or 'start', f'lost the rendezvous store at {self.launch.endpoint} '
                                           f'({e}); the rank or launcher that served it is gone')
            if abort:
                a = json.loads(abort)
                if a['rank'] != self.rank:
                    self.fail(step or a['step'], f"stopping: rank {a['rank']} failed at step "
                                                 f"{a['step']}", first=a)

    # --- steps ---
    @contextmanager
    def stage(self, name: str, timeout: float | None = None) -> Iterator[None]:
        self.step_timeout = timeout or self.opts.timeout
        self.started = time.monotonic()
        self.deadline = self.started + self.step_timeout
        self.step = name
        start = time.monotonic()
        try:
            self._set(f'at/{self.rank}', name)
            action = self._faults.get(name)
            if action == 'kill':
                os.kill(os.getpid(), signal.SIGKILL)
            elif action == 'sleep':
                time.sleep(10 * 3600)
            self._set(f'arrive/{name}/{self.rank}')
            yield
            self._set(f'done/{name}/{self.rank}')
        except Exception as e:
            self.fail(name, _describe(e, self.launch, name))
        finally:
            self.step = None
        self.last_seconds = time.monotonic() - start

    def record(self, name: str, status: str, detail: str = '') -> None:
        self.steps.append({'name': name, 'status': status, 'detail': detail,
                           'seconds': round(getattr(self, 'last_seconds', 0.0), 4)})

    # --- failure ---
    def fail(self, step: str, reason: str, first: dict[str, Any] | None = None) -> None:
        """Says why this rank stops, judges the others, and exits 1. Runs once per process."""
        if not self._failing.acquire(blocking=False):
            while True:  # another thread is already failing; it ends the process
                time.sleep(3600)
        try:
            _say(f'rank {self.rank}: FAIL at step {step} after {time.monotonic() - self.started:.1f} s: '
                 f'{reason}')
            if first is None:
                first = {'rank': self.rank, 'step': step, 'reason': reason}
            lines = self._judge(step, first)
            if lines is not None:
                _say('FAIL: ' + '; '.join(lines))
                report.write_failure(self.opts.json_path, self.launch, step, lines, self.steps)
        except Exception as e:
            # The store is gone with the rank or launcher that served it: nobody can judge the
            # others, so every rank left says what it knows.
            _say(f"FAIL: step {step}: rank {self.rank}: {reason}; the rendezvous store at "
                 f"{self.launch.endpoint} is gone too ({type(e).__name__}), so rank 0 or the "
                 f"launcher serving it has stopped")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    def _judge(self, step: str, first: dict[str, Any]) -> list[str] | None:
        """The final FAIL reasons when this rank is the lowest one still alive, else None."""
        if self.store is None:
            return [f"step {first['step']}: {first['reason']}"]
        if self._get('abort') is None:
            self._set('abort', json.dumps(first))
        self._set(f'fail/{self.rank}', json.dumps({'step': step, 'reason': first['reason']}))
        before = [self._counter(f'hb/{r}') for r in range(self.world)]
        time.sleep(GRACE_S)
        after = [self._counter(f'hb/{r}') for r in range(self.world)]
        alive = [r for r in range(self.world) if after[r] > before[r] or r == self.rank]
        lowest = min(alive)
        if lowest != self.rank:
            if self.is_store_host:
                time.sleep(GRACE_S)  # let the judging rank read the store before it goes
            return None
        lines = []
        for r in range(self.world):
            at = self._get(f'at/{r}')
            arrived = at is not None and self._get(f'arrive/{at}/{r}') is not None
            if r not in alive:
                where = (f'during step {at}' if arrived else f'before it arrived at step {at}') \
                    if at else 'before the rendezvous'
                lines.append(f'rank {r} is gone (no heartbeat for {GRACE_S:g} s: killed or crashed) '
                             f'{where}')
            elif at and not arrived:
                lines.append(f'rank {r} did not arrive at step {at} within {self.opts.timeout:g} s '
                             f'(alive, stuck before the step)')
        if lines:
            lines.append(f"first error: rank {first['rank']} at step {first['step']}: {first['reason']}")
        else:
            lines.append(f"step {first['step']}: rank {first['rank']}: {first['reason']}")
        if self.is_store_host:
            time.sleep(GRACE_S)
        return lines


def _describe(e: BaseException, launch: Launch, step: str) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    # gloo: "[/path/pair.cc:545] Read error [127.0.0.1]:62185: Connection reset by peer. This is
    # typically caused by ..." -> the middle part
    text = re.sub(r'^\[[^\]]*\.(cc|cpp|h):\d+\]\s*', '', text).split(' This is typically')[0]
    if step != 'rendezvous':
        return f'{type(e).__name__}: {text}'
    if 'address already in use' in text.lower():
        return (f'{launch.endpoint} is in use ({text}): another job or an earlier check holds the '
                f'port; choose another MASTER_PORT (torchrun --master-port / --rdzv-endpoint)')
    return (f'cannot rendezvous at {launch.endpoint} ({type(e).__name__}: {text}): check that '
            f'MASTER_ADDR is the first node\'s address as the other nodes see it, that rank 0 is '
            f'running, and that no firewall blocks port {launch.master_port} between the nodes')


# ----------------------------------------------------------------------------- the check

def run(launch: Launch, opts: Options) -> int:
    mon = Monitor(launch, opts)
    mon.start()
    # A local step, slow on a loaded machine (seconds of disk reads): its own generous deadline.
    with mon.stage('import torch', timeout=max(opts.timeout, 120.0)):
        import torch
        import torch.distributed as dist
    backend = opts.backend
    if backend == 'auto':
        backend = 'nccl' if torch.cuda.is_available() and torch.cuda.device_count() > 0 else 'gloo'
    with mon.stage('device'):
        if backend == 'nccl':
            count = torch.cuda.device_count()
            if launch.local_rank >= count:
                raise RuntimeError(f'local rank {launch.local_rank} but only {count} GPU(s) visible '
                                   f'(CUDA_VISIBLE_DEVICES={os.environ.get("CUDA_VISIBLE_DEVICES")!r}); '
                                   f'start at most {count} processes per node')
            device = torch.device('cuda', launch.local_rank)
            torch.cuda.set_device(device)
        else:
            device = torch.device('cpu')
    mon.record('device', 'passed', str(device))

    # The rendezvous waits for the slowest rank's start (torch's import), hence its own deadline.
    with mon.stage('rendezvous', timeout=opts.rendezvous_timeout):
        fd = os.environ.get(LISTEN_FD_ENV)
        host = launch.rank == 0 and not launch.agent_store
        kwargs: dict[str, Any] = {}
        if host and fd is not None:
            kwargs['master_listen_fd'] = int(fd)
            kwargs['use_libuv'] = False  # the classic server adopts the socket (tested); libuv's is not relied on
        base = dist.TCPStore(launch.master_addr, launch.master_port, None, host,
                             timedelta(seconds=opts.rendezvous_timeout), wait_for_workers=False, **kwargs)
        mon.is_store_host = host
        store = dist.PrefixStore('opforge-nodecheck', base)
        mon.attach(store)
        mon._set(f'arrive/rendezvous/{launch.rank}')
        while not store.check([f'arrive/rendezvous/{r}' for r in range(launch.world_size)]):
            time.sleep(0.05)
        dist.init_process_group(backend, store=dist.PrefixStore('pg', base), rank=launch.rank,
                                world_size=launch.world_size, timeout=timedelta(seconds=opts.timeout),
                                device_id=device if backend == 'nccl' else None)
    mon.record('rendezvous', 'passed', f'{launch.launcher} at {launch.endpoint}, {backend}')

    with mon.stage('facts'):
        mine = facts_mod.collect(launch.rank, launch.local_rank, launch.world_size, launch.launcher,
                                 device)
        mine['backend'] = backend
    with mon.stage('memory'):
        if device.type == 'cuda':
            nbytes = min(opts.touch_bytes, torch.cuda.mem_get_info(device)[0] // 4)
        else:  # a CPU rank has no device memory to prove; a token touch keeps --quick quick
            nbytes = 8 << 20
        mine['memory_touch'] = facts_mod.touch_memory(device, nbytes)
    mon.record('memory', 'passed' if mine['memory_touch']['ok'] else 'failed',
               f"{bw.human(nbytes)} on {device}")
    with mon.stage('selftest'):
        mine['selftest'] = facts_mod.selftest(device)
    mon.record('selftest', mine['selftest']['status'], mine['selftest']['detail'])

    for name, fn in COLLECTIVES:
        with mon.stage(name):
            status, detail = fn(torch, dist, launch, device, backend)
        mon.record(name, status, detail)

    table = None
    if opts.quick:
        table = {'skipped': '--quick'}
    elif launch.world_size < 2:
        table = {'skipped': 'needs >= 2 GPUs' if backend == 'nccl' else 'needs >= 2 ranks'}
    else:
        table = sweep(mon, torch, dist, launch, device, opts)

    with mon.stage('report'):
        mine['steps'] = mon.steps
        store.set(f'result/{launch.rank}', json.dumps(mine))
        if launch.rank == 0:
            keys = [f'result/{r}' for r in range(launch.world_size)]
            while not store.check(keys):
                time.sleep(0.05)
            ranks = [json.loads(store.get(k).decode()) for k in keys]
            failures, warnings = verdict(ranks)
            rep = report.build(launch, backend, ranks, table, failures, warnings)
            for line in report.text(rep):
                _say(line)
            report.write_json(opts.json_path, rep)
            store.set('verdict', json.dumps({'ok': rep['ok']}))
    with mon.stage('verdict'):
        while not store.check(['verdict']):
            time.sleep(0.05)
        ok = json.loads(store.get('verdict').decode())['ok']
        mon.finished = True
        store.set(f'exit/{launch.rank}', '1')
        if host:  # the others read the store until they leave
            keys = [f'exit/{r}' for r in range(launch.world_size)]
            while not store.check(keys):
                time.sleep(0.02)
        mon.step = None
    try:
        dist.destroy_process_group()
    except Exception:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    # Not a normal interpreter exit: its teardown of torch's threads and of a store whose
    # server (rank 0) may already be gone can abort the process after the verdict.
    os._exit(0 if ok else 1)


def verdict(ranks: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    failures, warnings = consistency.check(ranks)
    for f in ranks:
        for s in f['steps']:
            if s['status'] == 'failed':
                failures.append(f"rank {f['rank']} ({f['host']}): step {s['name']}: {s['detail']}")
    return failures, warnings


# ----------------------------------------------------------------------------- collectives

def _barrier(torch: Any, dist: Any, launch: Launch, device: Any, backend: str) -> tuple[str, str]:
    if backend == 'nccl':
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()
    return 'passed', ''


def _all_reduce(torch: Any, dist: Any, launch: Launch, device: Any, backend: str) -> tuple[str, str]:
    n, r = launch.world_size, launch.rank
    base = torch.arange(1, 1025, dtype=torch.float32, device=device)
    t = base * (r + 1)
    dist.all_reduce(t)
    want = base * (n * (n + 1) // 2)
    if not torch.equal(t, want):
        return 'failed', f'sum of (rank+1)*[1..1024] is wrong: got {t[:3].tolist()}…, want {want[:3].tolist()}…'
    return 'passed', f'sum over {n} ranks'


def _all_gather(torch: Any, dist: Any, launch: Launch, device: Any, backend: str) -> tuple[str, str]:
    n, r = launch.world_size, launch.rank
    base = torch.arange(256, dtype=torch.float32, device=device)
    out = [torch.full((256,), -1.0, device=device) for _ in range(n)]
    dist.all_gather(out, base + 1000 * r)
    wrong = [q for q in range(n) if not torch.equal(out[q], base + 1000 * q)]
    if wrong:
        return 'failed', f'the slots of {consistency.rank_list(wrong)} hold wrong values'
    return 'passed', f'{n} slots'


def _broadcast(torch: Any, dist: Any, launch: Launch, device: Any, backend: str) -> tuple[str, str]:
    n, r = launch.world_size, launch.rank
    root = n - 1  # not rank 0, so that a sender other than the store host is exercised
    want = torch.arange(512, dtype=torch.float32, device=device) + 7
    t = want.clone() if r == root else torch.zeros(512, device=device)
    dist.broadcast(t, src=root)
    if not torch.equal(t, want):
        return 'failed', f'values from rank {root} arrived wrong'
    return 'passed', f'from rank {root}'


def _reduce_scatter(torch: Any, dist: Any, launch: Launch, device: Any, backend: str) -> tuple[str, str]:
    n, r = launch.world_size, launch.rank
    base = torch.arange(64, dtype=torch.float32, device=device)
    inputs = [(base + 100 * q) * (r + 1) for q in range(n)]
    out = torch.zeros(64, device=device)
    try:
        dist.reduce_scatter(out, inputs)
    except (RuntimeError, NotImplementedError) as e:
        text = str(e).lower()
        if 'not support' in text or 'unsupported' in text or 'not implemented' in text:
            return 'skipped', f'{backend} has no reduce_scatter'
        raise
    want = (base + 100 * r) * (n * (n + 1) // 2)
    if not torch.equal(out, want):
        return 'failed', 'this rank\'s reduced slice is wrong'
    return 'passed', f'{n} slices'


COLLECTIVES = [('barrier', _barrier), ('all_reduce', _all_reduce), ('all_gather', _all_gather),
               ('broadcast', _broadcast), ('reduce_scatter', _reduce_scatter)]


# ----------------------------------------------------------------------------- bandwidth

def memory_cap(torch: Any, device: Any, local_world: int) -> int:
    """Bytes one collective of the sweep may use: a quarter of the free memory (buffers for the
    input and the output), shared by the ranks of this node on CPU."""
    if device.type == 'cuda':
        return torch.cuda.mem_get_info(device)[0] // 4
    avail = 0
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                avail = int(line.split()[1]) * 1024
    return avail // (4 * max(1, local_world))


def time_collective(torch: Any, dist: Any, coll: str, size: int, n: int, device: Any) -> tuple[int, float]:
    """(bytes, seconds per call on this rank): the timed loop, identical to calling
    torch.distributed directly (the benchmark compares the two)."""
    if coll == 'all_reduce':
        t = torch.ones(max(1, size // bw.ELEMENT_BYTES), dtype=torch.float32, device=device)
        nbytes = t.numel() * bw.ELEMENT_BYTES

        def call() -> None:
            dist.all_reduce(t)
    else:
        per = bw.all_gather_layout(size, n)
        inp = torch.ones(per, dtype=torch.float32, device=device)
        out = torch.empty(per * n, dtype=torch.float32, device=device)
        nbytes = per * n * bw.ELEMENT_BYTES

        def call() -> None:
            dist.all_gather_into_tensor(out, inp)
    iters = bw.iterations(nbytes)
    call()  # warm-up: connections, buffers
    sync = torch.cuda.synchronize if device.type == 'cuda' else (lambda: None)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    sync()
    return nbytes, (time.perf_counter() - start) / iters


def sweep(mon: Monitor, torch: Any, dist: Any, launch: Launch, device: Any, opts: Options) -> dict[str, Any]:
    n = launch.world_size
    with mon.stage('bandwidth plan'):
        default = (1 << 30) if device.type == 'cuda' else (256 << 20)
        cap = min(opts.max_bytes or default, memory_cap(torch, device, launch.local_world_size))
        c = torch.tensor([cap], dtype=torch.float64, device=device)
        dist.all_reduce(c, op=dist.ReduceOp.MIN)  # every rank sweeps the same sizes
        cap = bw.pow2_floor(int(c.item()))
    table: dict[str, Any] = {'max_bytes': cap, 'ranks': n, 'average': 'mean over ranks',
                             'all_reduce': [], 'all_gather': []}
    for size in bw.sizes(opts.min_bytes, cap, opts.factor):
        for coll in ('all_reduce', 'all_gather'):
            with mon.stage(f'bandwidth {coll} {bw.human(size)}'):
                nbytes, seconds = time_collective(torch, dist, coll, size, n, device)
                t = torch.tensor([seconds], dtype=torch.float64, device=device)
                dist.all_reduce(t)
                avg = t.item() / n
            table[coll].append({'bytes': nbytes, 'time_us': round(avg * 1e6, 2),
                                'algbw_gbps': round(bw.algbw_gbps(nbytes, avg), 4),
                                'busbw_gbps': round(bw.busbw_gbps(coll, nbytes, avg, n), 4)})
    mon.record('bandwidth', 'passed', f'{len(table["all_reduce"])} sizes up to {bw.human(cap)}')
    return table
