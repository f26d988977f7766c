# Plugin integration tests: real `collectd -f` with the built memdiag.so,
# real TLS certificates from conf/memdiag-certs, a small C test worker.
if(TARGET memdiag)
  add_executable(md-test-worker ${CMAKE_CURRENT_LIST_DIR}/plugin/test_worker.c)
  target_link_libraries(md-test-worker PRIVATE mdproto)
  set_target_properties(md-test-worker PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/plugin)

  file(GLOB _mdp_plugin_tests ${CMAKE_CURRENT_LIST_DIR}/plugin/test_*.sh)
  foreach(_t ${_mdp_plugin_tests})
    get_filename_component(_name ${_t} NAME_WE)
    string(REGEX REPLACE "^test_" "plugin_" _name ${_name})
    add_test(NAME ${_name} COMMAND sh ${_t})
    set_tests_properties(${_name} PROPERTIES
      ENVIRONMENT "MDP_PLUGIN=$<TARGET_FILE:memdiag>;MDP_TEST_WORKER=$<TARGET_FILE:md-test-worker>;MDP_CERTS=${PROJECT_SOURCE_DIR}/conf/memdiag-certs;MDP_COLLECTD=${COLLECTD_EXECUTABLE};MDP_COLLECTD_PLUGINS=${COLLECTD_PLUGIN_DIR};MDP_TYPES_DB=${COLLECTD_TYPES_DB};MDP_RUBY=${RUBY_EXECUTABLE};MDP_BUILD=${PROJECT_BINARY_DIR};MDP_SOURCE=${PROJECT_SOURCE_DIR}"
      TIMEOUT 300)
  endforeach()

  # The benchmark with tiny sizes: it runs, it prints its table.
  add_test(NAME bench.sample_cost.smoke
    COMMAND env BUILD=${PROJECT_BINARY_DIR} WORKERS=5 WINDOW=2 INTERVAL=1
            sh ${PROJECT_SOURCE_DIR}/tests/bench/sample-cost)
  set_tests_properties(bench.sample_cost.smoke PROPERTIES TIMEOUT 300
    PASS_REGULAR_EXPRESSION "pss +[0-9.]+ +[0-9.]+")
endif()
