# Shared by the end-to-end scripts: a copy of the working tree (tracked and new files, no build
# outputs), and small assertions.
copy_tree() {  # copy_tree SRC DEST
  mkdir -p "$2"
  (cd "$1" && git ls-files -co --exclude-standard -z 2>/dev/null | xargs -0 -r -I{} sh -c 'test -e "{}" && echo "{}"' ) \
    | (cd "$1" && tar -cf - -T -) | (cd "$2" && tar -xf -)
}
fail() { echo "FAIL: $*" >&2; exit 1; }
only_wheel() { ls "$1"/*.whl 2>/dev/null | head -n 1; }
