# Capture plans end to end: real `collectd -f` with the built plugin, real
# leaking Ruby workers hooked through `-r memdiag/hook/auto`, real TLS.
# Reuses the e2e harness (tests/integration/e2e/harness.rb) and its settings.
set(_md_cap ${CMAKE_CURRENT_SOURCE_DIR}/capture)
if(TARGET memdiagctl AND TARGET memdiag AND TARGET mdp_capture
   AND EXISTS ${PROJECT_SOURCE_DIR}/worker-hook/hook.cmake)
  set(_md_cap_env
    "MEMDIAG_E2E_CTL=$<TARGET_FILE:memdiagctl>"
    "MEMDIAG_E2E_PLUGIN=$<TARGET_FILE:memdiag>"
    "MEMDIAG_E2E_HOOK_LIB=${PROJECT_BINARY_DIR}/worker-hook/ruby/lib"
    "MEMDIAG_E2E_CERTS_TOOL=${MEMDIAG_CONF_DIR}/memdiag-certs"
    "MEMDIAG_E2E_COLLECTD=${COLLECTD_EXECUTABLE}"
    "MEMDIAG_E2E_COLLECTD_PLUGIN_DIR=${COLLECTD_PLUGIN_DIR}"
    "MEMDIAG_E2E_TYPES_DB=${COLLECTD_TYPES_DB}"
    "MEMDIAG_E2E_RUBY=${RUBY_EXECUTABLE}")
  foreach(_t auto restart restart_inflight killed keepfree manual trace concurrency maxuse nonroot symlink shutdown)
    add_test(NAME capture_${_t} COMMAND ${RUBY_EXECUTABLE} ${_md_cap}/${_t}_test.rb)
    set_tests_properties(capture_${_t} PROPERTIES ENVIRONMENT "${_md_cap_env}" TIMEOUT 900)
  endforeach()
endif()
