# Sanitizer and fuzzing builds (tests/fuzz, make check-asan, make check-tsan,
# make fuzz). Each lives in its own build directory; the default build uses
# neither.
#
#   -DMEMDIAG_SANITIZE=address,undefined   ASan + UBSan (build-asan)
#   -DMEMDIAG_SANITIZE=thread              TSan (build-tsan)
#   -DMEMDIAG_FUZZ=ON                      clang only: every object carries
#                                          libFuzzer's coverage, and the fuzz
#                                          targets link libFuzzer's main
#                                          instead of tests/fuzz/driver.c
set(MEMDIAG_SANITIZE "" CACHE STRING "-fsanitize= list for every target (address,undefined or thread)")
option(MEMDIAG_FUZZ "build tests/fuzz targets for libFuzzer (clang)" OFF)

if(MEMDIAG_SANITIZE)
  # -fno-sanitize-recover: a UBSan finding fails the test that hit it
  # instead of scrolling past in its output.
  add_compile_options(-fsanitize=${MEMDIAG_SANITIZE} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${MEMDIAG_SANITIZE})
  if(MEMDIAG_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

if(MEMDIAG_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMDIAG_FUZZ needs clang (cmake -DCMAKE_C_COMPILER=clang)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
