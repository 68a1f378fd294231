#!/usr/bin/env bash
# The toolchain and static libraries of the platform wheel, made once per machine outside the
# repository and reused: prints the folder of the zig wrappers, then the static prefix.
#   static-deps.sh [PLATFORM]   x86_64 (the default: this machine's) or aarch64 (Grace)
#   zig (PyPI's ziglang) targets glibc 2.28 and brings libc++, so the binary needs no libstdc++.
#   Debian's own static archives (libgit2 and what it needs, libelf, libz, libcrypto) link as they
#   are: a static archive carries no symbol versions, zig's glibc 2.28 stubs give each symbol its
#   2.28-or-older version, and zig's libc_nonshared supplies stat/fstat/lstat as older glibc did.
#   Debian has no static libzip nor libZydis, and its static libarchive needs a dozen more archives:
#   those three are built here from Debian's sources (libarchive with zlib only).
# aarch64 is a cross-build from this x86-64 machine: zig targets it as it is (no other compiler),
# and the static archives are Debian's own arm64 ones, the same packages of the same release,
# unpacked from their .debs (apt-get download through a private apt list; nothing is installed).
# Each platform has its own wrappers and its own prefix; zig and the sources are shared.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${OPFORGE_DIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opforge/dist}"
zig_version=0.17.0
platform="${1:-x86_64}"
case "$platform" in
  x86_64) triple=x86_64-linux-gnu debian_arch=amd64 wrappers=bin ;;
  aarch64) triple=aarch64-linux-gnu debian_arch=arm64 wrappers=bin-aarch64 ;;
  *) echo "static-deps.sh: no platform named $platform (x86_64 or aarch64)" >&2; exit 2 ;;
esac
[ "$(dpkg --print-architecture)" = amd64 ] ||
  { echo "static-deps.sh: builds on an x86-64 (amd64) Debian machine, not $(dpkg --print-architecture)" >&2; exit 2; }
mkdir -p "$cache"
# One maker at a time: scripts/test starts this beside its build, and install.dist may reach it
# before that one is done (it waits here, then finds everything made).
exec 9>"$cache/.lock"
flock 9

# Every compile is -O2 (cmake/zig-toolchain.cmake too): zig builds its libc++ and glibc stubs once
# per optimisation level, minutes each. And -g0: zig's clang writes DWARF unless told not to, and
# the executable is stripped anyway (a unity file of opforge: 10.9 CPU-s with it, 8.3 without).
# --- zig, in a venv of its own ------------------------------------------------------------------
zig="$cache/zig-$zig_version"
if [ ! -f "$zig/.complete" ]; then
  rm -rf "$zig.tmp" && mkdir -p "$zig.tmp"
  /usr/bin/python3 -m venv "$zig.tmp/venv"
  "$zig.tmp/venv/bin/python" -m pip install -q "ziglang==$zig_version"
  touch "$zig.tmp/.complete"
  rm -rf "$zig" && mv "$zig.tmp" "$zig"
fi
# The wrappers CMake and the builds below call (rewritten each run: they are part of this script;
# left as they are when unchanged, so that ccache, which looks at their time, keeps its objects).
# Both platforms have the same glibc floor, 2.28: the x86 wheel's, and torch's own for aarch64.
bin="$zig/$wrappers"
mkdir -p "$bin"
for t in cc c++; do
  printf '#!/bin/sh\nexec "%s/venv/bin/python" -m ziglang %s -target %s.2.28 -O2 -g0 "$@"\n' "$zig" "$t" "$triple" > "$bin/$t.tmp"
done
for t in ar ranlib; do
  printf '#!/bin/sh\nexec "%s/venv/bin/python" -m ziglang %s "$@"\n' "$zig" "$t" > "$bin/$t.tmp"
done
for t in cc c++ ar ranlib; do
  chmod +x "$bin/$t.tmp"
  if cmp -s "$bin/$t.tmp" "$bin/$t"; then rm "$bin/$t.tmp"; else mv "$bin/$t.tmp" "$bin/$t"; fi
done

# --- the static prefix, keyed by this script, the Debian packages it takes from and the platform --
debs=(libgit2-dev libmbedtls-dev libhttp-parser-dev libssh2-1-dev libpcre2-dev zlib1g-dev libelf-dev libssl-dev
      libzip-dev libarchive-dev libzycore-dev libzydis-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev)
