# Shared by the end-to-end scripts: a copy of the working tree (tracked and new files, no build
# outputs), and small assertions.
copy_tree() {  # copy_tree SRC DEST
  mkdir -p "$2"
  (cd "$1" && git ls-files -co --exclude-standard -z 2>/dev/null | xargs -0 -r -I{} sh -c 'test -e "{}" && echo "{}"' ) \
    | (cd "$1" && tar -cf - -T -) | (cd "$2" && tar -xf -)
}
fail() { echo "FAIL: $*" >&2; exit 1; }
only_wheel() { ls "$1"/*.whl 2>/dev/null | head -n 1; }
# need_venv DIR...: each a Python environment with torch (scripts/torch-venv makes them); a missing
# one fails in CI (CI=true) and skips (exit 77) elsewhere.
need_venv() {
  local v
  for v in "$@"; do
    [ -x "$v/bin/python" ] && continue
    [ "${CI:-}" = "true" ] && fail "the torch environment $v is missing: run scripts/torch-venv"
    echo "SKIP: the torch environment $v is missing: run scripts/torch-venv"; exit 77
  done
}
# need_cuda130: the machine's CUDA 13.0 toolkit at /usr/local/cuda-13.0, which the torch 2.14
# environment's CUDA matches exactly; missing fails in CI and skips (exit 77) elsewhere.
need_cuda130() {
  [ -x /usr/local/cuda-13.0/bin/nvcc ] && return 0
  [ "${CI:-}" = "true" ] && fail "no CUDA 13.0 at /usr/local/cuda-13.0"
  echo "SKIP: no CUDA 13.0"; exit 77
}
# every_op_recipe FILE SRC [LINE...]: the recipe of the DeepSpeed-shaped fixture tree
# (tests/fixtures/every_op_deepspeed) built by its setup.py with Debian's python3; LINEs are added
# to [build].
every_op_recipe() {
  local file=$1 src=$2; shift 2
  cat > "$file" <<TOML
[package]
name = "deepspeed"
version = "0.5.0"
local_version = "none"

[source]
path = "$src/tests/fixtures/every_op_deepspeed"

[cuda]
python = "/usr/bin/python3"

[arch]
list = "8.0"

[build]
backend = "command"
command = ["/usr/bin/python3", "setup.py", "bdist_wheel"]
TOML
  local line
  for line in "$@"; do echo "$line" >> "$file"; done
}
