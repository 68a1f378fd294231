#!/usr/bin/env bash
# The toolchain and static libraries of the platform wheel, made once per machine outside the
# repository and reused: prints the folder of the zig wrappers, then the static prefix.
#   zig (PyPI's ziglang) targets glibc 2.28 and brings libc++, so the binary needs no libstdc++.
#   Debian's own static archives (libgit2 and what it needs, libelf, libz, libcrypto) link as they
#   are: a static archive carries no symbol versions, zig's glibc 2.28 stubs give each symbol its
#   2.28-or-older version, and zig's libc_nonshared supplies stat/fstat/lstat as older glibc did.
#   Debian has no static libzip nor libZydis: those two are built here from Debian's sources.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OPFORGE_DIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/dist}"
zig_version=0.17.0
multiarch=/usr/lib/x86_64-linux-gnu
mkdir -p "$cache"
# One maker at a time: scripts/test starts this beside its build, and install.dist may reach it
# before that one is done (it waits here, then finds everything made).
exec 9>"$cache/.lock"
flock 9

# Every compile is -O2 (cmake/zig-toolchain.cmake too): zig builds its libc++ and glibc stubs once
# per optimisation level, minutes each.
# --- zig, in a venv of its own ------------------------------------------------------------------
zig="$cache/zig-$zig_version"
if [ ! -f "$zig/.complete" ]; then
  rm -rf "$zig.tmp" && mkdir -p "$zig.tmp"
  /usr/bin/python3 -m venv "$zig.tmp/venv"
  "$zig.tmp/venv/bin/python" -m pip install -q "ziglang==$zig_version"
  touch "$zig.tmp/.complete"
  rm -rf "$zig" && mv "$zig.tmp" "$zig"
fi
# The wrappers CMake and the builds below call (rewritten each run: they are part of this script).
mkdir -p "$zig/bin"
for t in cc c++; do
  printf '#!/bin/sh\nexec "%s/venv/bin/python" -m ziglang %s -target x86_64-linux-gnu.2.28 -O2 "$@"\n' "$zig" "$t" > "$zig/bin/$t.tmp"
done
for t in ar ranlib; do
  printf '#!/bin/sh\nexec "%s/venv/bin/python" -m ziglang %s "$@"\n' "$zig" "$t" > "$zig/bin/$t.tmp"
done
for t in cc c++ ar ranlib; do
  chmod +x "$zig/bin/$t.tmp"
  if cmp -s "$zig/bin/$t.tmp" "$zig/bin/$t"; then rm "$zig/bin/$t.tmp"; else mv "$zig/bin/$t.tmp" "$zig/bin/$t"; fi
done

# --- the static prefix, keyed by this script and the Debian packages it takes from ----------------
debs=(libgit2-dev libmbedtls-dev libhttp-parser-dev libssh2-1-dev libpcre2-dev zlib1g-dev libelf-dev libssl-dev
      libzip-dev libzycore-dev libzydis-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev)
key=$( { cat "$0" "$here/gss_stub.c"; dpkg-query -W "${debs[@]}"; echo "$zig_version"; } | sha256sum | cut -c1-16)
prefix="$cache/static-$key"
if [ ! -f "$prefix/.complete" ]; then
  tmp="$prefix.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp/include" "$tmp/lib" "$tmp/src"
  # Headers: only the libraries' own, never /usr/include itself (glibc's headers there are 2.36).
  for h in toml++ CLI nlohmann git2 git2.h gelf.h libelf.h zlib.h zconf.h Zycore; do cp -r "/usr/include/$h" "$tmp/include/"; done
  cp -r /usr/include/openssl "$tmp/include/" && cp /usr/include/x86_64-linux-gnu/openssl/* "$tmp/include/openssl/"
  for a in git2 mbedtls mbedx509 mbedcrypto http_parser ssh2 pcre2-8 z elf crypto; do cp "$multiarch/lib$a.a" "$tmp/lib/"; done
  # Debian's libgit2 was built with GSSAPI (Negotiate authentication); no static Kerberos exists.
  "$zig/bin/cc" -O2 -c "$here/gss_stub.c" -o "$tmp/src/gss_stub.o"
  "$zig/bin/ar" rcs "$tmp/lib/libopforge_gss_stub.a" "$tmp/src/gss_stub.o"

  # Sources from Debian's archive, through a private apt list (the machine's sources stay as they are).
  apt="$cache/apt-src"
  mkdir -p "$apt/lists/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" > "$apt/sources.list"
  aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$apt/lists"
           -o APT::Sandbox::User=root)
  zydis_v=$(dpkg-query -W -f='${source:Version}' libzydis-dev)
  zip_v=$(dpkg-query -W -f='${source:Version}' libzip-dev)
  if ! ls "$apt/zydis_${zydis_v%-*}.orig.tar.gz" "$apt/libzip_${zip_v%-*}.orig.tar.xz" >/dev/null 2>&1; then
    apt-get "${aptopts[@]}" update -qq
    (cd "$apt" && apt-get "${aptopts[@]}" source --download-only -qq "zydis=$zydis_v" "libzip=$zip_v")
  fi

  # Zydis: the library's C files, no generated headers needed (4.x).
  (cd "$tmp/src" && tar xzf "$apt/zydis_${zydis_v%-*}.orig.tar.gz" && mv zyantific-zydis-* zydis)
  objs=()
  for c in "$tmp/src/zydis/src/"*.c; do
    o="$tmp/src/zydis/$(basename "$c" .c).o"
    "$zig/bin/cc" -O2 -DZYDIS_STATIC_BUILD -DZYCORE_STATIC_BUILD -I"$tmp/src/zydis/include" -I"$tmp/src/zydis/src" \
      -I"$tmp/include" -c "$c" -o "$o"
    objs+=("$o")
  done
  "$zig/bin/ar" rcs "$tmp/lib/libZydis.a" "${objs[@]}"
  cp -r "$tmp/src/zydis/include/Zydis" "$tmp/include/"

  # libzip with zlib only (wheels are stored or deflated), through its CMake build.
  (cd "$tmp/src" && tar xJf "$apt/libzip_${zip_v%-*}.orig.tar.xz" && mv libzip-* libzip)
  cmake -S "$tmp/src/libzip" -B "$tmp/src/libzip-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS=-O2 -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_C_COMPILER="$zig/bin/cc" -DCMAKE_AR="$zig/bin/ar" -DCMAKE_RANLIB="$zig/bin/ranlib" \
    -DCMAKE_INSTALL_PREFIX="$tmp" -DCMAKE_FIND_ROOT_PATH="$tmp" -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
    -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY \
    -DBUILD_SHARED_LIBS=OFF -DENABLE_COMMONCRYPTO=OFF -DENABLE_GNUTLS=OFF -DENABLE_MBEDTLS=OFF \
    -DENABLE_OPENSSL=OFF -DENABLE_WINDOWS_CRYPTO=OFF -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF \
    -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF >/dev/null
  cmake --build "$tmp/src/libzip-build" >/dev/null
  cmake --install "$tmp/src/libzip-build" >/dev/null
  rm -rf "$tmp/src" "$tmp/bin" "$tmp/share"
  touch "$tmp/.complete"
  rm -rf "$prefix" && mv "$tmp" "$prefix"
fi
echo "$zig/bin"
echo "$prefix"
