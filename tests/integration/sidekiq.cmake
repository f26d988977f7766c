# A real Sidekiq (Debian's ruby-sidekiq) hooked only through RUBYOPT and
# diagnosed through a private collectd with the memdiag plugin and memdiagctl.
# It runs on the e2e harness (e2e/harness.rb), so it takes the same settings,
# plus the programs below; a missing sidekiq or redis-server makes the test
# skip and say which ('make deps' installs them).
find_program(MEMDIAG_SIDEKIQ_PROGRAM sidekiq)
find_program(MEMDIAG_REDIS_SERVER_PROGRAM redis-server PATHS /usr/bin /usr/sbin)
find_program(MEMDIAG_REDIS_CLI_PROGRAM redis-cli)
find_program(MEMDIAG_HEAPY_PROGRAM heapy)

if(TARGET memdiagctl AND TARGET memdiag AND EXISTS ${PROJECT_SOURCE_DIR}/worker-hook/hook.cmake)
  set(_md_sidekiq_env
    "MEMDIAG_E2E_CTL=$<TARGET_FILE:memdiagctl>"
    "MEMDIAG_E2E_PLUGIN=$<TARGET_FILE:memdiag>"
    "MEMDIAG_E2E_HOOK_LIB=${PROJECT_BINARY_DIR}/worker-hook/ruby/lib"
    "MEMDIAG_E2E_CERTS_TOOL=${MEMDIAG_CONF_DIR}/memdiag-certs"
    "MEMDIAG_E2E_COLLECTD=${COLLECTD_EXECUTABLE}"
    "MEMDIAG_E2E_COLLECTD_PLUGIN_DIR=${COLLECTD_PLUGIN_DIR}"
    "MEMDIAG_E2E_TYPES_DB=${COLLECTD_TYPES_DB}"
    "MEMDIAG_E2E_RUBY=${RUBY_EXECUTABLE}")
  # A program not found is passed as empty, not as "...-NOTFOUND".
  foreach(_p SIDEKIQ REDIS_SERVER REDIS_CLI HEAPY)
    if(MEMDIAG_${_p}_PROGRAM)
      list(APPEND _md_sidekiq_env "MEMDIAG_${_p}=${MEMDIAG_${_p}_PROGRAM}")
    else()
      list(APPEND _md_sidekiq_env "MEMDIAG_${_p}=")
    endif()
  endforeach()
  add_test(NAME sidekiq_worker COMMAND ${RUBY_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sidekiq/worker_test.rb)
  set_tests_properties(sidekiq_worker PROPERTIES ENVIRONMENT "${_md_sidekiq_env}" TIMEOUT 900
                                                  SKIP_RETURN_CODE 77)
endif()
