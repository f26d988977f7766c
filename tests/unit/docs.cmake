add_test(NAME docs.readme COMMAND ${RUBY_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/docs/readme_test.rb)
# The example configuration must be one collectd accepts with the built plugin.
add_test(NAME docs.example_config
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/example_config_test.sh
          ${COLLECTD_EXECUTABLE} $<TARGET_FILE:memdiag> ${PROJECT_SOURCE_DIR}/conf/memdiag.conf
          ${COLLECTD_PLUGIN_DIR} ${COLLECTD_TYPES_DB})
