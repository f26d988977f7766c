add_executable(wire_rtt_bench ${CMAKE_CURRENT_LIST_DIR}/wire_rtt.c)
target_link_libraries(wire_rtt_bench PRIVATE mdproto)
# Smoke run with a few iterations so the benchmark cannot rot unnoticed.
add_test(NAME bench.wire_rtt.smoke
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/wire-rtt --iterations 200 --handshakes 5)
set_tests_properties(bench.wire_rtt.smoke PROPERTIES
  ENVIRONMENT "BUILD=${PROJECT_BINARY_DIR}" PASS_REGULAR_EXPRESSION "ratio tls/raw")
