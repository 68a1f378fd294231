# Generated headers shared by the main build and the fuzz build (tests/fuzz/CMakeLists.txt):
# opforge/version.h, and the fallback tables (docs/reference.md §1, §2) compiled in from toolchains/*.toml,
# their one source: each becomes a raw string literal that compiler/ and devices/ parse with
# TOML++ on first use.
function(opforge_generate_sources root out_dir)
  if(NOT OPFORGE_VERSION)
    set(OPFORGE_VERSION "${PROJECT_VERSION}")
  endif()
  if(NOT OPFORGE_COMMIT_STRING)
    set(OPFORGE_COMMIT_STRING "unknown")
  endif()
  configure_file(${root}/cmake/version.h.in ${out_dir}/opforge/version.h @ONLY)
  foreach(table cuda-host-compilers cuda-gpu-targets manylinux-policy cpython-symbols)
    file(READ ${root}/toolchains/${table}.toml table_text)
    file(CONFIGURE OUTPUT ${out_dir}/opforge/${table}.toml.inc
         CONTENT "R\"OPFORGE_TOML(@table_text@)OPFORGE_TOML\"\n" @ONLY)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${root}/toolchains/${table}.toml)
  endforeach()
endfunction()
