# Worker hook integration tests: real Ruby, real TLS, a small C server that
# plays the plugin's side (hook/test_server.c), and a worker on the C core
# alone (hook/core_worker.c) to exercise fork handling without Ruby.
add_executable(mdh-test-server hook/test_server.c hook/json_out.c)
target_link_libraries(mdh-test-server PRIVATE mdproto)

add_executable(mdh-core-worker hook/core_worker.c)
target_link_libraries(mdh-core-worker PRIVATE memdiag_hook)

set(MDH_TEST_ENV
  "MEMDIAG_TEST_SERVER=$<TARGET_FILE:mdh-test-server>"
  "MEMDIAG_CORE_WORKER=$<TARGET_FILE:mdh-core-worker>"
  "MEMDIAG_HOOK_LIB=${MEMDIAG_HOOK_RUBY_LIB}"
  "MEMDIAG_HOOK_SOURCE_LIB=${PROJECT_SOURCE_DIR}/worker-hook/ruby/lib"
  "MEMDIAG_CERTS_TOOL=${MEMDIAG_CONF_DIR}/memdiag-certs")

# Each file is its own ctest.
file(GLOB _mdh_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hook/test_*.rb)
foreach(_t ${_mdh_tests})
  get_filename_component(_n ${_t} NAME_WE)
  add_test(NAME hook_${_n} COMMAND ${RUBY_EXECUTABLE} ${_t})
  set_tests_properties(hook_${_n} PROPERTIES ENVIRONMENT "${MDH_TEST_ENV}" TIMEOUT 600)
endforeach()
