# Shared by progress.sh and missing_tools.sh: a CPU-only op tree and its recipe.
# slow_op_tree DIR: DIR/ops/slow/{op.toml,a.cpp,b.cpp}
slow_op_tree() {
  mkdir -p "$1/ops/slow"
  cat > "$1/ops/slow/op.toml" <<'TOML'
name = "slow"
kind = "cpu"
description = "two sources compiled by a slow compiler"
sources = ["a.cpp", "b.cpp"]
TOML
  echo 'extern "C" int slow_a() { return 1; }' > "$1/ops/slow/a.cpp"
  echo 'extern "C" int slow_b() { return 2; }' > "$1/ops/slow/b.cpp"
}
# slow_recipe FILE TREE [LINE...]: the recipe (LINEs added at its end)
slow_recipe() {
  local file=$1 tree=$2; shift 2
  cat > "$file" <<TOML
[package]
name = "slow-ops"
version = "0.1.0"
local_version = "none"

[source]
path = "$tree"
ops_dir = "ops"

[cuda]
python = "/usr/bin/python3"

[ops]
slow = true
TOML
  local line
  for line in "$@"; do echo "$line" >> "$file"; done
}
