#!/bin/bash
# aio benchmark: a 1 GiB file read with O_DIRECT, side by side in one run (each reader 3 times,
# interleaved, best kept): opforge_aio_read (1 MiB blocks, queue depth 32), fio (libaio, direct,
# bs=1M, iodepth=32), dd iflag=direct bs=1M, and plain buffered read() after dropping the file's
# pages (posix_fadvise DONTNEED, and drop_caches when root). Target: opforge >= 0.95x fio.
# usage: bench/aio/run.sh [DIR on the disk to test] [MiB]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:-$ROOT/build/bench-aio}
MIB=${2:-1024}
LIB_DIR=$ROOT/build/bench-ops
PY=/usr/bin/python3
mkdir -p "$DIR"
FILE=$DIR/aio_bench.bin
trap 'rm -f "$FILE"' EXIT
$PY "$ROOT/bench/build_ops.py" "$LIB_DIR" aio >/dev/null
dd if=/dev/urandom of="$FILE" bs=1M count="$MIB" status=none conv=fsync
BYTES=$((MIB * 1048576))

drop() {
  $PY -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)" "$FILE"
  if [ "$(id -u)" = 0 ]; then sync; echo 1 > /proc/sys/vm/drop_caches 2>/dev/null || true; fi
}

opforge() {
  OPFORGE_OPS_LIB_DIR=$LIB_DIR PYTHONPATH=$ROOT/src/python $PY - "$FILE" <<'PY'
import sys, time, numpy as np
from opforge_ops import aio
path = sys.argv[1]
buf = aio.aligned_empty(aio.file_size(path))   # page-aligned: no bounce buffers
buf[::4096] = 0                      # fault the pages in before timing
t = time.perf_counter(); aio.read_into(path, buf); t = time.perf_counter() - t
assert aio.last_used_direct(), aio.last_note()
print(buf.nbytes / t / 1e6)
PY
}

# The same read into numpy's own allocation (16 bytes past a page): every block through a bounce buffer.
opforge_unal() {
  OPFORGE_OPS_LIB_DIR=$LIB_DIR PYTHONPATH=$ROOT/src/python $PY - "$FILE" <<'PY'
import sys, time, numpy as np
from opforge_ops import aio
path = sys.argv[1]
buf = np.empty(aio.file_size(path) + 1, np.uint8)[1:]
buf[::4096] = 0
t = time.perf_counter(); aio.read_into(path, buf); t = time.perf_counter() - t
print(buf.nbytes / t / 1e6)
PY
}

fio_read() {
  fio --name=r --filename="$FILE" --rw=read --bs=1M --iodepth=32 --ioengine=libaio --direct=1 \
      --size="$BYTES" --numjobs=1 --output-format=json 2>/dev/null |
    $PY -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]['read']; print(j['bw_bytes']/1e6)"
}

dd_read() {
  local s e
  s=$(date +%s.%N); dd if="$FILE" of=/dev/null bs=1M iflag=direct status=none; e=$(date +%s.%N)
  $PY -c "print($BYTES/($e-$s)/1e6)"
}

buffered() {
  $PY - "$FILE" <<'PY'
import os, sys, time
path = sys.argv[1]
buf = bytearray(1 << 20); mv = memoryview(buf)
fd = os.open(path, os.O_RDONLY); n = 0
t = time.perf_counter()
while True:
    k = os.readv(fd, [mv])
    if k == 0: break
    n += k
t = time.perf_counter() - t
os.close(fd); print(n / t / 1e6)
PY
}

declare -A best
for round in 1 2 3; do
  for r in opforge opforge_unal fio_read dd_read buffered; do
    drop
    v=$($r)
    printf '  round %d %-9s %8.0f MB/s\n' "$round" "$r" "$v"
    best[$r]=$($PY -c "print(max(float('${best[$r]:-0}'), $v))")
  done
done
echo "aio: ${MIB} MiB file on $(df --output=source,fstype "$DIR" | tail -1), best of 3 (MB/s = 1e6 B/s):"
for r in opforge opforge_unal fio_read dd_read buffered; do printf '  %-9s %8.0f MB/s\n' "$r" "${best[$r]}"; done
$PY -c "b={'o':${best[opforge]},'f':${best[fio_read]},'d':${best[dd_read]},'c':${best[buffered]}}; print(f\"ratio opforge / fio: {b['o']/b['f']:.2f}x (target >= 0.95x)\"); print(f\"ratio opforge / dd iflag=direct: {b['o']/b['d']:.2f}x\"); print(f\"ratio opforge / buffered read, cold cache: {b['o']/b['c']:.2f}x\"); print(f\"ratio opforge unaligned buffer / fio: {${best[opforge_unal]}/b['f']:.2f}x\")"
