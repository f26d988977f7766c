# `make demo` must keep working: run it as a user would and check it reached
# a completed capture whose dumps parse.
add_test(NAME demo.run COMMAND ${PROJECT_SOURCE_DIR}/conf/demo/run-demo ${PROJECT_BINARY_DIR})
set_tests_properties(demo.run PROPERTIES
  PASS_REGULAR_EXPRESSION "manifest: complete=true"
  FAIL_REGULAR_EXPRESSION "demo: no capture|did not start|[1-9][0-9]* failed"
  TIMEOUT 300)
