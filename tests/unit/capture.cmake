# Capture plans (cmocka), each test its own process: the plan state machine,
# the admission policy, the config keys, folders/manifest/pruning.
foreach(_t test_plan test_plan_sched test_plan_config test_plan_request test_capture_fs)
  add_executable(${_t} ${CMAKE_CURRENT_LIST_DIR}/${_t}.c)
  target_link_libraries(${_t} PRIVATE mdp_capture_core PkgConfig::CMOCKA)
  target_compile_definitions(${_t} PRIVATE MEMDIAG_RUBY="${RUBY_EXECUTABLE}")
  add_test(NAME capture.${_t} COMMAND ${_t})
endforeach()
