#!/usr/bin/env bash
# Provisioning and the matrix, measured side by side in one run (bench/results/variants.txt):
#   1. first-use provisioning: `opforge env` (a plan that provisions) with an empty opforge cache
#      and an empty pip cache (the wheels come from PyPI), against the same command once the
#      toolkit is cached: the difference is the provisioning (target <= 60 s);
#   2. what a cached provisioned toolkit adds to `opforge plan`: the same recipe with and without
#      provision = "pypi", median of 7 runs each (target <= 0.2 s);
#   3. the two-cell matrix of tests/fixtures/cuda_extension (torch 2.14 / CUDA 13.0 installed,
#      torch 2.15 / CUDA 13.2 provisioned), cold (empty ccache) and again with the build and dist
#      folders removed and a warm ccache.
#   bench/variants/run.sh [OPFORGE]   (needs scripts/torch-venv's two environments)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
opforge=$(realpath "${1:-$repo/build/opforge}")
v215=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
v214=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
work=$(mktemp -d /tmp/opforge-bench-variants.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset CUDA_HOME CUDA_PATH DS_SKIP_CUDA_CHECK
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }
median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }

echo "# bench/variants/run.sh, $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, commit $(git -C "$repo" rev-parse --short HEAD)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1 and 2: one project, torch 2.15 (CUDA 13.2) on a machine whose toolkit is 13.0.
proj="$work/proj"; cp -r "$repo/tests/fixtures/cuda_extension" "$proj"
printf '\n[cuda]\nversion = "torch"\npython = "python"\n' >> "$proj/opforge.toml"
cp "$proj/opforge.toml" "$proj/plain.toml"
printf 'provision = "pypi"\n' >> "$proj/opforge.toml"
export PATH="$v215/bin:$PATH"
export OPFORGE_CACHE_DIR="$work/cache"
t0=$(now); PIP_CACHE_DIR="$work/pip-cache" "$opforge" env "$proj/opforge.toml" > /dev/null; t1=$(now)
"$opforge" env "$proj/opforge.toml" > /dev/null; t2=$(now)
cold=$(secs "$t0" "$t1"); cached=$(secs "$t1" "$t2")
echo "1. first use, provisioning CUDA 13.2 from PyPI (empty pip cache): opforge env ${cold} s; cached: ${cached} s"
echo "   provisioning itself: $(python3 -c "print(f'{$cold - $cached:.2f}')") s (target <= 60 s); $(du -sh "$work/cache/toolkits/13.2" | cut -f1) on disk"
with=() without=()
for _ in 1 2 3 4 5 6 7; do
  a=$(now); "$opforge" plan "$proj/opforge.toml" > /dev/null; b=$(now); "$opforge" plan "$proj/plain.toml" > /dev/null; c=$(now)
  with+=("$(secs "$a" "$b")"); without+=("$(secs "$b" "$c")")
done
mw=$(median "${with[@]}"); mo=$(median "${without[@]}")
echo "2. opforge plan, median of 7: provision = \"pypi\" (cached 13.2) ${mw} s, without (installed 13.0) ${mo} s"
echo "   added by cached provisioning: $(python3 -c "print(f'{$mw - $mo:.3f}')") s (target <= 0.2 s)"

# 3: the two-cell matrix, cold then warm ccache.
m="$work/matrix"; cp -r "$repo/tests/fixtures/cuda_extension" "$m"
py=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
sed -i 's/^local_version = .*/local_version = "cu{cuda_major}{cuda_minor}torch{torch_major}{torch_minor}"/' "$m/opforge.toml"
sed -i 's/^backend = "command"/backend = "command"\ncache = "ccache"/' "$m/opforge.toml"
cat >> "$m/opforge.toml" <<TOML

[cuda]
version = "torch"
python = "python"
provision = "pypi"

[matrix]
torch = ["2.14.0", "2.15.0"]
python = ["python3"]
environments = { "torch2.14.0-py$py" = "$v214/bin/python", "torch2.15.0-py$py" = "$v215/bin/python" }
TOML
export CCACHE_DIR="$work/ccache"
t0=$(now); (cd "$m" && "$opforge" build opforge.toml > "$work/cold.log" 2>&1) || { tail -30 "$work/cold.log"; exit 1; }; t1=$(now)
rm -rf "$m/build" "$m/dist"
t2=$(now); (cd "$m" && "$opforge" build opforge.toml > "$work/warm.log" 2>&1) || { tail -30 "$work/warm.log"; exit 1; }; t3=$(now)
c=$(secs "$t0" "$t1"); w=$(secs "$t2" "$t3")
echo "3. two-cell matrix build (toolkit already provisioned): cold ccache ${c} s, warm ccache ${w} s, cold / warm $(python3 -c "print(f'{$c / $w:.1f}')")x"
grep -E "^torch" "$work/warm.log" | sed 's/^/   /'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