# The packages whose static archives are taken as Debian built them (the rest are headers only).
archive_debs=(libgit2-dev libmbedtls-dev libhttp-parser-dev libssh2-1-dev libpcre2-dev zlib1g-dev libelf-dev libssl-dev)
key=$( { cat "$0" "$here/gss_stub.c"; dpkg-query -W "${debs[@]}"; echo "$zig_version $platform"; } | sha256sum | cut -c1-16)
prefix="$cache/static-$key"
if [ ! -f "$prefix/.complete" ]; then
  tmp="$prefix.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp/include" "$tmp/lib" "$tmp/src"
  if [ "$platform" = x86_64 ]; then
    sysroot=""
  else
    # The same packages for arm64, at the host's versions where the archive still has them (the
    # host and the archive agree after scripts/deps; a binNMU may give arm64 another +bN), else
    # bookworm's newest: their names are kept in the prefix (debs.txt).
    arch_apt="$cache/apt-$debian_arch"
    mkdir -p "$arch_apt/lists/partial" "$arch_apt/cache/archives/partial" "$arch_apt/debs"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    {
      echo "deb [arch=$debian_arch signed-by=$keyring] http://deb.debian.org/debian bookworm main"
      echo "deb [arch=$debian_arch signed-by=$keyring] http://deb.debian.org/debian bookworm-updates main"
      echo "deb [arch=$debian_arch signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main"
    } >"$arch_apt/sources.list"
    arch_opts=(-o "Dir::Etc::SourceList=$arch_apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
               -o "Dir::State::Lists=$arch_apt/lists" -o "Dir::Cache=$arch_apt/cache" -o Dir::State::Status=/dev/null
               -o "APT::Architecture=$debian_arch" -o "APT::Architectures::=$debian_arch" -o APT::Sandbox::User=root)
    apt-get "${arch_opts[@]}" update -qq
    wanted=()
    for p in "${archive_debs[@]}"; do
      v=$(dpkg-query -W -f='${Version}' "$p")
      # (apt-cache says "not found" on stderr but exits 0.)
      if apt-cache "${arch_opts[@]}" show "$p=$v" 2>/dev/null | grep -q '^Package:'; then wanted+=("$p=$v"); else wanted+=("$p"); fi
    done
    rm -f "$arch_apt/debs/"*.deb
    (cd "$arch_apt/debs" && apt-get "${arch_opts[@]}" download -qq "${wanted[@]}")
    sysroot="$tmp/src/sysroot"
    for d in "$arch_apt/debs/"*.deb; do dpkg-deb -x "$d" "$sysroot" && basename "$d" >>"$tmp/debs.txt"; done
  fi
  # Headers: only the libraries' own, never /usr/include itself (glibc's headers there are 2.36).
  # The archives' own headers come from the platform's packages (the same files as the host's but
  # for openssl's configuration headers, which are per machine); the header-only libraries' are the host's.
  for h in toml++ CLI nlohmann Zycore; do cp -r "/usr/include/$h" "$tmp/include/"; done
  for h in git2 git2.h gelf.h libelf.h zlib.h zconf.h openssl; do cp -r "$sysroot/usr/include/$h" "$tmp/include/"; done
  cp "$sysroot/usr/include/$triple/openssl/"* "$tmp/include/openssl/"
  for a in git2 mbedtls mbedx509 mbedcrypto http_parser ssh2 pcre2-8 z elf crypto; do
    cp "$sysroot/usr/lib/$triple/lib$a.a" "$tmp/lib/"
  done
  # Debian's libgit2 was built with GSSAPI (Negotiate authentication); no static Kerberos exists.
  "$bin/cc" -O2 -c "$here/gss_stub.c" -o "$tmp/src/gss_stub.o"
  "$bin/ar" rcs "$tmp/lib/libopforge_gss_stub.a" "$tmp/src/gss_stub.o"

  # Sources from Debian's archive, through a private apt list (the machine's sources stay as they are).
  # The sources are the platform's too: one download for both.
  apt="$cache/apt-src"
  mkdir -p "$apt/lists/partial"
  # bookworm-security too: libarchive's installed version is a security update.
  {
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main"
  } > "$apt/sources.list"
  aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$apt/lists"
           -o APT::Sandbox::User=root)
  zydis_v=$(dpkg-query -W -f='${source:Version}' libzydis-dev)
  zip_v=$(dpkg-query -W -f='${source:Version}' libzip-dev)
  archive_v=$(dpkg-query -W -f='${source:Version}' libarchive-dev)
  if ! ls "$apt/zydis_${zydis_v%-*}.orig.tar.gz" "$apt/libzip_${zip_v%-*}.orig.tar.xz" \
      "$apt/libarchive_${archive_v%-*}.orig.tar.xz" >/dev/null 2>&1; then
    apt-get "${aptopts[@]}" update -qq
    (cd "$apt" && apt-get "${aptopts[@]}" source --download-only -qq "zydis=$zydis_v" "libzip=$zip_v" \
      "libarchive=$archive_v")
  fi

  # Zydis: the library's C files, no generated headers needed (4.x).
  (cd "$tmp/src" && tar xzf "$apt/zydis_${zydis_v%-*}.orig.tar.gz" && mv zyantific-zydis-* zydis)
  objs=()
  for c in "$tmp/src/zydis/src/"*.c; do
    o="$tmp/src/zydis/$(basename "$c" .c).o"
    "$bin/cc" -O2 -DZYDIS_STATIC_BUILD -DZYCORE_STATIC_BUILD -I"$tmp/src/zydis/include" -I"$tmp/src/zydis/src" \
      -I"$tmp/include" -c "$c" -o "$o"
    objs+=("$o")
  done
  "$bin/ar" rcs "$tmp/lib/libZydis.a" "${objs[@]}"
  cp -r "$tmp/src/zydis/include/Zydis" "$tmp/include/"

  # libzip with zlib only (wheels are stored or deflated), through its CMake build.
  # Another platform's: CMake is told so (no program of the build is run here).
  cross=()
  [ "$platform" = x86_64 ] || cross=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$platform")
  (cd "$tmp/src" && tar xJf "$apt/libzip_${zip_v%-*}.orig.tar.xz" && mv libzip-* libzip)
  cmake -S "$tmp/src/libzip" -B "$tmp/src/libzip-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS=-O2 -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    "${cross[@]}" \
    -DCMAKE_C_COMPILER="$bin/cc" -DCMAKE_AR="$bin/ar" -DCMAKE_RANLIB="$bin/ranlib" \
    -DCMAKE_INSTALL_PREFIX="$tmp" -DCMAKE_FIND_ROOT_PATH="$tmp" -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
    -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY \
    -DBUILD_SHARED_LIBS=OFF -DENABLE_COMMONCRYPTO=OFF -DENABLE_GNUTLS=OFF -DENABLE_MBEDTLS=OFF \
    -DENABLE_OPENSSL=OFF -DENABLE_WINDOWS_CRYPTO=OFF -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF \
    -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF >/dev/null
  cmake --build "$tmp/src/libzip-build" >/dev/null
  cmake --install "$tmp/src/libzip-build" >/dev/null
  # libarchive: the library alone, reading tar with zlib ([source] sdist); no other compressor,
  # crypto, ACL or xattr library (opforge enables only the filters it was built with).
  # With Debian's patches applied (its security fixes to the readers that parse an untrusted sdist).
  (cd "$tmp/src" && dpkg-source --no-check -x "$apt/libarchive_$archive_v.dsc" libarchive >/dev/null)
  cmake -S "$tmp/src/libarchive" -B "$tmp/src/libarchive-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS=-O2 -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    "${cross[@]}" \
    -DCMAKE_C_COMPILER="$bin/cc" -DCMAKE_AR="$bin/ar" -DCMAKE_RANLIB="$bin/ranlib" \
    -DCMAKE_FIND_ROOT_PATH="$tmp" -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
    -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY \
    -DENABLE_OPENSSL=OFF -DENABLE_MBEDTLS=OFF -DENABLE_NETTLE=OFF -DENABLE_CNG=OFF -DENABLE_LIBB2=OFF \
    -DENABLE_LZ4=OFF -DENABLE_LZO=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF -DENABLE_BZip2=OFF \
    -DENABLE_LIBXML2=OFF -DENABLE_EXPAT=OFF -DENABLE_PCREPOSIX=OFF -DENABLE_PCRE2POSIX=OFF -DENABLE_ICONV=OFF \
    -DENABLE_ACL=OFF -DENABLE_XATTR=OFF -DENABLE_TAR=OFF -DENABLE_CPIO=OFF -DENABLE_CAT=OFF \
    -DENABLE_TEST=OFF -DENABLE_INSTALL=OFF >/dev/null
  cmake --build "$tmp/src/libarchive-build" --target archive_static >/dev/null
  cp "$tmp/src/libarchive-build/libarchive/libarchive.a" "$tmp/lib/"
  cp "$tmp/src/libarchive/libarchive/archive.h" "$tmp/src/libarchive/libarchive/archive_entry.h" "$tmp/include/"
  rm -rf "$tmp/src" "$tmp/bin" "$tmp/share"
  touch "$tmp/.complete"
  rm -rf "$prefix" && mv "$tmp" "$prefix"
fi
echo "$bin"
echo "$prefix"
