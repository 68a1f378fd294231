# The platform wheel's toolchain (scripts/dist): zig's clang with zig's glibc 2.28 stubs and a
# static libc++, so that the binary needs no GLIBC_ symbol above 2.28 and no libstdc++ at all.
# OPFORGE_ZIG_BIN names the folder with the cc, c++, ar and ranlib wrappers scripts/dist writes
# (they carry zig's -target); OPFORGE_ZIG_PROCESSOR the machine they target, x86_64 or aarch64.
set(CMAKE_SYSTEM_NAME Linux)
if(NOT OPFORGE_ZIG_BIN)
  set(OPFORGE_ZIG_BIN "$ENV{OPFORGE_ZIG_BIN}")
endif()
if(NOT OPFORGE_ZIG_PROCESSOR)
  set(OPFORGE_ZIG_PROCESSOR "$ENV{OPFORGE_ZIG_PROCESSOR}")
endif()
if(NOT OPFORGE_ZIG_PROCESSOR)
  set(OPFORGE_ZIG_PROCESSOR x86_64)
endif()
set(CMAKE_SYSTEM_PROCESSOR ${OPFORGE_ZIG_PROCESSOR})
set(CMAKE_C_COMPILER ${OPFORGE_ZIG_BIN}/cc)
set(CMAKE_CXX_COMPILER ${OPFORGE_ZIG_BIN}/c++)
set(CMAKE_AR ${OPFORGE_ZIG_BIN}/ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${OPFORGE_ZIG_BIN}/ranlib CACHE FILEPATH "")
# Only the static prefix is searched for libraries and headers: the host's /usr/include carries
# glibc 2.36 headers, which must not reach these objects.
set(CMAKE_FIND_ROOT_PATH ${OPFORGE_STATIC_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# One optimisation level everywhere, the compiler checks included (the wrappers pass -O2 first):
# zig builds its libc++ and glibc stubs once per level, and that takes minutes.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "")
