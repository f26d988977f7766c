# End-to-end tests of issue 4 (real `collectd -f` with the built plugin, real
# Ruby workers loaded with the hook, real TLS certificates made at test time)
# and memdiagctl's command line. Each test file is its own ctest.
set(_md_e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e)

# A peer that sends what the real hook never would (a Hello with another PID,
# a Hello under an operator certificate), to show the plugin refuses it.
add_executable(e2e-rawclient ${_md_e2e}/rawclient.c)
target_link_libraries(e2e-rawclient PRIVATE mdproto)

# memdiagctl's JSON writer on its own: escaping and arbitrary bytes.
add_executable(e2e_memdiagctl_json ${_md_e2e}/json_test.c ${PROJECT_SOURCE_DIR}/plugin/ctl/json.c)
target_include_directories(e2e_memdiagctl_json PRIVATE ${PROJECT_SOURCE_DIR}/plugin/ctl)
target_link_libraries(e2e_memdiagctl_json PRIVATE PkgConfig::CMOCKA)
add_test(NAME e2e_memdiagctl_json COMMAND e2e_memdiagctl_json)

if(TARGET memdiagctl)
  add_test(NAME e2e_memdiagctl_usage COMMAND ${RUBY_EXECUTABLE} ${_md_e2e}/usage_test.rb)
  set_tests_properties(e2e_memdiagctl_usage PROPERTIES ENVIRONMENT
    "MEMDIAG_E2E_CTL=$<TARGET_FILE:memdiagctl>;MEMDIAG_E2E_CERTS_TOOL=${MEMDIAG_CONF_DIR}/memdiag-certs")
endif()

# The collectd tests need the plugin and the Ruby hook from the same build.
if(TARGET memdiagctl AND TARGET memdiag AND EXISTS ${PROJECT_SOURCE_DIR}/worker-hook/hook.cmake)
  set(_md_e2e_env
    "MEMDIAG_E2E_CTL=$<TARGET_FILE:memdiagctl>"
    "MEMDIAG_E2E_PLUGIN=$<TARGET_FILE:memdiag>"
    "MEMDIAG_E2E_RAWCLIENT=$<TARGET_FILE:e2e-rawclient>"
    "MEMDIAG_E2E_HOOK_LIB=${PROJECT_BINARY_DIR}/worker-hook/ruby/lib"
    "MEMDIAG_E2E_CERTS_TOOL=${MEMDIAG_CONF_DIR}/memdiag-certs"
    "MEMDIAG_E2E_COLLECTD=${COLLECTD_EXECUTABLE}"
    "MEMDIAG_E2E_COLLECTD_PLUGIN_DIR=${COLLECTD_PLUGIN_DIR}"
    "MEMDIAG_E2E_TYPES_DB=${COLLECTD_TYPES_DB}"
    "MEMDIAG_E2E_RUBY=${RUBY_EXECUTABLE}")
  foreach(_t workers verbs lifecycle refusals)
    add_test(NAME e2e_${_t} COMMAND ${RUBY_EXECUTABLE} ${_md_e2e}/${_t}_test.rb)
    set_tests_properties(e2e_${_t} PROPERTIES ENVIRONMENT "${_md_e2e_env}" TIMEOUT 900)
  endforeach()
endif()
