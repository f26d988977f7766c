# Worker operations (worker-hook/ruby/lib/memdiag/hook/operations.rb), tested in
# real Ruby with minitest; each file is its own process.
file(GLOB _md_ruby_ops_tests ${PROJECT_SOURCE_DIR}/tests/ruby/ops/*_test.rb)
foreach(_f ${_md_ruby_ops_tests})
  get_filename_component(_n ${_f} NAME_WE)
  add_test(NAME ruby_ops.${_n}
           COMMAND ${RUBY_EXECUTABLE} -I ${PROJECT_SOURCE_DIR}/worker-hook/ruby/lib ${_f}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()

# The dump-pause benchmark is run by hand at full size; this tiny run only keeps
# it working (its figures are not asserted: machines are noisy).
add_test(NAME ruby_ops.bench_smoke COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/dump-pause)
set_tests_properties(ruby_ops.bench_smoke PROPERTIES
  ENVIRONMENT "MEMDIAG_BENCH_MB=20;MEMDIAG_BENCH_BASELINE_S=0.5;MEMDIAG_BENCH_REPEAT=1"
  PASS_REGULAR_EXPRESSION "idle: fork pause <= 50 ms")
