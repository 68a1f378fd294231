#!/usr/bin/env python3
"""Per-file compile times of a build, watched from outside: wall, CPU and peak memory of each
compile step (a process whose command line compiles one .cu/.cpp/.cc file with -c, with all the
processes under it: nvcc's cicc, ptxas, the host compiler), of a file whose path holds UNDER
(the build's own work folder: other builds on the machine are left out). Samples /proc every
0.25 s until PID exits, then writes one tab-separated line per step to OUT:
    source  wall_s  cpu_s  peak_MiB
Wall is from the first to the last sample that saw the step (±0.25 s); CPU is the step's own
CPU time and that of every process under it, dead ones included (cutime/cstime); peak is the
largest sum of resident memory over its processes at one sample (a process that lives less than
a sample can be missed).
    stepwatch.py PID OUT UNDER
"""

import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SUFFIXES = (".cu", ".cpp", ".cc", ".c")


def processes():
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        # fields after the name: state ppid ... utime(14) stime(15) cutime(16) cstime(17) ... rss(24)
        out[int(name)] = {
            "ppid": int(rest[1]),
            "cpu": sum(int(x) for x in rest[11:15]) / TICK,
            "rss": int(rest[21]) * PAGE,
            "argv": argv,
        }
    return out


def source_of(argv, under):
    """The file a compile command compiles (the word after -c), when its path holds `under`."""
    words = " ".join(argv).split()
    for i, w in enumerate(words[:-1]):
        if w == "-c" and words[i + 1].endswith(SUFFIXES) and under in words[i + 1]:
            return words[i + 1]
    return None


def main():
    pid, out_path, under = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    steps = {}  # (root pid, source) -> {first, last, cpu, peak}
    while os.path.exists(f"/proc/{pid}"):
        now = time.time()
        procs = processes()
        children = {}
        for p, info in procs.items():
            children.setdefault(info["ppid"], []).append(p)
        sources = {p: source_of(info["argv"], under) for p, info in procs.items()}
        for p, info in procs.items():
            src = sources[p]
            if not src:
                continue
            up, seen, nested = info["ppid"], set(), False
            while up in procs and up not in seen:
                seen.add(up)
                if sources.get(up) == src:
                    nested = True
                    break
                up = procs[up]["ppid"]
            if nested:
                continue  # not the outermost process of its compile
            tree, todo = [], [p]
            while todo:
                q = todo.pop()
                tree.append(q)
                todo.extend(children.get(q, []))
            rss = sum(procs[q]["rss"] for q in tree if q in procs)
            cpu = sum(procs[q]["cpu"] for q in tree if q in procs)
            s = steps.setdefault((p, src), {"first": now, "last": now, "cpu": 0.0, "peak": 0})
            s["last"], s["cpu"], s["peak"] = now, max(s["cpu"], cpu), max(s["peak"], rss)
        time.sleep(0.25)
    with open(out_path + ".tmp", "w") as f:
        for (_, src), s in sorted(steps.items(), key=lambda kv: kv[1]["first"]):
            f.write("%s\t%.1f\t%.1f\t%.0f\n" % (src, s["last"] - s["first"], s["cpu"], s["peak"] / 2**20))
    os.replace(out_path + ".tmp", out_path)


if __name__ == "__main__":
    main()
